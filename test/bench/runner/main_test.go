package main

import (
	"strings"
	"testing"
)

func TestSameObjects(t *testing.T) {
	a := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  n: \"1\"\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: b\n"
	reordered := "---\n# Source: chart/templates/x.yaml\napiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n---\n---\nkind: ConfigMap\napiVersion: v1\ndata: {n: '1'}\nmetadata:\n  name: a\n"
	if err := sameObjects([]byte(a), []byte(reordered)); err != nil {
		t.Errorf("same objects, other order and style: %v", err)
	}
	for _, bad := range []string{
		strings.Replace(a, `n: "1"`, `n: 1`, 1), // a number is not the string
		strings.Replace(a, "name: b", "name: c", 1),
		a + "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: b\n", // a duplicate
	} {
		if err := sameObjects([]byte(a), []byte(bad)); err == nil {
			t.Errorf("sameObjects accepted\n%s", bad)
		}
	}
}

func TestQuantile(t *testing.T) {
	s := []float64{1, 2, 3, 4, 5}
	for q, want := range map[float64]float64{0: 1, .5: 3, 1: 5, .1: 1.4, .9: 4.6} {
		if got := quantile(s, q); got < want-1e-9 || got > want+1e-9 {
			t.Errorf("quantile(%v) = %v, want %v", q, got, want)
		}
	}
}
