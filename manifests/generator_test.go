package manifests_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// buildGenerator builds manifests/generator with kustomize from a copy, with a token file
// when token is set (the admin creates it; it is never committed).
func buildGenerator(t *testing.T, token string) (resmap.ResMap, error) {
	t.Helper()
	dir := t.TempDir()
	entries, err := os.ReadDir("generator")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() || e.Name() == "token" {
			continue
		}
		b, err := os.ReadFile(filepath.Join("generator", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if token != "" {
		if err := os.WriteFile(filepath.Join(dir, "token"), []byte(token), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
}

func TestGeneratorBundle(t *testing.T) {
	if _, err := buildGenerator(t, ""); err == nil {
		t.Fatal("built without a token file: the token must come from a file the admin creates")
	}
	m, err := buildGenerator(t, "s3cr3t-token-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	objs := map[string]map[string]any{}
	for _, r := range m.Resources() {
		b, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		var o map[string]any
		if err := yaml.Unmarshal(b, &o); err != nil {
			t.Fatal(err)
		}
		if ns := r.GetNamespace(); ns != "argocd" {
			t.Errorf("%s/%s in namespace %q, want argocd", r.GetKind(), r.GetName(), ns)
		}
		objs[r.GetKind()+"/"+r.GetName()] = o
	}
	for _, k := range []string{"Deployment/spokeforge-generator", "Service/spokeforge-generator", "ConfigMap/spokeforge-generator",
		"Secret/spokeforge-generator-token", "ServiceAccount/spokeforge-generator", "Role/spokeforge-generator", "RoleBinding/spokeforge-generator",
		"PodDisruptionBudget/spokeforge-generator"} {
		if objs[k] == nil {
			t.Errorf("bundle lacks %s", k)
		}
	}
	for k := range objs {
		if strings.HasPrefix(k, "ClusterRole") {
			t.Errorf("bundle has %s: RBAC must stay in the Argo CD namespace", k)
		}
	}
	// The ConfigMap's token reference, $<secret>:<key>, names the Secret (test/conformance-v3
	// resolves the shipped ConfigMap through Argo CD's own generator).
	cm := objs["ConfigMap/spokeforge-generator"]["data"].(map[string]any)
	secretName, key, _ := strings.Cut(strings.TrimPrefix(cm["token"].(string), "$"), ":")
	sec := objs["Secret/"+secretName]
	if sec == nil || !strings.HasPrefix(cm["token"].(string), "$") {
		t.Fatalf("ConfigMap token %q does not name the generated Secret", cm["token"])
	}
	if _, ok := sec["data"].(map[string]any)[strings.TrimPrefix(key, "$")]; !ok {
		t.Errorf("Secret %s has no key %s", secretName, key)
	}
	if sec["metadata"].(map[string]any)["labels"].(map[string]any)["app.kubernetes.io/part-of"] != "argocd" {
		t.Error("the token Secret lacks app.kubernetes.io/part-of: argocd (newer Argo CD only reads labelled Secrets)")
	}
	if cm["baseUrl"] != "http://spokeforge-generator:4355" || cm["requestTimeout"] == nil {
		t.Errorf("ConfigMap data %v", cm)
	}
	// The example ApplicationSets name this ConfigMap.
	for _, f := range []string{"clusters-appset.yaml", "zones-appset.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "examples", "gitops", "hub", f))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "name: spokeforge-generator\n") {
			t.Errorf("%s does not reference ConfigMap spokeforge-generator", f)
		}
	}
	dep, _ := yaml.Marshal(objs["Deployment/spokeforge-generator"])
	for _, w := range []string{"runAsNonRoot: true", "readOnlyRootFilesystem: true", "allowPrivilegeEscalation: false",
		"path: /readyz", "path: /healthz", "memory: 1Gi", "secretName: spokeforge-generator-token", "--token-file=/var/run/spokeforge/token/token", "- generator",
		"replicas: 2", "podAntiAffinity", "topologyKey: kubernetes.io/hostname", "--confirm-head=true", "maxUnavailable: 0"} {
		if !strings.Contains(string(dep), w) {
			t.Errorf("Deployment lacks %q", w)
		}
	}
	// The budget keeps one of the two replicas through voluntary disruptions.
	pdb, _ := yaml.Marshal(objs["PodDisruptionBudget/spokeforge-generator"])
	for _, w := range []string{"minAvailable: 1", "app.kubernetes.io/name: spokeforge-generator"} {
		if !strings.Contains(string(pdb), w) {
			t.Errorf("PodDisruptionBudget lacks %q", w)
		}
	}
	role, _ := yaml.Marshal(objs["Role/spokeforge-generator"])
	for _, bad := range []string{"create", "update", "patch", "delete", "'*'"} {
		if strings.Contains(string(role), bad) {
			t.Errorf("Role grants %s", bad)
		}
	}
}

// TestGeneratorInventoryComponent builds manifests/generator with its inventory component, as
// an overlay would: the args, the Secret volume, and RBAC that patches only profiles' status.
func TestGeneratorInventoryComponent(t *testing.T) {
	root := t.TempDir()
	copyDir := func(from, to string) {
		entries, err := os.ReadDir(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(to, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() || e.Name() == "token" {
				continue
			}
			b, err := os.ReadFile(filepath.Join(from, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	copyDir("generator", filepath.Join(root, "generator"))
	copyDir(filepath.Join("generator", "inventory"), filepath.Join(root, "generator", "inventory"))
	if err := os.WriteFile(filepath.Join(root, "generator", "token"), []byte("s3cr3t-token-0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	overlay := filepath.Join(root, "overlay")
	if err := os.MkdirAll(overlay, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte("resources: [../generator]\ncomponents: [../generator/inventory]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), overlay)
	if err != nil {
		t.Fatal(err)
	}
	objs := map[string]string{}
	for _, r := range m.Resources() {
		b, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		objs[r.GetKind()+"/"+r.GetName()] = string(b)
		if r.GetNamespace() != "argocd" {
			t.Errorf("%s/%s in namespace %q, want argocd", r.GetKind(), r.GetName(), r.GetNamespace())
		}
	}
	dep := objs["Deployment/spokeforge-generator"]
	for _, w := range []string{"--inventory-namespace=$(POD_NAMESPACE)", "--argocd-server=https://argocd-server.$(POD_NAMESPACE).svc",
		"--argocd-token-file=/var/run/spokeforge/argocd/token", "--argocd-ca-file=/var/run/spokeforge/argocd/ca.crt",
		"secretName: spokeforge-generator-argocd", "mountPath: /var/run/spokeforge/argocd", "--token-file=/var/run/spokeforge/token/token"} {
		if !strings.Contains(dep, w) {
			t.Errorf("Deployment lacks %q", w)
		}
	}
	role := objs["Role/spokeforge-generator-inventory"]
	var r struct {
		Rules []struct {
			APIGroups, Resources, Verbs []string
		}
	}
	if err := yaml.Unmarshal([]byte(role), &r); err != nil || len(r.Rules) != 2 {
		t.Fatalf("Role spokeforge-generator-inventory: %v\n%s", err, role)
	}
	for _, rule := range r.Rules {
		for _, v := range rule.Verbs {
			if (v == "patch") != (strings.Join(rule.Resources, ",") == "clusterprofiles/status") || v == "create" || v == "delete" || v == "update" {
				t.Errorf("Role grants %s on %v", v, rule.Resources)
			}
		}
	}
	if objs["RoleBinding/spokeforge-generator-inventory"] == "" {
		t.Error("no RoleBinding for the inventory Role")
	}
}
