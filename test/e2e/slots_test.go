//go:build e2e

package e2e

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// TestSlotsOrder: waiters that arrive together are served heaviest first, ties by name, and
// as many at once as there are slots, never more. No hub.
func TestSlotsOrder(t *testing.T) {
	weights := map[string]int{"long": 600, "mid": 300, "short-a": 60, "short-b": 60, "unknown": 0}
	for _, n := range []int{1, 2, 3} {
		s := newSlots(n, 50*time.Millisecond, func(name string) int { return weights[name] })
		var (
			mu            sync.Mutex
			order         []string
			running, peak int
			released      bool
			first         int // started before any slot was given back
			wg            sync.WaitGroup
		)
		for _, name := range []string{"unknown", "short-b", "mid", "short-a", "long"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.acquire(name)
				mu.Lock()
				order = append(order, name)
				if !released {
					first++
				}
				running++
				peak = max(peak, running)
				mu.Unlock()
				time.Sleep(100 * time.Millisecond)
				mu.Lock()
				running--
				released = true
				mu.Unlock()
				s.release()
			}()
		}
		wg.Wait()
		if peak > n || first != n {
			t.Errorf("%d slots: %d started at once, at most %d ran at once", n, first, peak)
		}
		if n == 1 {
			if want := []string{"long", "mid", "short-a", "short-b", "unknown"}; !slices.Equal(order, want) {
				t.Errorf("1 slot: served %v, want %v", order, want)
			}
		}
	}
}
