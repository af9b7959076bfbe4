package render

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// trap is a local HTTP server that counts every request and a fake `git`
// first on $PATH that records every run: what a build must never reach.
type trap struct {
	URL    string
	hits   atomic.Int64
	gitLog string
}

func newTrap(t testing.TB) *trap {
	tr := &trap{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tr.hits.Add(1)
		_, _ = w.Write([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fetched, namespace: ns}\n"))
	}))
	t.Cleanup(srv.Close)
	tr.URL = srv.URL
	bin := t.TempDir()
	tr.gitLog = filepath.Join(t.TempDir(), "git-runs")
	script := "#!/bin/sh\necho \"$@\" >> '" + tr.gitLog + "'\nexit 1\n"
	for _, prog := range []string{"git", "helm", "helmV3"} {
		if err := os.WriteFile(filepath.Join(bin, prog), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if os.Getenv("PATH") == "" {
		// A build is running in this process (it empties $PATH): use it as is.
		t.Fatal("PATH is empty")
	}
	if tb, ok := t.(interface{ Setenv(string, string) }); ok {
		tb.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	return tr
}

// reached reports whether anything reached the server or ran git.
func (tr *trap) reached() string {
	var s []string
	if n := tr.hits.Load(); n > 0 {
		s = append(s, "the server got requests")
	}
	if b, err := os.ReadFile(tr.gitLog); err == nil {
		s = append(s, "git ran: "+strings.TrimSpace(string(b)))
	}
	return strings.Join(s, "; ")
}

var sandboxBase = []Object{{Boundary: "test", Obj: map[string]any{
	"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "base", "namespace": "ns"},
}}}

const sandboxBaseYAML = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: base\n  namespace: ns\n"

// applyOverlay writes files (name → content, SERVER replaced by url) into
// a directory and applies the overlay there.
func applyOverlay(t testing.TB, url string, files map[string]string) ([]byte, error) {
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(content, "SERVER", url)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file, err := FindOverlay(dir)
	if err != nil || file == "" {
		t.Fatalf("no overlay: %v", err)
	}
	return Overlay{Dir: dir, Display: "clusters/x", File: file}.Apply(sandboxBase, []byte(sandboxBaseYAML))
}

// remoteForms: every way a kustomization names something kustomize fetches
// or clones, in every field that names a file.
var remoteForms = map[string]map[string]string{
	"http resource":        {"kustomization.yaml": "resources: ['SERVER/cm.yaml']\n"},
	"git over http":        {"kustomization.yaml": "resources: ['SERVER/org/repo.git//base?ref=main']\n"},
	"github shorthand":     {"kustomization.yaml": "resources: ['github.com/org/repo//base?ref=v1']\n"},
	"scp form":             {"kustomization.yaml": "resources: ['git@example.com:org/repo.git//base']\n"},
	"ssh url":              {"kustomization.yaml": "resources: ['ssh://git@example.com/org/repo.git']\n"},
	"file url":             {"kustomization.yaml": "resources: ['file:///nonexistent/repo.git']\n"},
	"bases":                {"kustomization.yaml": "bases: ['SERVER/b.git']\n"},
	"component":            {"kustomization.yaml": "components: ['SERVER/c.git//x?ref=main']\n"},
	"patch path":           {"kustomization.yaml": "patches: [{path: 'SERVER/p.yaml'}]\n"},
	"json6902 path":        {"kustomization.yaml": "patchesJson6902: [{path: 'SERVER/p.yaml', target: {kind: ConfigMap, name: base}}]\n"},
	"smp":                  {"kustomization.yaml": "patchesStrategicMerge: ['SERVER/p.yaml']\n"},
	"crds":                 {"kustomization.yaml": "crds: ['SERVER/crd.yaml']\n"},
	"configurations":       {"kustomization.yaml": "configurations: ['SERVER/c.yaml']\n"},
	"openapi":              {"kustomization.yaml": "openapi: {path: 'SERVER/o.json'}\n"},
	"replacements":         {"kustomization.yaml": "replacements: [{path: 'SERVER/r.yaml'}]\n"},
	"configmap files":      {"kustomization.yaml": "configMapGenerator: [{name: x, files: ['SERVER/f']}]\n"},
	"configmap keyed file": {"kustomization.yaml": "configMapGenerator: [{name: x, files: ['k=SERVER/f']}]\n"},
	"configmap envs":       {"kustomization.yaml": "configMapGenerator: [{name: x, envs: ['SERVER/e']}]\n"},
	"configmap env":        {"kustomization.yaml": "configMapGenerator: [{name: x, env: 'SERVER/e'}]\n"},
	"merge key":            {"kustomization.yaml": "<<: {resources: ['SERVER/m.yaml']}\n"},
	"case variant":         {"kustomization.yaml": "RESOURCES: ['SERVER/u.yaml']\n"},
	"helm":                 {"kustomization.yaml": "helmCharts: [{name: x, repo: 'SERVER', version: 1.0.0, releaseName: x}]\n"},
	"sub kustomization": {
		"kustomization.yaml":     "resources: [sub]\n",
		"sub/kustomization.yaml": "resources: ['SERVER/s.yaml', 'git@example.com:org/r.git']\n",
	},
}

// TestSandboxHoldsWithoutTheCheck turns the kustomization check off: the
// build itself must then refuse every remote form, with nothing fetched
// and no git run, and fail cleanly.
func TestSandboxHoldsWithoutTheCheck(t *testing.T) {
	tr := newTrap(t)
	// The trap works: outside a build the fake git is found and the server counts.
	if p, err := exec.LookPath("git"); err != nil || !strings.HasPrefix(p, filepath.Dir(p)) {
		t.Fatalf("fake git not on PATH: %v", err)
	}
	resp, err := http.Get(tr.URL + "/control")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if tr.hits.Load() != 1 {
		t.Fatal("the server does not count")
	}
	tr.hits.Store(0)
	path := os.Getenv("PATH")

	skipKustomizationCheck = true
	t.Cleanup(func() { skipKustomizationCheck = false })
	refused := networkRefusals.Load()
	gitTried := false
	for name, files := range remoteForms {
		t.Run(name, func(t *testing.T) {
			out, err := applyOverlay(t, tr.URL, files)
			if err == nil {
				t.Errorf("the build succeeded: %s", out)
			} else if strings.Contains(err.Error(), "no 'git' program on path") {
				gitTried = true
			}
			if r := tr.reached(); r != "" {
				t.Fatalf("%s (error %v)", r, err)
			}
			if os.Getenv("PATH") != path {
				t.Fatalf("PATH not restored: %q", os.Getenv("PATH"))
			}
			t.Logf("refused: %v", err)
		})
	}
	// Both guards were reached, so the forms above do make kustomize fetch and clone.
	if networkRefusals.Load() == refused {
		t.Error("the network guard refused nothing: kustomize no longer fetches through http.DefaultTransport? Then this test proves nothing")
	}
	if !gitTried {
		t.Error("kustomize never looked for git: then this test proves nothing about exec")
	}
}

// TestCheckRefusesRemoteForms: with the check on, the same forms are
// refused before krusty runs (the guard refuses nothing).
func TestCheckRefusesRemoteForms(t *testing.T) {
	tr := newTrap(t)
	refused := networkRefusals.Load()
	for name, files := range remoteForms {
		t.Run(name, func(t *testing.T) {
			_, err := applyOverlay(t, tr.URL, files)
			if _, ok := err.(*OverlayError); !ok {
				t.Fatalf("want a refusal of the check, got %v", err)
			}
		})
	}
	if r := tr.reached(); r != "" || networkRefusals.Load() != refused {
		t.Fatalf("reached: %q; guard refusals %d", r, networkRefusals.Load()-refused)
	}
}

// TestSandboxReady: the guard is in place and idle between builds.
func TestSandboxReady(t *testing.T) {
	if err := sandboxReady(); err != nil {
		t.Fatal(err)
	}
	if sandboxBusy.Load() {
		t.Fatal("busy outside a build")
	}
}
