package cmp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spokeforge/spokeforge/cmp/render"
	"github.com/spokeforge/spokeforge/internal/repo"
	"github.com/spokeforge/spokeforge/internal/validate"
)

// TestHubPolicyHoldsWithoutRecordChecks is the second layer of the
// management-cluster rules: validation refuses a record named in-cluster or
// whose server is the hub under another spelling, and should it miss one,
// render still treats the record as landing on the hub. Here the record
// checks are bypassed (the loaded record is changed after validation): an
// overlay that makes spokeforge's own pods privileged is refused, as it is
// for an inCluster record, while the same overlay on the untouched spoke
// record renders.
func TestHubPolicyHoldsWithoutRecordChecks(t *testing.T) {
	root := filepath.Join(t.TempDir(), "gpu-east-1")
	if err := os.CopyFS(root, os.DirFS(filepath.Join("..", "examples", "gitops", "clusters", "gpu-east-1"))); err != nil {
		t.Fatal(err)
	}
	patch := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: spokeforge-credentials, namespace: spokeforge-system}\n" +
		"spec:\n  template:\n    spec:\n      hostPID: true\n      containers:\n      - name: credentials\n        securityContext: {privileged: true}\n"
	kust := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\npatches:\n- path: privileged.yaml\n"
	for name, b := range map[string]string{"kustomization.yaml": kust, "privileged.yaml": patch} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opts := render.Options{Image: "ghcr.io/spokeforge/spokeforge:test", ArgoNamespace: "argocd", HubSecretStore: "spokeforge-hub",
		RepoURL: "https://git.example.com/gitops.git", TargetRevision: "HEAD", ESOVersion: "external-secrets.io/v1"}
	for _, tc := range []struct {
		name   string
		tamper func(e *validate.ClusterEntry)
		refuse bool
	}{
		{"a spoke (control)", func(*validate.ClusterEntry) {}, false},
		{"named in-cluster", func(e *validate.ClusterEntry) { e.Cluster.Metadata.Name = validate.InClusterName }, true},
		{"server is the in-cluster URL", func(e *validate.ClusterEntry) {
			e.Cluster.Spec.Connection.Server = "https://kubernetes.default.svc/"
		}, true},
		{"server is kubernetes.default", func(e *validate.ClusterEntry) { e.Cluster.Spec.Connection.Server = "https://kubernetes.default:443" }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, errs := repo.LoadCluster(root, "clusters/gpu-east-1")
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			tc.tamper(&e)
			out, err := renderCluster(e, root, "clusters/gpu-east-1", ModeSpoke, opts)
			switch {
			case tc.refuse && err == nil:
				t.Fatalf("rendered %d bytes onto the management cluster with a privileged spokeforge pod", len(out))
			case tc.refuse && !strings.Contains(err.Error(), "privileged") && !strings.Contains(err.Error(), "host"):
				t.Fatalf("refused for another reason: %v", err)
			case tc.refuse && out != nil:
				t.Fatalf("refusal with output")
			case !tc.refuse && err != nil:
				t.Fatalf("the spoke's overlay was refused: %v", err)
			}
		})
	}
}
