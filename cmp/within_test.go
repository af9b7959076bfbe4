package cmp

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestWithin: a result within the bound is returned; past it, a
// TimeoutError naming the work and the bound.
func TestWithin(t *testing.T) {
	if v, err := Within(time.Second, "quick", func() (int, error) { return 7, nil }); v != 7 || err != nil {
		t.Fatalf("got %d, %v", v, err)
	}
	block := make(chan struct{})
	defer close(block)
	_, err := Within(10*time.Millisecond, "the render", func() (int, error) { <-block; return 0, nil })
	var te *TimeoutError
	if !errors.As(err, &te) || err.Error() != "the render took longer than 10ms and was stopped" {
		t.Fatalf("got %v", err)
	}
}

// TestValidateRunBound: once the run's bound has passed, validate renders
// no more clusters and says so, naming the first cluster left.
func TestValidateRunBound(t *testing.T) {
	_, errs := ValidateWithin(exampleRepo, 0)
	if len(errs) != 1 || !strings.Contains(errs.Error(), "cluster.yaml: not rendered: validate stopped after 0s (--timeout) with 3 cluster(s) left") {
		t.Fatalf("got %v", errs)
	}
}
