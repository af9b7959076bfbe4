package cmp

import (
	"fmt"
	"time"
)

// RenderTimeout bounds one render: render's --timeout default, and each
// render validate runs (every cluster, spoke and hub mode), so validate
// refuses what render would stop. Argo CD's own exec timeout
// (ARGOCD_EXEC_TIMEOUT) is 90 s.
const RenderTimeout = 30 * time.Second

// ValidateTimeout bounds a whole validate run by default.
const ValidateTimeout = 10 * time.Minute

// TimeoutError is work stopped at its time bound.
type TimeoutError struct {
	What  string
	Limit time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("%s took longer than %s and was stopped", e.What, e.Limit)
}

// Within runs fn and gives up after d with a *TimeoutError. Go cannot stop
// fn: it runs on until it returns, its result dropped, so the caller exits
// (render) or stops starting more work (validate).
func Within[T any](d time.Duration, what string, fn func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := fn()
		done <- result{v, err}
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case r := <-done:
		return r.v, r.err
	case <-t.C:
		var zero T
		return zero, &TimeoutError{What: what, Limit: d}
	}
}
