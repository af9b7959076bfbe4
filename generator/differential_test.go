package generator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

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

// TestGitLoaderMatchesCheckoutPacked: records as git may pack them (a
// delta against a huge blob, through a huge delta, a chain of deltas, by
// offset or by hash; an oversized record stored whole or as a delta), in
// place and fetched: the generator accepts what validate's loader accepts
// of the checkout, reads the same bytes, and refuses what it refuses
// naming the same file.
func TestGitLoaderMatchesCheckoutPacked(t *testing.T) {
	const huge = 24 << 20
	for _, tc := range deltaCases() {
		if len(tc.objs[len(tc.objs)-1].content) > repo.MaxRecordBytes {
			continue
		}
		tc.objs[len(tc.objs)-1].content = nil // the record, set per repo below
		for _, fetch := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/fetched=%v", tc.name, fetch), func(t *testing.T) {
				matchCheckoutPacked(t, fetch, tc.objs, false)
			})
		}
	}
	for _, fetch := range []bool{false, true} {
		t.Run(fmt.Sprintf("oversized record as a delta/fetched=%v", fetch), func(t *testing.T) {
			matchCheckoutPacked(t, fetch, []packObject{{plumbing.BlobObject, patterned(huge, 0, ""), -1, false, nil}, {plumbing.BlobObject, nil, 0, false, nil}}, true)
		})
	}
}

// matchCheckoutPacked commits objs, the last being orgs/acme.yaml (its
// content made from the example's, oversized if asked, embedded in the
// first object so that the delta copies it), the others under docs/.
func matchCheckoutPacked(t *testing.T, fetch bool, objs []packObject, oversized bool) {
	g := newGitRepo(t)
	const org = "orgs/acme.yaml"
	orig, err := os.ReadFile(filepath.Join(g.dir, org))
	if err != nil {
		t.Fatal(err)
	}
	rec := append(append([]byte{}, orig...), "# packed\n"...)
	if oversized {
		rec = append(rec, "# "+strings.Repeat("x", repo.MaxRecordBytes)+"\n"...)
	}
	objs = append([]packObject{}, objs...)
	first := objs[0].content
	objs[0].content = append(append(append([]byte{}, first[:len(first)/2]...), rec...), first[len(first)/2:]...)
	for i := range objs[1:] {
		if objs[i+1].content != nil && len(objs[i+1].content) > repo.MaxRecordBytes {
			objs[i+1].content = append(append([]byte{}, objs[0].content[:len(objs[0].content)/3]...), "a change"...)
			objs[i+1].content = append(objs[i+1].content, objs[0].content[len(objs[0].content)/3+8:]...)
		} else if objs[i+1].content != nil {
			objs[i+1].content = append(append([]byte{}, rec...), rec[:100*(i+1)]...) // distinct objects
		}
	}
	objs[len(objs)-1].content = rec
	files := map[string][]byte{org: rec}
	for i, o := range objs[:len(objs)-1] {
		files[fmt.Sprintf("docs/%d.bin", i)] = o.content
	}
	head := commitPacked(t, g, files, objs)
	checkout, refused := repo.ReadFiles(g.dir)
	src, err := NewGitSource(GitConfig{Repo: g.repoArg(fetch), App: testSource})
	if err != nil {
		t.Fatal(err)
	}
	st, err := src.Refresh(context.Background())
	if err != nil || st.Head != head {
		t.Fatalf("refresh: %+v %v", st, err)
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
	if _, o, _ := mustSnapshotOf(t, src).Counts(); o != 2 || string(checkout[org]) != string(rec) {
		t.Fatalf("%d orgs in the snapshot; the checkout read %d bytes", o, len(checkout[org]))
	}
}
