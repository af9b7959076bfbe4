//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
)

// TestMain kills every child process (process groups) and removes the work folders after the
// tests, and also on SIGINT/SIGTERM (Ctrl-C).
func TestMain(m *testing.M) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		s := <-sig
		fmt.Fprintf(os.Stderr, "e2e: %v: stopping every hub process\n", s)
		KillAll()
		os.Exit(130)
	}()
	code := m.Run()
	KillAll()
	os.Exit(code)
}
