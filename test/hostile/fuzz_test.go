package hostile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzValidateMatchesRender writes arbitrary bytes as a repo's only cluster
// record: validate must accept it exactly when render accepts it in spoke
// and hub mode, and a refusal prints nothing on stdout. The repo holds no
// secret files, so validate's findings that a listed secret has no file
// (which render does not read) are set aside.
func FuzzValidateMatchesRender(f *testing.F) {
	for _, name := range []string{"gpu-east-1", "gpu-west-2", "hub-local"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", "gitops", "clusters", name, "cluster.yaml"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add("apiVersion: spokeforge.io/v1alpha1\nkind: Cluster\nmetadata: {name: x, labels: {\"a\\n---\": b}}\n")
	f.Add("---\n---\n")
	f.Add("\x00")
	f.Fuzz(func(t *testing.T, record string) {
		root := t.TempDir()
		dir := filepath.Join(root, "clusters", "gpu-east-1")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte(record), 0o644); err != nil {
			t.Fatal(err)
		}
		vcode, vout, verr := run("validate", root)
		t.Setenv("ARGOCD_APP_SOURCE_REPO_URL", "https://git.example.com/gitops.git")
		t.Setenv("SPOKEFORGE_IMAGE", testImage)
		// The hub serves the cluster inventory API: hub renders also make the ClusterProfile.
		t.Setenv("KUBE_API_VERSIONS", "v1,external-secrets.io/v1,multicluster.x-k8s.io/v1alpha1")
		renders := 0
		for _, mode := range []string{"spoke", "hub"} {
			code, out, errs := run("render", "--mode", mode, dir)
			if code != 0 && out != "" {
				t.Fatalf("render --mode %s failed (%s) and printed %d bytes", mode, errs, len(out))
			}
			if code == 0 {
				renders++
			}
		}
		switch {
		case vcode == 0 && renders != 2:
			t.Fatalf("validate accepted (%s) what render refused", vout)
		case vcode != 0 && renders == 2 && !onlyMissingSecretFiles(verr):
			t.Fatalf("validate refused what render accepted: %s", verr)
		}
	})
}

// onlyMissingSecretFiles reports whether validate's findings are all "the
// secret X has no file" or "spec.org: unknown org" (plus the count line):
// the rules that need files beyond the cluster directory, which a render
// of that directory does not read (the fuzzed repo has no orgs/; Argo CD
// enforces the org's allowlist again through the AppProject's destinations).
func onlyMissingSecretFiles(findings string) bool {
	lines := strings.Split(strings.TrimSpace(findings), "\n")
	for _, l := range lines[:len(lines)-1] {
		secret := strings.Contains(l, ": the secret ") && strings.Contains(l, " has no file clusters/")
		org := strings.Contains(l, ": spec.org: unknown org ")
		if !secret && !org {
			return false
		}
	}
	return len(lines) > 1
}
