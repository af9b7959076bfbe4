package hubpolicy

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const root = "../.."

// TestDocsReproduceTheLists: docs/security.md's "Hub objects" names every
// kind and platform namespace the data here allows or reserves, so the
// lists a reader sees are the ones enforced.
func TestDocsReproduceTheLists(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "docs", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "## Hub objects")
	if start < 0 {
		t.Fatal(`docs/security.md has no "## Hub objects"`)
	}
	section := doc[start:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	for _, l := range [][]GroupKind{SpokeKinds, ZoneKinds} {
		seen := map[GroupKind]bool{}
		for _, k := range l {
			if seen[GroupKind{Group: k.Group, Kind: k.Kind}] {
				t.Errorf("%s/%s is listed twice", k.Group, k.Kind)
			}
			seen[GroupKind{Group: k.Group, Kind: k.Kind}] = true
			if !strings.Contains(section, k.Kind+"`") {
				t.Errorf("docs/security.md, Hub objects: no `%s`", k.Kind)
			}
			if k.Group != "" && !strings.Contains(section, "`"+k.Group+"/") {
				t.Errorf("docs/security.md, Hub objects: no group %s", k.Group)
			}
		}
	}
	for _, ns := range append(PlatformNamespaces, PlatformNamespacePrefix+"*") {
		if !strings.Contains(section, "`"+ns+"`") {
			t.Errorf("docs/security.md, Hub objects: no platform namespace `%s`", ns)
		}
	}
	for k, v := range ZoneNamespaceLabels {
		if !strings.Contains(section, "`"+v+"`") || !strings.Contains(section, strings.TrimPrefix(k, "pod-security.kubernetes.io/")) {
			t.Errorf("docs/security.md, Hub objects: no %s=%s", k, v)
		}
	}
}

// TestHubStoreServesArgoCDOnly: the documented hub store (docs/install.md
// and examples/install/hub-store, the same object) is usable from Argo
// CD's namespace only, so a zone's ExternalSecret elsewhere gets nothing.
func TestHubStoreServesArgoCDOnly(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "examples", "install", "hub-store", "cluster-secret-store.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var example map[string]any
	if err := yaml.UnmarshalStrict(b, &example); err != nil {
		t.Fatal(err)
	}
	if example["kind"] != "ClusterSecretStore" || example["metadata"].(map[string]any)["name"] != "spokeforge-hub" {
		t.Fatalf("the example is not the ClusterSecretStore spokeforge-hub: %v", example)
	}
	spec, _ := example["spec"].(map[string]any)
	want := []any{map[string]any{"namespaces": []any{"argocd"}}}
	if !reflect.DeepEqual(spec["conditions"], want) {
		t.Errorf("spec.conditions = %v, want %v: only Argo CD's namespace may read through the hub store", spec["conditions"], want)
	}

	b, err = os.ReadFile(filepath.Join(root, "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "kind: ClusterSecretStore")
	if i < 0 {
		t.Fatal("docs/install.md shows no ClusterSecretStore")
	}
	open := strings.LastIndex(doc[:i], "```yaml\n")
	end := strings.Index(doc[i:], "```")
	if open < 0 || end < 0 {
		t.Fatal("docs/install.md: the ClusterSecretStore is not in a yaml block")
	}
	var shown map[string]any
	if err := yaml.Unmarshal([]byte(dedent(doc[open+len("```yaml\n"):i+end])), &shown); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(shown, example) {
		t.Errorf("docs/install.md shows\n%v\nexamples/install/hub-store holds\n%v", shown, example)
	}
}

// dedent removes the indentation of a list item's code block.
func dedent(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "   ")
	}
	return strings.Join(lines, "\n")
}
