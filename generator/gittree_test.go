package generator

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/spokeforge/spokeforge/internal/repo"
)

// pattern is a compressible byte stream of n bytes: a large blob costs the
// test little disk, but reading it costs its full size in memory.
type pattern struct{ n, off int64 }

func (p *pattern) Read(b []byte) (int, error) {
	if p.off >= p.n {
		return 0, io.EOF
	}
	if rest := p.n - p.off; int64(len(b)) > rest {
		b = b[:rest]
	}
	for i := range b {
		b[i] = "spokeforge-"[(p.off+int64(i))%11]
	}
	p.off += int64(len(b))
	return len(b), nil
}

// writeBlob streams a blob of n bytes into the repository's loose objects,
// never holding it in memory.
func writeBlob(t testing.TB, s *filesystem.Storage, n int64) plumbing.Hash {
	t.Helper()
	w, header, err := s.LazyWriter()
	if err != nil {
		t.Fatal(err)
	}
	if err := header(plumbing.BlobObject, n); err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(w, &pattern{n: n}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return w.(interface{ Hash() plumbing.Hash }).Hash()
}

// putEntry returns tree (zero: an empty one) with the blob at path parts.
func putEntry(t testing.TB, s storer.EncodedObjectStorer, tree plumbing.Hash, parts []string, blob plumbing.Hash) plumbing.Hash {
	t.Helper()
	var entries []object.TreeEntry
	if !tree.IsZero() {
		old, err := object.GetTree(s, tree)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, old.Entries...)
	}
	var sub plumbing.Hash
	i, found := 0, false
	for ; i < len(entries); i++ {
		if found = entries[i].Name == parts[0]; found {
			sub = entries[i].Hash
			break
		}
	}
	e := object.TreeEntry{Name: parts[0], Mode: filemode.Regular, Hash: blob}
	if len(parts) > 1 {
		e = object.TreeEntry{Name: parts[0], Mode: filemode.Dir, Hash: putEntry(t, s, sub, parts[1:], blob)}
	}
	if found {
		entries[i] = e
	} else {
		entries = append(entries, e)
	}
	// git orders a directory as its name with a trailing slash.
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(entries, func(i, j int) bool { return key(entries[i]) < key(entries[j]) })
	o := s.NewEncodedObject()
	if err := (&object.Tree{Entries: entries}).Encode(o); err != nil {
		t.Fatal(err)
	}
	h, err := s.SetEncodedObject(o)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// commitBlobs commits blobs of the given sizes (a compressible pattern) on
// top of HEAD without a work tree, and returns the commit.
func (g *gitRepo) commitBlobs(t testing.TB, msg string, sizes map[string]int64) string {
	t.Helper()
	st := g.r.Storer.(*filesystem.Storage)
	head, err := g.r.Head()
	if err != nil {
		t.Fatal(err)
	}
	c, err := g.r.CommitObject(head.Hash())
	if err != nil {
		t.Fatal(err)
	}
	root := c.TreeHash
	for p, n := range sizes {
		root = putEntry(t, st, root, strings.Split(p, "/"), writeBlob(t, st, n))
	}
	sig := object.Signature{Name: "t", Email: "t@example.invalid", When: time.Unix(1700000000, 0)}
	o := st.NewEncodedObject()
	if err := (&object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: root, ParentHashes: []plumbing.Hash{head.Hash()}}).Encode(o); err != nil {
		t.Fatal(err)
	}
	h, err := st.SetEncodedObject(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SetReference(plumbing.NewHashReference(head.Name(), h)); err != nil {
		t.Fatal(err)
	}
	return h.String()
}

// allocated is the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

const hugeBlob = 64 << 20

// TestGitSourceReadsOnlyRecordBlobs: a commit adding huge files outside the
// record paths (beside a cluster record, under its secrets/, at the root,
// under docs/) loads with a small fraction of their size allocated: their
// blobs are never read, not even to learn their size.
func TestGitSourceReadsOnlyRecordBlobs(t *testing.T) {
	for _, mode := range []string{"work tree", "file URL"} {
		t.Run(mode, func(t *testing.T) { testReadsOnlyRecordBlobs(t, mode == "file URL") })
	}
}

// repoArg is how a test GitSource reaches g: in place, or fetched.
func (g *gitRepo) repoArg(fetch bool) string {
	if fetch {
		return "file://" + g.dir
	}
	return g.dir
}

func testReadsOnlyRecordBlobs(t *testing.T, fetch bool) {
	g := newGitRepo(t)
	src, err := NewGitSource(GitConfig{Repo: g.repoArg(fetch), App: testSource})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := src.Refresh(context.Background()); err != nil || st.HeadError != "" {
		t.Fatalf("first refresh: %+v %v", st, err)
	}
	huge := map[string]int64{
		"big.bin":                                 hugeBlob,
		"clusters/gpu-east-1/huge.yaml":           hugeBlob,
		"clusters/gpu-east-1/secrets/x.sops.yaml": hugeBlob,
		"docs/runbook/huge.md":                    hugeBlob,
		"clusters/gpu-east-1/kustomization.yml":   4 << 20,
		"clusters/gpu-west-2/overlays/patch.yaml": 4 << 20,
		"products/acme/README.md":                 4 << 20,
		"orgs/notes/huge.yaml":                    4 << 20, // a directory below orgs/ holds no record
	}
	var total int64
	for _, n := range huge {
		total += n
	}
	head := g.commitBlobs(t, "huge files beside the records", huge)
	var st SourceStatus
	n := allocated(func() { st, err = src.Refresh(context.Background()) })
	if err != nil || st.Commit != head || st.HeadError != "" {
		t.Fatalf("refresh: %+v %v", st, err)
	}
	if c, _, _ := mustSnapshotOf(t, src).Counts(); c != 3 {
		t.Fatalf("%d clusters, want 3", c)
	}
	t.Logf("refresh allocated %d KiB beside %d MiB of blobs outside the record paths", n>>10, total>>20)
	if n > hugeBlob/8 {
		t.Fatalf("the refresh allocated %d bytes: a %d-byte blob outside the record paths was read", n, hugeBlob)
	}
}

func mustSnapshotOf(t *testing.T, src *GitSource) *Snapshot {
	t.Helper()
	s, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestGitSourceRefusesHugeRecordUnread: a cluster.yaml (or an org or
// product record) over the limit is refused from its size, without being
// read; the error names the file and the limit, and the last good snapshot
// keeps answering every cluster.
func TestGitSourceRefusesHugeRecordUnread(t *testing.T) {
	for _, file := range []string{"clusters/gpu-east-1/cluster.yaml", "orgs/globex.yaml", "products/acme/huge.yaml"} {
		for _, fetch := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/fetched=%v", file, fetch), func(t *testing.T) { testRefusesHugeRecordUnread(t, file, fetch) })
		}
	}
}

func testRefusesHugeRecordUnread(t *testing.T, file string, fetch bool) {
	{
		{
			g := newGitRepo(t)
			src, err := NewGitSource(GitConfig{Repo: g.repoArg(fetch), App: testSource})
			if err != nil {
				t.Fatal(err)
			}
			if st, err := src.Refresh(context.Background()); err != nil || st.HeadError != "" {
				t.Fatalf("first refresh: %+v %v", st, err)
			}
			good := mustSnapshotOf(t, src)
			head := g.commitBlobs(t, "a huge record", map[string]int64{file: hugeBlob})
			var st SourceStatus
			n := allocated(func() { st, err = src.Refresh(context.Background()) })
			want := fmt.Sprintf("%s: is %d bytes; at most %d are read", file, hugeBlob, repo.MaxRecordBytes)
			if err != nil || st.Head != head || !strings.Contains(st.HeadError, want) {
				t.Fatalf("refresh: %+v %v, want %q", st, err, want)
			}
			if s := mustSnapshotOf(t, src); s != good {
				t.Fatal("the last good snapshot was not kept")
			}
			if n > hugeBlob/8 {
				t.Fatalf("the refresh allocated %d bytes: the oversized record was read", n)
			}
		}
	}
}

// BenchmarkRefreshHugeBlob reports the bytes one refresh allocates loading
// the example repo's head with and without a 128 MiB blob outside the
// record paths (docs/security.md). A work tree is read in place; a file://
// URL is fetched (depth 1, from git-upload-pack): every blob of the commit
// is transferred and hashed as it streams by (go-git has no partial-clone
// filter), and only the objects a walk may read are kept (packStorage).
func BenchmarkRefreshHugeBlob(b *testing.B) {
	for _, huge := range []int64{0, 128 << 20} {
		g := newGitRepo(b)
		if huge > 0 {
			g.commitBlobs(b, "a huge blob", map[string]int64{"docs/huge.bin": huge})
		}
		for _, mode := range []struct{ name, repo string }{{"work tree", g.dir}, {"file URL", "file://" + g.dir}} {
			b.Run(fmt.Sprintf("%s/blob=%dMiB", mode.name, huge>>20), func(b *testing.B) {
				var total uint64
				for i := 0; i < b.N; i++ {
					src, err := NewGitSource(GitConfig{Repo: mode.repo, App: testSource})
					if err != nil {
						b.Fatal(err)
					}
					var st SourceStatus
					total += allocated(func() { st, err = src.Refresh(context.Background()) })
					if err != nil || st.HeadError != "" {
						b.Fatalf("%+v %v", st, err)
					}
				}
				b.ReportMetric(float64(total)/float64(b.N), "B-alloc/refresh")
			})
		}
	}
}

// TestGitSourceTreeRefusalsMatchReadFiles: a commit is refused for what a
// checkout read with repo.ReadFiles is refused for — never a record
// silently skipped — and an executable record is read like any file.
func TestGitSourceTreeRefusalsMatchReadFiles(t *testing.T) {
	for _, tc := range []struct {
		name, file, want string
	}{
		{"yml org", "orgs/initech.yml", "orgs/initech.yml: records are read from .yaml files only"},
		{"yml product", "products/acme/shop.yml", "products/acme/shop.yml: records are read from .yaml files only"},
		{"cluster.yml", "clusters/gpu-east-1/cluster.yml", "clusters/gpu-east-1/cluster.yml: a cluster record is read from cluster.yaml only"},
		{"directory record", "orgs/initech.yaml/x", "orgs/initech.yaml: is a directory; a record must be a file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGitRepo(t)
			src, err := NewGitSource(GitConfig{Repo: g.dir, App: testSource})
			if err != nil {
				t.Fatal(err)
			}
			if st, err := src.Refresh(context.Background()); err != nil || st.HeadError != "" {
				t.Fatalf("first refresh: %+v %v", st, err)
			}
			g.commit(t, tc.name, map[string]string{tc.file: "kind: Organization\n"})
			st, err := src.Refresh(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(st.HeadErrors, "\n"), tc.want) {
				t.Fatalf("head errors %q, want %q", st.HeadErrors, tc.want)
			}
			// The checkout read as a plain folder says the same.
			_, errs := repo.ReadFiles(g.dir)
			if !strings.Contains(errs.Error(), tc.want) {
				t.Fatalf("ReadFiles: %v, want %q", errs, tc.want)
			}
		})
	}
	t.Run("executable record", func(t *testing.T) {
		g := newGitRepo(t)
		if err := os.Chmod(filepath.Join(g.dir, "clusters/gpu-west-2/cluster.yaml"), 0o755); err != nil {
			t.Fatal(err)
		}
		g.commit(t, "chmod +x", nil)
		src, err := NewGitSource(GitConfig{Repo: g.dir, App: testSource})
		if err != nil {
			t.Fatal(err)
		}
		if st, err := src.Refresh(context.Background()); err != nil || st.HeadError != "" {
			t.Fatalf("refresh: %+v %v", st, err)
		}
		if c, _, _ := mustSnapshotOf(t, src).Counts(); c != 3 {
			t.Fatalf("%d clusters, want 3: the executable record was skipped", c)
		}
	})
}

// TestResolveLocal: a local revision is HEAD, a branch, an annotated or
// lightweight tag, or a commit hash; anything else is an error.
func TestResolveLocal(t *testing.T) {
	g := newGitRepo(t)
	head, err := g.r.Head()
	if err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: "t", Email: "t@example.invalid", When: time.Unix(1700000000, 0)}
	if _, err := g.r.CreateTag("v1", head.Hash(), &git.CreateTagOptions{Tagger: sig, Message: "v1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.r.CreateTag("light", head.Hash(), nil); err != nil {
		t.Fatal(err)
	}
	for _, rev := range []string{"HEAD", head.Name().Short(), "v1", "light", head.Hash().String()} {
		if h, err := resolveLocal(g.r, rev); err != nil || h != head.Hash() {
			t.Errorf("%s: %s %v, want %s", rev, h, err, head.Hash())
		}
	}
	if _, err := resolveLocal(g.r, "nope"); err == nil {
		t.Error("an unknown revision resolved")
	}
}

// TestPackedSizes: in a repository whose objects are packed with deltas
// (git repack), every object's size is read from its pack header or its
// delta's first bytes and equals the object's, and the generator loads it.
func TestPackedSizes(t *testing.T) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	g := newGitRepo(t)
	c := string(exampleFS(t, nil)["clusters/gpu-east-1/cluster.yaml"].Data)
	g.commit(t, "similar files", map[string]string{"docs/a.yaml": c + "# a\n", "docs/b.yaml": c + "# b\n" + c})
	if out, err := exec.Command(gitBin, "-C", g.dir, "repack", "-adf", "--window=50", "--depth=10").CombinedOutput(); err != nil {
		t.Fatalf("git repack: %v\n%s", err, out)
	}
	r, err := git.PlainOpen(g.dir)
	if err != nil {
		t.Fatal(err)
	}
	_, sizes, done := packedObjects(r.Storer)
	defer done()
	it, err := r.Storer.IterEncodedObjects(plumbing.AnyObject)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = it.ForEach(func(o plumbing.EncodedObject) error {
		n++
		got, err := sizes(o.Hash())
		if err != nil || got != o.Size() {
			t.Errorf("%s %s: size %d %v, want %d", o.Type(), o.Hash(), got, err, o.Size())
		}
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("%d objects, %v", n, err)
	}
	if countPackDeltas(t, g.dir) == 0 {
		t.Fatal("the pack holds no delta; the test needs some")
	}
	src, err := NewGitSource(GitConfig{Repo: g.dir, App: testSource})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := src.Refresh(context.Background()); err != nil || st.HeadError != "" {
		t.Fatalf("refresh: %+v %v", st, err)
	}
}

func countPackDeltas(t *testing.T, dir string) int {
	packs, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "*.pack"))
	deltas := 0
	for _, p := range packs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		deltas += countDeltas(t, b)
	}
	return deltas
}
