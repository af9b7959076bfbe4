package generator

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
	"testing/fstest"
)

const exampleRepo = "../examples/gitops"

var testSource = AppSource{RepoURL: "https://git.example.com/platform/gitops.git", TargetRevision: "main", ArgoNamespace: "argocd"}

// exampleFS is the example repo's records with edits applied ("" deletes a file).
func exampleFS(t testing.TB, edits map[string]string) fstest.MapFS {
	t.Helper()
	m := fstest.MapFS{}
	src := os.DirFS(exampleRepo)
	for _, g := range recordGlobs {
		files, _ := fs.Glob(src, g)
		for _, f := range files {
			b, err := fs.ReadFile(src, f)
			if err != nil {
				t.Fatal(err)
			}
			m[f] = &fstest.MapFile{Data: b}
		}
	}
	for p, c := range edits {
		if c == "" {
			delete(m, p)
			continue
		}
		m[p] = &fstest.MapFile{Data: []byte(c)}
	}
	return m
}

func mustSnapshot(t testing.TB, fsys fs.FS, commit string) *Snapshot {
	t.Helper()
	s, errs := LoadSnapshot(fsys, commit, testSource)
	if len(errs) > 0 {
		t.Fatalf("LoadSnapshot: %v", errs)
	}
	return s
}

// fakeHub is a Hub with fixed answers; a test that changes them after a
// server answered bumps version.
type fakeHub struct {
	err      error
	unsynced bool
	version  uint64
	secrets  map[string]bool
	apps     map[string]App
}

func (h *fakeHub) Ready() error                     { return h.err }
func (h *fakeHub) Synced() bool                     { return !h.unsynced }
func (h *fakeHub) Version() uint64                  { return h.version }
func (h *fakeHub) ClusterSecret(c string) bool      { return h.secrets[c] }
func (h *fakeHub) Application(n string) (App, bool) { a, ok := h.apps[n]; return a, ok }

// registeredHub has every example spoke registered and Healthy.
func registeredHub() *fakeHub {
	return &fakeHub{
		secrets: map[string]bool{"gpu-east-1": true, "gpu-west-2": true},
		apps: map[string]App{
			"spoke-gpu-east-1": {Health: HealthHealthy},
			"spoke-gpu-west-2": {Health: HealthHealthy},
			"spoke-hub-local":  {Health: HealthHealthy},
		},
	}
}

// staticSource serves a fixed snapshot (or error).
type staticSource struct {
	snap *Snapshot
	err  error
}

func (s *staticSource) Snapshot() (*Snapshot, error) {
	if s.snap == nil && s.err == nil {
		return nil, errNoSnapshot
	}
	return s.snap, s.err
}
func (s *staticSource) Status() SourceStatus {
	if s.snap == nil {
		return SourceStatus{}
	}
	return SourceStatus{Commit: s.snap.Commit, LoadedAt: s.snap.LoadedAt, ConfirmedAt: s.snap.LoadedAt}
}
func (s *staticSource) Refresh(context.Context) (SourceStatus, error) { return s.Status(), nil }
func (s *staticSource) Current(context.Context) (*Snapshot, error)    { return s.Snapshot() }

var errNoSnapshot = errors.New("the repo was never loaded yet")

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o600) }

// withoutWorkloads is a cluster record of the examples with its workloads
// and their org dropped: a record naming an org for its workloads must be on
// that org's allowlist, which tests that move clusters on and off
// allowlists do not keep.
func withoutWorkloads(t testing.TB, rec string) string {
	t.Helper()
	i, j := strings.Index(rec, "  workloads:\n"), strings.Index(rec, "  stabilization:")
	if i < 0 || j < i || !strings.Contains(rec, "  org: acme\n") {
		t.Fatal("the example record no longer has org: acme and workloads before stabilization")
	}
	return strings.Replace(rec[:i]+rec[j:], "  org: acme\n", "", 1)
}
