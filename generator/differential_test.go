package generator

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spokeforge/spokeforge/internal/repo"
)

// TestGitLoaderMatchesCheckout: the same commit through validate's loader
// (repo.ReadFiles on the checkout) and the generator's (the git trees):
// each accepts what the other accepts, reads the same bytes, and refuses
// what the other refuses naming the same file. Symlink chains, links
// through directories and out of the record's directory and back.
func TestGitLoaderMatchesCheckout(t *testing.T) {
	const org = "orgs/acme.yaml"
	for _, tc := range []struct {
		name  string
		files map[string]string // content, or "-> target" for a symlink
	}{
		{"link to a file", map[string]string{org: "-> real.yaml.txt", "orgs/real.yaml.txt": "ORG"}},
		{"chain of links", map[string]string{org: "-> a", "orgs/a": "-> b", "orgs/b": "-> real", "orgs/real": "ORG"}},
		{"through a sub-directory", map[string]string{org: "-> sub/deeper/real", "orgs/sub/deeper/real": "ORG"}},
		{"chain through sub-directories", map[string]string{org: "-> sub/a", "orgs/sub/a": "-> ../other/b", "orgs/other/b": "-> ./c/../real", "orgs/other/c/x": "x", "orgs/other/real": "ORG"}},
		{"through a directory link", map[string]string{org: "-> d/real", "orgs/d": "-> sub", "orgs/sub/real": "ORG"}},
		{"out of the directory and back", map[string]string{org: "-> ../store/a", "store/a": "-> ../orgs/sub/real", "orgs/sub/real": "ORG"}},
		{"dot-dot after a directory link", map[string]string{org: "-> d/../real", "orgs/d": "-> sub/inner", "orgs/sub/inner/x": "x", "orgs/sub/real": "ORG", "orgs/real": "WRONG"}},
		{"out of the directory", map[string]string{org: "-> ../store/real", "store/real": "ORG"}},
		{"chain out of the directory", map[string]string{org: "-> a", "orgs/a": "-> ../store/real", "store/real": "ORG"}},
		{"loop", map[string]string{org: "-> a", "orgs/a": "-> b", "orgs/b": "-> a"}},
		{"self", map[string]string{org: "-> acme.yaml"}},
		{"missing", map[string]string{org: "-> nothing"}},
		{"chain to missing", map[string]string{org: "-> a", "orgs/a": "-> nothing"}},
		{"to a directory", map[string]string{org: "-> sub", "orgs/sub/x": "x"}},
		{"through a file", map[string]string{org: "-> f/real", "orgs/f": "x"}},
		{"above the repo", map[string]string{org: "-> ../../x"}},
		{"absolute", map[string]string{org: "-> /etc/hostname"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGitRepo(t)
			content, err := os.ReadFile(filepath.Join(g.dir, org))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(filepath.Join(g.dir, org)); err != nil {
				t.Fatal(err)
			}
			for p, c := range tc.files {
				full := filepath.Join(g.dir, filepath.FromSlash(p))
				if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
					t.Fatal(err)
				}
				if target, ok := strings.CutPrefix(c, "-> "); ok {
					err = os.Symlink(target, full)
				} else {
					err = os.WriteFile(full, []byte(strings.ReplaceAll(c, "ORG", string(content))), 0o644)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			g.commit(t, tc.name, nil)
			files, refused := repo.ReadFiles(g.dir)
			src, err := NewGitSource(GitConfig{Repo: g.dir, App: testSource})
			if err != nil {
				t.Fatal(err)
			}
			st, err := src.Refresh(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("checkout: %v; git: %q", refused, st.HeadErrors)
			if (len(refused) == 0) != (st.HeadError == "") {
				t.Fatalf("validate's loader refused %v, the generator %q", refused, st.HeadErrors)
			}
			if len(refused) > 0 {
				if !strings.Contains(st.HeadError, refused[0].File+":") {
					t.Fatalf("the generator refused %q, validate's loader %v", st.HeadError, refused)
				}
				return
			}
			snap := mustSnapshotOf(t, src)
			if _, o, _ := snap.Counts(); o != 2 || string(files[org]) != string(content) {
				t.Fatalf("%d orgs in the snapshot; the checkout read %q", o, files[org])
			}
		})
	}
}
