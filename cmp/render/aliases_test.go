package render

import (
	"errors"
	"strings"
	"testing"
)

func TestAliasGrowth(t *testing.T) {
	laughs := `a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]` + "\n"
	for i, prev := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		name := string(rune('b' + i))
		laughs += name + ": &" + name + " [" + strings.Repeat("*"+prev+",", 8) + "*" + prev + "]\n"
	}
	tests := []struct {
		name, text string
		min, max   int64
		err        error
	}{
		{"no alias", "a: b\nc: [d, e]\n", 0, 0, nil},
		{"one small alias", "a: &x {k: value}\nb: *x\n", 1, 20, nil},
		{"merge key", "base: &b {k: v, l: w}\nother:\n  <<: *b\n", 1, 20, nil},
		{"billion laughs", laughs, 1 << 30, growthCap, nil},
		{"second chunk", "a: b\n---\n" + laughs, 1 << 30, growthCap, nil},
		{"cycle", "a: &a [*a]\n", 0, 0, errAliasCycle},
		{"not YAML", "*a\n: [\n", 0, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := aliasGrowth(tt.text)
			if !errors.Is(err, tt.err) {
				t.Fatalf("err %v, want %v", err, tt.err)
			}
			if g < tt.min || g > tt.max {
				t.Fatalf("growth %d, want %d..%d", g, tt.min, tt.max)
			}
		})
	}
}
