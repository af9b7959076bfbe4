//go:build !cmponly

package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestGeneratorBadFlags(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(short, []byte("abc"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		msg  string
	}{
		{[]string{"generator"}, `required flag(s) "repo" not set`},
		{[]string{"generator", "--repo", "examples/gitops", "--no-hub"}, "--app-repo-url is required when --repo"},
		{[]string{"generator", "--repo", "git@github.com:org/gitops.git", "--no-hub"}, "--git-known-hosts-file"},
		{[]string{"generator", "--repo", "https://git.example.com/x.git", "--no-hub", "--token-file", filepath.Join(dir, "none")}, "token file"},
		{[]string{"generator", "--repo", "https://git.example.com/x.git", "--no-hub", "--token-file", short}, "at least 16 characters"},
		{[]string{"generator", "--repo", "https://git.example.com/x.git", "--log-level", "loud"}, "--log-level"},
	}
	for _, tt := range tests {
		code, out, errs := run(tt.args...)
		if code == 0 || out != "" || !strings.Contains(errs, tt.msg) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want non-zero and %q", tt.args, code, out, errs, tt.msg)
		}
	}
}

// TestGeneratorStopsOnSIGTERM runs the generator as its own process and
// checks it exits within ShutdownLimit of SIGTERM.
func TestGeneratorStopsOnSIGTERM(t *testing.T) {
	if os.Getenv("SPOKEFORGE_TEST_GENERATOR") != "" {
		os.Exit(Main(strings.Fields(os.Getenv("SPOKEFORGE_TEST_GENERATOR")), os.Stdout, os.Stderr))
	}
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("0123456789abcdef0123"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestGeneratorStopsOnSIGTERM$")
	cmd.Env = append(os.Environ(), "SPOKEFORGE_TEST_GENERATOR=generator --repo examples/gitops --app-repo-url https://git.example.com/g.git --no-hub --listen 127.0.0.1:0 --token-file "+token)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() && !strings.Contains(sc.Text(), "generator listening") {
	}
	go func() {
		for sc.Scan() {
		}
	}()
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if d := time.Since(start); d > ShutdownLimit {
		t.Fatalf("stopped %s after SIGTERM; the limit is %s", d, ShutdownLimit)
	}
}
