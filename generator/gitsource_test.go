package generator

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// gitRepo is an on-disk repository holding the example records.
type gitRepo struct {
	dir string
	r   *git.Repository
}

func newGitRepo(t testing.TB) *gitRepo {
	t.Helper()
	dir := t.TempDir()
	r, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	g := &gitRepo{dir: dir, r: r}
	files := map[string]string{}
	for p, f := range exampleFS(t, nil) {
		files[p] = string(f.Data)
	}
	g.commit(t, "initial", files)
	return g
}

func (g *gitRepo) commit(t testing.TB, msg string, files map[string]string) string {
	t.Helper()
	wt, err := g.r.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	for p, c := range files {
		full := filepath.Join(g.dir, p)
		if c == "" {
			_ = os.Remove(full)
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	h, err := wt.Commit(msg, &git.CommitOptions{Author: &object.Signature{Name: "t", Email: "t@example.invalid", When: time.Unix(1700000000, 0)}})
	if err != nil {
		t.Fatal(err)
	}
	return h.String()
}

const badOrg = "apiVersion: spokeforge.io/v1alpha1\nkind: Organization\nmetadata: {name: globex}\nspec: {clusterAllowlist: [gpu-west-2], colour: red}\n"

func TestGitSourceKeepsLastGoodSnapshot(t *testing.T) {
	g := newGitRepo(t)
	for _, mode := range []struct{ name, repo string }{{"work tree", g.dir}, {"file URL", "file://" + g.dir}} {
		t.Run(mode.name, func(t *testing.T) {
			src, err := NewGitSource(GitConfig{Repo: mode.repo, Revision: "HEAD", App: testSource})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := src.Snapshot(); err == nil {
				t.Fatal("a snapshot before any fetch")
			}
			head, _ := g.r.Head()
			st, err := src.Refresh(context.Background())
			if err != nil || st.Commit != head.Hash().String() {
				t.Fatalf("first refresh: %+v %v", st, err)
			}
			good := st.Commit
			bad := g.commit(t, "break globex", map[string]string{"orgs/globex.yaml": badOrg})
			st, err = src.Refresh(context.Background())
			if err != nil || st.Commit != good || st.Head != bad || !strings.Contains(st.HeadError, "orgs/globex.yaml") || !strings.Contains(st.HeadError, "colour") {
				t.Fatalf("invalid head: %+v %v", st, err)
			}
			if s, err := src.Snapshot(); err != nil || s.Commit != good {
				t.Fatalf("snapshot after an invalid head: %v %v", s, err)
			}
			fixed := g.commit(t, "fix globex", map[string]string{"orgs/globex.yaml": "apiVersion: spokeforge.io/v1alpha1\nkind: Organization\nmetadata: {name: globex}\nspec: {clusterAllowlist: []}\n"})
			st, err = src.Refresh(context.Background())
			if err != nil || st.Commit != fixed || st.HeadError != "" {
				t.Fatalf("fixed head: %+v %v", st, err)
			}
			s, _ := src.Snapshot()
			if s.allow["globex"]["gpu-west-2"] {
				t.Fatal("the new allowlist is not in the snapshot")
			}
			// Put the repo back for the next mode.
			g.commit(t, "restore", map[string]string{"orgs/globex.yaml": string(exampleFS(t, nil)["orgs/globex.yaml"].Data)})
		})
	}
}

func TestGitSourceFetchFailureAndStaleness(t *testing.T) {
	g := newGitRepo(t)
	src, err := NewGitSource(GitConfig{Repo: "file://" + g.dir, MaxStaleness: time.Hour, App: testSource})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	moved := g.dir + ".moved"
	if err := os.Rename(g.dir, moved); err != nil {
		t.Fatal(err)
	}
	defer os.Rename(moved, g.dir)
	st, err := src.Refresh(context.Background())
	if err == nil || st.FetchError == "" || st.Commit == "" {
		t.Fatalf("fetch from a vanished repo: %+v %v", st, err)
	}
	if _, err := src.Snapshot(); err != nil {
		t.Fatalf("within the staleness limit the last snapshot is served: %v", err)
	}
	src.mu.Lock()
	src.status.LastFetch = time.Now().Add(-2 * time.Hour)
	src.mu.Unlock()
	if _, err := src.Snapshot(); err == nil || !strings.Contains(err.Error(), "repo unreachable") {
		t.Fatalf("past the staleness limit: %v", err)
	}
}

func TestGitSourcePlainDirectory(t *testing.T) {
	dir := t.TempDir()
	for p, f := range exampleFS(t, nil) {
		_ = os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, p), f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src, err := NewGitSource(GitConfig{Repo: dir, App: testSource})
	if err != nil {
		t.Fatal(err)
	}
	st, err := src.Refresh(context.Background())
	if err != nil || !strings.HasPrefix(st.Commit, "dir-") {
		t.Fatalf("%+v %v", st, err)
	}
	st2, _ := src.Refresh(context.Background())
	if st2.Commit != st.Commit || st2.LoadedAt != st.LoadedAt {
		t.Fatalf("unchanged directory reloaded: %+v then %+v", st, st2)
	}
	_ = os.WriteFile(filepath.Join(dir, "orgs/globex.yaml"), []byte(badOrg), 0o644)
	st3, _ := src.Refresh(context.Background())
	if st3.Commit != st.Commit || st3.Head == st.Commit || st3.HeadError == "" {
		t.Fatalf("invalid edit: %+v", st3)
	}
}

func TestGitSourceConfig(t *testing.T) {
	for _, tt := range []struct {
		cfg GitConfig
		msg string
	}{
		{GitConfig{}, "required"},
		{GitConfig{Repo: "git@github.com:org/gitops.git"}, "known-hosts"},
		{GitConfig{Repo: "ssh://git@host/gitops.git", SSHKeyFile: "k"}, "known-hosts"},
		{GitConfig{Repo: "https://user:tok3n@git.example.com/gitops.git"}, "--git-password-file"},
	} {
		if _, err := NewGitSource(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.msg) || strings.Contains(err.Error(), "tok3n") {
			t.Errorf("%+v: %v, want %q", tt.cfg, err, tt.msg)
		}
	}
	if got := redactURL("https://user:secret@git.example.com/x.git"); strings.Contains(got, "secret") {
		t.Errorf("redactURL kept the password: %s", got)
	}
}

// TestGitSourceRefusesEscapingSymlinks: a record that is a symlink out of
// its directory (to a sibling cluster, to /dev/zero) or a symlinked cluster
// directory rejects the commit; the last good snapshot keeps answering with
// every cluster, never a shorter list. A symlink inside the directory is read.
func TestGitSourceRefusesEscapingSymlinks(t *testing.T) {
	cases := []struct {
		name, link, target, want string
	}{
		{"sibling cluster", "clusters/gpu-west-2/cluster.yaml", "../gpu-east-1/cluster.yaml", "leaves its directory"},
		{"device", "clusters/gpu-west-2/cluster.yaml", "/dev/zero", "leaves its directory"},
		{"directory", "clusters/evil", "gpu-east-1", "record directory must be a directory"},
	}
	for _, mode := range []string{"work tree", "file URL", "plain folder"} {
		for _, tc := range cases {
			t.Run(mode+"/"+tc.name, func(t *testing.T) {
				g := newGitRepo(t)
				repoArg := g.dir
				switch mode {
				case "file URL":
					repoArg = "file://" + g.dir
				case "plain folder":
					plain := t.TempDir()
					if err := os.CopyFS(plain, os.DirFS(g.dir)); err != nil {
						t.Fatal(err)
					}
					_ = os.RemoveAll(filepath.Join(plain, ".git"))
					repoArg = plain
					g.dir = plain
				}
				src, err := NewGitSource(GitConfig{Repo: repoArg, Revision: "HEAD", App: testSource})
				if err != nil {
					t.Fatal(err)
				}
				st, err := src.Refresh(context.Background())
				if err != nil || st.HeadError != "" {
					t.Fatalf("first refresh: %+v %v", st, err)
				}
				before, _ := src.Snapshot()
				full := filepath.Join(g.dir, tc.link)
				_ = os.Remove(full)
				if err := os.Symlink(tc.target, full); err != nil {
					t.Fatal(err)
				}
				if mode != "plain folder" {
					g.commit(t, "symlink", nil)
				}
				st, err = src.Refresh(context.Background())
				if err != nil || !strings.Contains(st.HeadError, tc.want) {
					t.Fatalf("refresh after the symlink: %+v %v", st, err)
				}
				after, err := src.Snapshot()
				if err != nil || after != before {
					t.Fatalf("the last good snapshot was not kept: %v", err)
				}
			})
		}
	}
}
