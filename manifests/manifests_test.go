package manifests_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/spokeforge/spokeforge/cmp"
	"github.com/spokeforge/spokeforge/manifests"
)

func TestPluginCopyMatchesSource(t *testing.T) {
	got, err := os.ReadFile("cmp/plugin.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, cmp.PluginYAML) {
		t.Fatal("manifests/cmp/plugin.yaml differs from cmp/plugin.yaml: cp cmp/plugin.yaml manifests/cmp/")
	}
}

// TestCMPComponentBuilds applies the component to a minimal repo-server
// Deployment, as an Argo CD install overlay would, with kustomize itself.
func TestCMPComponentBuilds(t *testing.T) {
	fs := filesys.MakeFsOnDisk()
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	wd, _ := os.Getwd()
	rel, err := filepath.Rel(dir, filepath.Join(wd, "cmp"))
	must(err)
	must(os.WriteFile(dir+"/repo-server.yaml", []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: argocd-repo-server, namespace: argocd}
spec:
  selector: {matchLabels: {app: r}}
  template:
    metadata: {labels: {app: r}}
    spec:
      containers: [{name: argocd-repo-server, image: quay.io/argoproj/argocd:v2.14.21}]
      volumes: [{name: var-files, emptyDir: {}}, {name: plugins, emptyDir: {}}]
`), 0o644))
	must(os.WriteFile(dir+"/kustomization.yaml", []byte("resources: [repo-server.yaml]\ncomponents: ["+rel+"]\n"), 0o644))
	opts := krusty.MakeDefaultOptions()
	opts.LoadRestrictions = 0 // LoadRestrictionsNone: the component lives outside the temp overlay
	m, err := krusty.MakeKustomizer(opts).Run(fs, dir)
	must(err)
	out, err := m.AsYaml()
	must(err)
	for _, w := range []string{"name: spokeforge", "/var/run/argocd/argocd-cmp-server", "runAsUser: 999", "subPath: plugin.yaml", "kind: ConfigMap", "name: spokeforge-cmp-plugin", "mountPath: /tmp"} {
		if !strings.Contains(string(out), w) {
			t.Errorf("built overlay lacks %q", w)
		}
	}
}

// TestOnboardingCRDGenerated regenerates the CRD from internal/api/v1alpha1
// with controller-gen (pinned in hack/tools) and fails on any drift.
func TestOnboardingCRDGenerated(t *testing.T) {
	if testing.Short() {
		t.Skip("builds controller-gen")
	}
	out, err := exec.Command("../hack/controller-gen.sh", "crd:crdVersions=v1", "paths=./internal/api/v1alpha1/...", "output:crd:stdout").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("controller-gen: %v: %s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	got, err := os.ReadFile("crds/onboarding.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, out) {
		t.Fatal("manifests/crds/onboarding.yaml differs from what internal/api/v1alpha1 generates: run make generate")
	}
	if !bytes.Equal(got, manifests.OnboardingCRD) {
		t.Fatal("the embedded CRD is stale")
	}
}
