//go:build e2e

package e2e

import (
	"os"
	"strconv"
	"sync"
	"testing"
	"time"
)

// expectedSeconds is each parallel test's own wall time once it holds a hub slot (v3.6.2 beside
// v3.4.7's set on 2 cores; each test logs how long it waited for its slot). Only the order
// matters: go test starts waiting parallel tests in no set order, and a long test that happens to
// start last sets the suite's wall time, so the longest go first. TestGenerator waits about
// 3 minutes on the ApplicationSet controller's requeue with the CPU idle, so it goes in the first
// wave, where the others use that CPU. A test missing here goes last.
var expectedSeconds = map[string]int{
	"TestRemoveCluster":         620,
	"TestSpokeforge":            480,
	"TestGenerator":             400,
	"TestHostileRecord":         350,
	"TestUIContracts":           250,
	"TestAddCluster":            220,
	"TestContractsBreakForReal": 200,
	"TestOnboarding":            180,
	"TestFleetCommit":           150,
	"TestReissueCertificate":    140,
	"TestSecretsSync":           130,
	"TestSmoke":                 75,
}

// hubSlots holds E2E_PARALLEL slots (default 3): how many tests run a hub at once. The
// Makefile gives go test a -parallel above the number of tests, so that every parallel test
// reaches hubSlots and the order is decided here.
var hubSlots = newSlots(envInt("E2E_PARALLEL", 3), time.Second, func(name string) int { return expectedSeconds[name] })

// parallel marks t parallel, then waits for a hub slot, longest expected test first; the slot
// is given back when t and its cleanups (the hub's teardown among them) are done.
func parallel(t *testing.T) {
	t.Helper()
	t.Parallel()
	waited := time.Now()
	hubSlots.acquire(t.Name())
	t.Logf("hub slot after %s waiting", time.Since(waited).Round(time.Second))
	t.Cleanup(hubSlots.release)
}

// slots is a counting semaphore that serves the waiter of the largest weight first. The first
// grant waits settle after the first arrival, so that every test go test releases at once has
// arrived before the order is decided.
type slots struct {
	mu      sync.Mutex
	cond    *sync.Cond
	free    int
	settle  time.Duration
	weight  func(name string) int
	settled bool
	started bool
	waiting map[string]bool
}

func newSlots(n int, settle time.Duration, weight func(name string) int) *slots {
	s := &slots{free: max(n, 1), settle: settle, weight: weight, waiting: map[string]bool{}}
	s.cond = sync.NewCond(&s.mu)
	return s
}

func (s *slots) acquire(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waiting[name] = true
	if !s.started {
		s.started = true
		time.AfterFunc(s.settle, func() {
			s.mu.Lock()
			s.settled = true
			s.cond.Broadcast()
			s.mu.Unlock()
		})
	}
	for !s.settled || s.free == 0 || s.next() != name {
		s.cond.Wait()
	}
	delete(s.waiting, name)
	s.free--
	// Another waiter may now be next, and a slot may still be free.
	s.cond.Broadcast()
}

func (s *slots) release() {
	s.mu.Lock()
	s.free++
	s.cond.Broadcast()
	s.mu.Unlock()
}

// next is the waiter to serve: the heaviest, then the first by name.
func (s *slots) next() string {
	best := ""
	for name := range s.waiting {
		if best == "" || s.weight(name) > s.weight(best) || s.weight(name) == s.weight(best) && name < best {
			best = name
		}
	}
	return best
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}
