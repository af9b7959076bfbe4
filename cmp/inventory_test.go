package cmp

import (
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestClusterProfile: the hub render makes the cluster's ClusterProfile only where the hub serves
// multicluster.x-k8s.io/v1alpha1, in the inventory namespace the install names (else Argo CD's),
// and refuses a namespace that is not a namespace name without repeating it.
func TestClusterProfile(t *testing.T) {
	dir := filepath.Join("..", "examples", "gitops", "clusters", "gpu-west-2")
	const withAPI = "v1,external-secrets.io/v1,multicluster.x-k8s.io/v1alpha1"
	cases := []struct {
		name         string
		env          map[string]string
		wantNS       string // "" when no profile is rendered
		refusal      string
		mode         string
		notInRefusal string
	}{
		{name: "the hub does not serve the API", env: map[string]string{"KUBE_API_VERSIONS": "v1,external-secrets.io/v1"}},
		{name: "no KUBE_API_VERSIONS (a local render)", env: map[string]string{}},
		{name: "served: Argo CD's namespace", env: map[string]string{"KUBE_API_VERSIONS": withAPI}, wantNS: "argocd"},
		{name: "served, the Argo CD namespace moved", env: map[string]string{"KUBE_API_VERSIONS": withAPI, "ARGOCD_ENV_ARGOCD_NAMESPACE": "gitops"}, wantNS: "gitops"},
		{name: "the sidecar's namespace", env: map[string]string{"KUBE_API_VERSIONS": withAPI, "SPOKEFORGE_INVENTORY_NAMESPACE": "kueue-system"}, wantNS: "kueue-system"},
		{name: "the Application's over the sidecar's", env: map[string]string{"KUBE_API_VERSIONS": withAPI, "SPOKEFORGE_INVENTORY_NAMESPACE": "kueue-system", "ARGOCD_ENV_INVENTORY_NAMESPACE": "fleet"}, wantNS: "fleet"},
		{name: "not a namespace name", env: map[string]string{"KUBE_API_VERSIONS": withAPI, "ARGOCD_ENV_INVENTORY_NAMESPACE": "Fleet/../kube-system"}, refusal: "the inventory namespace", notInRefusal: "Fleet/"},
		{name: "a YAML break", env: map[string]string{"KUBE_API_VERSIONS": withAPI, "SPOKEFORGE_INVENTORY_NAMESPACE": "fleet\n  x: y"}, refusal: "SPOKEFORGE_INVENTORY_NAMESPACE holds a control"},
		{name: "spoke mode never makes one", env: map[string]string{"KUBE_API_VERSIONS": withAPI, "SPOKEFORGE_IMAGE": "ghcr.io/acme/spokeforge:v1"}, mode: ModeSpoke},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"ARGOCD_APP_SOURCE_REPO_URL": "https://git.example.com/platform/gitops.git", "ARGOCD_APP_SOURCE_PATH": "clusters/gpu-west-2"}
			for k, v := range tc.env {
				env[k] = v
			}
			mode := tc.mode
			if mode == "" {
				mode = ModeHub
			}
			out, err := Generate(dir, mode, func(k string) string { return env[k] })
			if tc.refusal != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refusal) {
					t.Fatalf("err = %v; want %q", err, tc.refusal)
				}
				if tc.notInRefusal != "" && strings.Contains(err.Error(), tc.notInRefusal) {
					t.Errorf("the refusal repeats the value: %v", err)
				}
				if out != nil {
					t.Errorf("output beside a refusal: %q", out)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var profiles []map[string]any
			for _, doc := range strings.Split(string(out), "\n---\n") {
				var o map[string]any
				if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
					t.Fatal(err)
				}
				if o["kind"] == "ClusterProfile" {
					profiles = append(profiles, o)
				}
			}
			if tc.wantNS == "" {
				if len(profiles) != 0 {
					t.Fatalf("a ClusterProfile where none belongs: %v", profiles)
				}
				return
			}
			if len(profiles) != 1 {
				t.Fatalf("%d ClusterProfiles, want 1", len(profiles))
			}
			p := profiles[0]
			md := p["metadata"].(map[string]any)
			spec := p["spec"].(map[string]any)
			labels := md["labels"].(map[string]any)
			if p["apiVersion"] != "multicluster.x-k8s.io/v1alpha1" || md["name"] != "gpu-west-2" || md["namespace"] != tc.wantNS ||
				spec["displayName"] != "gpu-west-2" || spec["clusterManager"].(map[string]any)["name"] != "spokeforge" ||
				labels["x-k8s.io/cluster-manager"] != "spokeforge" || labels["spokeforge.io/cluster"] != "gpu-west-2" {
				t.Fatalf("ClusterProfile %v", p)
			}
			if _, ok := p["status"]; ok {
				t.Error("the render writes status: that is the generator's")
			}
		})
	}
}

// FuzzInventoryNamespace: any inventory namespace is refused with a message that does not repeat
// it, or lands as the ClusterProfile's namespace exactly, a namespace name.
func FuzzInventoryNamespace(f *testing.F) {
	for _, s := range []string{"argocd", "kueue-system", "Fleet", "a/b", "-x", strings.Repeat("a", 64), "x\ny: z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ns string) {
		env := map[string]string{"KUBE_API_VERSIONS": "external-secrets.io/v1,multicluster.x-k8s.io/v1alpha1",
			"ARGOCD_APP_SOURCE_REPO_URL": "https://git.example.com/gitops.git", "SPOKEFORGE_INVENTORY_NAMESPACE": ns}
		_, opts, err := renderOptions(ModeHub, func(k string) string { return env[k] })
		if ns == "" {
			if err != nil || opts.InventoryNamespace != "argocd" {
				t.Fatalf("empty: %q, %v", opts.InventoryNamespace, err)
			}
			return
		}
		if err != nil {
			if len(ns) > 3 && strings.Contains(err.Error(), ns) {
				t.Fatalf("the refusal repeats the value: %v", err)
			}
			return
		}
		if opts.InventoryNamespace != ns || !namespaceName.MatchString(ns) || len(ns) > 63 {
			t.Fatalf("accepted %q as %q", ns, opts.InventoryNamespace)
		}
	})
}
