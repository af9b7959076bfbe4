//go:build !cmponly

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		{[]string{"generator", "--repo", "../../examples/gitops", "--no-hub"}, "--app-repo-url is required when --repo"},
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
