package generator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing/object"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
)

// addRefs gives g n branches and tags beside its own, all on HEAD, in
// packed-refs as git keeps many refs.
func addRefs(t testing.TB, g *gitRepo, n int) {
	t.Helper()
	if n == 0 {
		return
	}
	head, err := g.r.Head()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for i := 0; i < n; i++ {
		kind := "heads/feature"
		if i%2 == 1 {
			kind = "tags/v0."
		}
		lines = append(lines, fmt.Sprintf("%s refs/%s%05d\n", head.Hash(), kind, i))
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i][41:] < lines[j][41:] })
	err = os.WriteFile(filepath.Join(g.dir, ".git", "packed-refs"), []byte("# pack-refs with: peeled fully-peeled sorted \n"+strings.Join(lines, "")), 0o644)
	if err != nil {
		t.Fatal(err)
	}
}

// httpRepo serves g over smart HTTP (git http-backend), as a git host does.
func httpRepo(t testing.TB, g *gitRepo) (string, bool) { return httpRepoV(t, g, true) }

// httpRepoV serves g over smart HTTP, in protocol v0 only unless v2.
func httpRepoV(t testing.TB, g *gitRepo, v2 bool) (string, bool) {
	t.Helper()
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		return "", false
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		return "", false
	}
	backendHandler := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + filepath.Dir(g.dir), "GIT_HTTP_EXPORT_ALL=1"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !v2 {
			r.Header.Del("Git-Protocol")
		}
		backendHandler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/" + filepath.Base(g.dir) + "/.git", true
}

// BenchmarkRefreshManyRefs: a refresh whose head did not move (what every
// answer with ConfirmHead costs: one look at the tracked ref), and one
// whose head moved (a look and a fetch), beside 0 and 10,000 refs the
// generator does not track, over a file:// URL and over smart HTTP
// (docs/benchmarks.md).
func BenchmarkRefreshManyRefs(b *testing.B) {
	for _, refs := range []int{0, 10000} {
		g := newGitRepo(b)
		addRefs(b, g, refs)
		modes := []struct{ name, repo string }{{"file URL", "file://" + g.dir}}
		if u, ok := httpRepo(b, g); ok {
			modes = append(modes, struct{ name, repo string }{"http", u})
		}
		for _, mode := range modes {
			for _, moved := range []bool{false, true} {
				head := map[bool]string{false: "unchanged", true: "moved"}[moved]
				b.Run(fmt.Sprintf("%s/head=%s/refs=%d", mode.name, head, refs), func(b *testing.B) {
					src, err := NewGitSource(GitConfig{Repo: mode.repo, Revision: "master", App: testSource})
					if err != nil {
						b.Fatal(err)
					}
					if st, err := src.Refresh(context.Background()); err != nil || st.HeadError != "" {
						b.Fatalf("%+v %v", st, err)
					}
					var total uint64
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						if moved {
							b.StopTimer()
							g.commit(b, "moved", map[string]string{"docs/n.txt": fmt.Sprint(time.Now().UnixNano())})
							b.StartTimer()
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
}

// TestLsRefsMatchesList: the revision found by its candidate refs alone
// (protocol v2 ls-refs, over file:// and smart HTTP) is the one found
// among every ref go-git lists (v0): HEAD, a branch, a tag, annotated or
// not, a full ref name, beside thousands of other refs; a missing revision
// is missing both ways.
func TestLsRefsMatchesList(t *testing.T) {
	g := newGitRepo(t)
	addRefs(t, g, 2000)
	head, err := g.r.Head()
	if err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: "t", Email: "t@example.invalid", When: time.Unix(1700000000, 0)}
	if _, err := g.r.CreateTag("v1", head.Hash(), &git.CreateTagOptions{Tagger: sig, Message: "v1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.r.CreateTag("master-old", head.Hash(), nil); err != nil {
		t.Fatal(err)
	}
	urls := []string{"file://" + g.dir}
	if u, ok := httpRepo(t, g); ok {
		urls = append(urls, u)
	}
	for _, url := range urls {
		remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{url}})
		all, err := remote.List(&git.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, rev := range []string{"HEAD", "master", "refs/heads/master", "v1", "master-old", "feature00000", "v0.00001", "mast", "nope"} {
			refs, err := lsRefs(context.Background(), url, nil, rev)
			if err != nil {
				t.Fatalf("%s %s: %v", url, rev, err)
			}
			if len(refs) > 3 {
				t.Errorf("%s %s: %d refs listed", url, rev, len(refs))
			}
			name, hash, err := resolveRef(refs, rev)
			wantName, wantHash, wantErr := resolveRef(all, rev)
			if name != wantName || hash != wantHash || (err == nil) != (wantErr == nil) {
				t.Errorf("%s %s: ls-refs %s %s %v, the full list %s %s %v", url, rev, name, hash, err, wantName, wantHash, wantErr)
			}
		}
	}
}

// TestLsRefsFallsBackToList: a server that answers in protocol v0 (it
// lists every ref whatever the client asks) is listed by go-git.
func TestLsRefsFallsBackToList(t *testing.T) {
	v0 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
		var b bytes.Buffer
		pkt(&b, "# service=git-upload-pack\n")
		b.WriteString("0000")
		pkt(&b, strings.Repeat("1", 40)+" refs/heads/master\x00multi_ack\n")
		b.WriteString("0000")
		_, _ = w.Write(b.Bytes())
	}))
	defer v0.Close()
	if _, err := lsRefs(context.Background(), v0.URL+"/r.git", nil, "master"); !errors.Is(err, errNoV2) {
		t.Fatalf("a v0 server: %v, want errNoV2", err)
	}
	if _, err := lsRefs(context.Background(), "ssh://git@example.invalid/r.git", nil, "master"); !errors.Is(err, errNoV2) {
		t.Fatalf("ssh: %v, want errNoV2", err)
	}
}

// TestGitSourceFetchesByEitherProtocol: over a server that speaks protocol
// v2 and over one that speaks v0 only (go-git's listing and fetch), a
// commit loads, a record packed as a delta against a huge blob among it.
func TestGitSourceFetchesByEitherProtocol(t *testing.T) {
	for _, v2 := range []bool{true, false} {
		t.Run(fmt.Sprintf("v2=%v", v2), func(t *testing.T) {
			g := newGitRepo(t)
			u, ok := httpRepoV(t, g, v2)
			if !ok {
				t.Skip("no git http-backend")
			}
			src, err := NewGitSource(GitConfig{Repo: u, Revision: "master", App: testSource})
			if err != nil {
				t.Fatal(err)
			}
			if st, err := src.Refresh(context.Background()); err != nil || st.HeadError != "" {
				t.Fatalf("first refresh: %+v %v", st, err)
			}
			orig, err := os.ReadFile(filepath.Join(g.dir, "orgs", "acme.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			head := commitRecordAsDelta(t, g, append(orig, "# v2 or not\n"...), 4<<20)
			st, err := src.Refresh(context.Background())
			if err != nil || st.Commit != head || st.HeadError != "" {
				t.Fatalf("refresh: %+v %v", st, err)
			}
			if _, o, _ := mustSnapshotOf(t, src).Counts(); o != 2 {
				t.Fatalf("%d orgs", o)
			}
		})
	}
}

// TestOffers: a v2 command is used only when the server offers it, and
// fetch only with shallow (the generator fetches one commit, depth 1).
func TestOffers(t *testing.T) {
	caps := []string{"version 2", "agent=git/2.39.5", "ls-refs=unborn", "fetch=shallow wait-for-done", "server-option"}
	for _, tc := range []struct {
		caps    []string
		command string
		want    bool
	}{
		{caps, "ls-refs", true},
		{caps, "fetch=shallow", true},
		{[]string{"version 2", "ls-refs", "fetch"}, "fetch=shallow", false},
		{[]string{"version 2", "fetch=shallow"}, "ls-refs", false},
		{[]string{"# service=git-upload-pack"}, "ls-refs", false},
		{nil, "ls-refs", false},
	} {
		if got := offers(tc.caps, tc.command); got != tc.want {
			t.Errorf("offers(%q, %q) = %v", tc.caps, tc.command, got)
		}
	}
}

// TestV2RedirectKeepsTheToken: a v2 look that the git server redirects to
// another host is not followed, so the repo's basic-auth token never
// reaches that host; a redirect on the same host is followed.
func TestV2RedirectKeepsTheToken(t *testing.T) {
	var leaked atomic.Bool
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, _, ok := r.BasicAuth(); ok {
			leaked.Store(true)
		}
		http.Error(w, "no", http.StatusNotFound)
	}))
	defer other.Close()
	var sameHost atomic.Bool
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved/info/refs" {
			sameHost.Store(true)
			http.Error(w, "no", http.StatusNotFound)
			return
		}
		target := other.URL
		if strings.HasPrefix(r.URL.Path, "/local") {
			target = ""
		}
		http.Redirect(w, r, target+"/moved/info/refs?service=git-upload-pack", http.StatusFound)
	}))
	defer origin.Close()
	auth := &githttp.BasicAuth{Username: "git", Password: "token-canary"}
	for _, path := range []string{"/remote.git", "/local.git"} {
		_, err := v2Command(context.Background(), origin.URL+path, auth, "ls-refs", nil)
		if err == nil {
			t.Fatalf("%s: a redirect to a 404 answered", path)
		}
		if strings.Contains(err.Error(), "token-canary") {
			t.Errorf("%s: the error repeats the token: %v", path, err)
		}
	}
	if leaked.Load() {
		t.Error("the basic-auth token reached the other host")
	}
	if !sameHost.Load() {
		t.Error("a redirect on the same host was not followed")
	}
}
