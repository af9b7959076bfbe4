package cmp

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const exampleRepo = "../examples/gitops"

// envFor is Argo CD's build environment for an Application on the example repo.
func envFor(sourcePath, mode string) Env {
	vars := map[string]string{
		"ARGOCD_APP_SOURCE_REPO_URL":        "https://git.example.com/platform/gitops.git",
		"ARGOCD_APP_SOURCE_TARGET_REVISION": "main",
		"ARGOCD_APP_SOURCE_PATH":            sourcePath,
		"KUBE_API_VERSIONS":                 "v1,apps/v1,external-secrets.io/v1",
		"SPOKEFORGE_IMAGE":                  "ghcr.io/spokeforge/spokeforge:v0.1.0-dev",
		"ARGOCD_APP_PARAMETERS":             `[{"name":"mode","string":"` + mode + `"}]`,
	}
	return func(k string) string { return vars[k] }
}

// generateIn runs Generate as the cmp-server does: in dir, with the path ".".
func generateIn(t *testing.T, dir string, getenv Env) ([]byte, error) {
	t.Helper()
	t.Chdir(dir)
	return Generate(".", "", getenv)
}

// exampleClusters lists the example repo's cluster directories (clusters/<name>).
func exampleClusters(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(exampleRepo, "clusters"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, "clusters/"+e.Name())
		}
	}
	if len(out) < 3 {
		t.Fatalf("example repo has %d clusters", len(out))
	}
	return out
}

// TestRenderFromItsDirectoryAlone is the plugin tarball a fleet install sends
// (reposerver.plugin.use.manifest.generate.paths with the "." annotation): the
// cluster directory alone, unpacked under a name of the sidecar's choosing. The
// render must be byte for byte the render from the whole repository, in spoke
// and hub mode, for every example cluster (overlay or not).
func TestRenderFromItsDirectoryAlone(t *testing.T) {
	repoAbs, err := filepath.Abs(exampleRepo)
	if err != nil {
		t.Fatal(err)
	}
	for _, rel := range exampleClusters(t) {
		for _, mode := range []string{ModeSpoke, ModeHub} {
			t.Run(rel+"/"+mode, func(t *testing.T) {
				full, err := generateIn(t, filepath.Join(repoAbs, filepath.FromSlash(rel)), envFor(rel, mode))
				if err != nil {
					t.Fatalf("from the repository: %v", err)
				}
				// The cmp-server's work directory: a random name, the directory's files only.
				alone := filepath.Join(t.TempDir(), "2f1c9a07-9e0b-4d35-a1b2-7c4e5d6f8091")
				if err := os.CopyFS(alone, os.DirFS(filepath.Join(repoAbs, filepath.FromSlash(rel)))); err != nil {
					t.Fatal(err)
				}
				got, err := generateIn(t, alone, envFor(rel, mode))
				if err != nil {
					t.Fatalf("from the directory alone: %v", err)
				}
				if !bytes.Equal(got, full) {
					t.Fatalf("the directory alone renders %d bytes, the repository %d: they differ", len(got), len(full))
				}
			})
		}
	}
}

// TestRenderRefusesAnIncompleteDirectory: a tarball that lacks a file the render
// needs (an exclusion glob or an annotation that leaves it out) fails with the
// file named; it never renders a smaller spoke.
func TestRenderRefusesAnIncompleteDirectory(t *testing.T) {
	src := filepath.Join(exampleRepo, "clusters", "gpu-east-1")
	patch := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: spokeforge-agent, namespace: spokeforge-system}\n" +
		"spec:\n  template:\n    metadata:\n      annotations: {site: ash1}\n"
	for _, tc := range []struct {
		name    string
		modes   []string          // overlays apply in spoke mode only
		drop    []string          // files the tarball lacks
		add     map[string]string // files it holds besides the example's
		wantErr []string
	}{
		{name: "no record", modes: []string{ModeSpoke, ModeHub}, drop: []string{"cluster.yaml"}, wantErr: []string{"clusters/gpu-east-1/cluster.yaml", "file not found"}},
		{name: "a patch the overlay names", modes: []string{ModeSpoke}, add: map[string]string{
			"kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\npatches:\n- path: patches/agent.yaml\n",
		}, wantErr: []string{"patches/agent.yaml"}},
		{name: "a resource the overlay names", modes: []string{ModeSpoke}, add: map[string]string{
			"kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- extra/configmap.yaml\n",
			"patches/agent.yaml": patch,
		}, wantErr: []string{"extra/configmap.yaml"}},
		{name: "a component the overlay names", modes: []string{ModeSpoke}, add: map[string]string{
			"kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\ncomponents:\n- site\n",
		}, wantErr: []string{"site"}},
	} {
		for _, mode := range tc.modes {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "work")
				if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
					t.Fatal(err)
				}
				for _, f := range tc.drop {
					if err := os.Remove(filepath.Join(dir, f)); err != nil {
						t.Fatal(err)
					}
				}
				for f, b := range tc.add {
					if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(dir, f), []byte(b), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				out, err := generateIn(t, dir, envFor("clusters/gpu-east-1", mode))
				if err == nil {
					t.Fatalf("rendered %d bytes from a directory that lacks a file it needs", len(out))
				}
				if len(out) != 0 {
					t.Fatalf("printed %d bytes beside the error", len(out))
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error does not name %q: %v", w, err)
					}
				}
			})
		}
	}
}

// TestHubApplicationsForAFleet: every Application a hub render creates names
// the plugin when it runs one and carries manifest-generate-paths: "." (its
// cluster directory, all a render reads) for the spoke Application, "/" (the
// safe superset) for a workload Application, whose source type spokeforge does
// not know. The two ApplicationSets' templates do the same.
func TestHubApplicationsForAFleet(t *testing.T) {
	repoAbs, err := filepath.Abs(exampleRepo)
	if err != nil {
		t.Fatal(err)
	}
	var apps int
	for _, rel := range exampleClusters(t) {
		out, err := generateIn(t, filepath.Join(repoAbs, filepath.FromSlash(rel)), envFor(rel, ModeHub))
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(out), "\n---\n") {
			var o struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name        string            `json:"name"`
					Annotations map[string]string `json:"annotations"`
				} `json:"metadata"`
				Spec struct {
					Source struct {
						Path   string `json:"path"`
						Plugin *struct {
							Name string `json:"name"`
						} `json:"plugin"`
					} `json:"source"`
				} `json:"spec"`
			}
			if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
				t.Fatal(err)
			}
			if o.Kind != "Application" {
				continue
			}
			apps++
			paths, ok := o.Metadata.Annotations["argocd.argoproj.io/manifest-generate-paths"]
			switch {
			case !ok:
				t.Errorf("%s: Application %s lacks manifest-generate-paths", rel, o.Metadata.Name)
			case o.Spec.Source.Plugin != nil:
				if o.Spec.Source.Plugin.Name != "spokeforge" {
					t.Errorf("%s: Application %s runs plugin %q: an unnamed plugin runs discovery over every tarball", rel, o.Metadata.Name, o.Spec.Source.Plugin.Name)
				}
				if paths != "." || o.Spec.Source.Path != rel {
					t.Errorf("%s: spoke Application %s: path %q, manifest-generate-paths %q; want %q and \".\"", rel, o.Metadata.Name, o.Spec.Source.Path, paths, rel)
				}
			case paths != "/":
				t.Errorf("%s: workload Application %s: manifest-generate-paths %q, want \"/\"", rel, o.Metadata.Name, paths)
			}
		}
	}
	if apps < 4 {
		t.Fatalf("checked %d Applications", apps)
	}
	for f, want := range map[string]string{"clusters-appset.yaml": ".", "zones-appset.yaml": "/"} {
		b, err := os.ReadFile(filepath.Join(repoAbs, "hub", f))
		if err != nil {
			t.Fatal(err)
		}
		var as struct {
			Spec struct {
				Template struct {
					Metadata struct {
						Annotations map[string]string `json:"annotations"`
					} `json:"metadata"`
					Spec struct {
						Source struct {
							Plugin *struct {
								Name string `json:"name"`
							} `json:"plugin"`
						} `json:"source"`
					} `json:"spec"`
				} `json:"template"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(b, &as); err != nil {
			t.Fatal(err)
		}
		tpl := as.Spec.Template
		if got := tpl.Metadata.Annotations["argocd.argoproj.io/manifest-generate-paths"]; got != want {
			t.Errorf("%s: template manifest-generate-paths %q, want %q", f, got, want)
		}
		if p := tpl.Spec.Source.Plugin; p != nil && p.Name == "" {
			t.Errorf("%s: the template's plugin has no name", f)
		}
	}
}
