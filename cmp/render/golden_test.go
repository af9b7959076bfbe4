package render_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/spokeforge/spokeforge/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files under examples/gitops/rendered")

const exampleRepo = "../../examples/gitops"

// buildEnv is what Argo CD's repo-server passes a plugin for an example app.
func buildEnv(path string, extra map[string]string) func(string) string {
	env := map[string]string{
		"ARGOCD_APP_NAME":                   "example",
		"ARGOCD_APP_SOURCE_REPO_URL":        "https://git.example.com/platform/gitops.git",
		"ARGOCD_APP_SOURCE_TARGET_REVISION": "main",
		"ARGOCD_APP_SOURCE_PATH":            path,
		"KUBE_VERSION":                      "1.31.0",
		"KUBE_API_VERSIONS":                 "v1,apps/v1,external-secrets.io/v1,external-secrets.io/v1beta1,cert-manager.io/v1",
		// What manifests/cmp's sidecar sets (the install replaces it with its own image).
		"SPOKEFORGE_IMAGE": "ghcr.io/spokeforge/spokeforge:v0.1.0-dev",
	}
	for k, v := range extra {
		env[k] = v
	}
	return func(k string) string { return env[k] }
}

func TestGolden(t *testing.T) {
	cases := []struct{ name, dir, mode string }{
		{"hub-local.spoke", "clusters/hub-local", "spoke"},
		{"hub-local.hub", "clusters/hub-local", "hub"},
		{"gpu-east-1.spoke", "clusters/gpu-east-1", "spoke"},
		{"gpu-east-1.hub", "clusters/gpu-east-1", "hub"},
		{"gpu-west-2.spoke", "clusters/gpu-west-2", "spoke"},
		{"gpu-west-2.hub", "clusters/gpu-west-2", "hub"},
		{"projects", ".", "projects"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(exampleRepo, tc.dir)
			got, err := cmp.Generate(dir, tc.mode, buildEnv(tc.dir, nil))
			if err != nil {
				t.Fatal(err)
			}
			again, _ := cmp.Generate(dir, tc.mode, buildEnv(tc.dir, nil))
			if !bytes.Equal(got, again) {
				t.Fatal("two renders of the same input differ")
			}
			golden := filepath.Join(exampleRepo, "rendered", tc.name+".yaml")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./cmp/render -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("render of %s (mode %s) differs from %s; run go test ./cmp/render -update and review the diff", tc.dir, tc.mode, golden)
			}
		})
	}
}
