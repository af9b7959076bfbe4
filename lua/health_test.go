// The tests here need no Argo CD: the scripts' sources and their sfcore copies, and the
// argocd-cm Component generated from them. The scripts' fixtures, actions and benchmarks run
// through Argo CD v3.6.2's Lua VM in test/conformance-v3/lua, a module of its own.

package lua

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite manifests/argocd-cm from lua/")

const componentDir = "../manifests/argocd-cm"

func loadScripts(t testing.TB) []Script {
	t.Helper()
	scripts, err := LoadScripts(".")
	if err != nil {
		t.Fatal(err)
	}
	return scripts
}

func TestSFCoreCopiesInSync(t *testing.T) {
	lib, err := os.ReadFile(filepath.Join("_lib", "sfcore.lua"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range loadScripts(t) {
		want, err := SyncLib(string(lib), s.Source)
		if err != nil {
			t.Fatalf("%s: %v", s.Dir, err)
		}
		if want != s.Source {
			t.Errorf("%s: its sfcore block is not the helpers of _lib/sfcore.lua it uses; run go run ./lua/gen", s.Dir)
		}
	}
}

func TestNoStringOrMathLibrary(t *testing.T) {
	for _, s := range loadScripts(t) {
		for _, lib := range []string{"string.", "math.", ":sub(", ":find(", ":match(", ":gsub(", ":len(", ":byte("} {
			for n, line := range strings.Split(s.Source+"\n"+s.Fast, "\n") {
				code := line
				if k := strings.Index(code, "--"); k >= 0 {
					code = code[:k]
				}
				if strings.Contains(code, lib) {
					t.Errorf("%s/health.lua:%d uses %q, unavailable in the default sandbox", s.Dir, n+1, lib)
				}
			}
		}
	}
}

func TestArgoCDComponentUpToDate(t *testing.T) {
	scripts := loadScripts(t)
	files, err := RenderComponent(scripts)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		path := filepath.Join(componentDir, name)
		if *update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale; run `go run ./lua/gen` (or go test ./lua -run TestArgoCDComponentUpToDate -update)", path)
		}
	}
	// The patch must round-trip through a YAML parser to exactly the scripts.
	b, err := os.ReadFile(filepath.Join(componentDir, PatchFile))
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(b, &cm); err != nil {
		t.Fatal(err)
	}
	keys := len(scripts)
	for _, s := range scripts {
		shipped, err := s.Shipped()
		if err != nil {
			t.Fatal(err)
		}
		if cm.Data[s.Key()] != shipped {
			t.Errorf("%s does not round-trip to %s/health.lua, minified", s.Key(), s.Dir)
		}
		if s.Actions != "" {
			keys++
			if cm.Data[s.ActionsKey()] != s.Actions {
				t.Errorf("%s does not round-trip to %s/actions", s.ActionsKey(), s.Dir)
			}
		}
	}
	if len(cm.Data) != keys {
		t.Errorf("patch has %d keys, want %d", len(cm.Data), keys)
	}
	if _, ok := cm.Data["resource.customizations.health.argoproj.io_Application"]; !ok {
		t.Error("missing resource.customizations.health.argoproj.io_Application")
	}
}

// TestComponentPatchesExistingArgoCDCM builds an overlay with kustomize the
// way `kubectl apply -k` does: a user-provided argocd-cm plus the component.
// The result must keep the user's keys, add ours and not enable open libs.
func TestComponentPatchesExistingArgoCDCM(t *testing.T) {
	tmp := t.TempDir()
	comp := filepath.Join(tmp, "argocd-cm")
	overlay := filepath.Join(tmp, "overlay")
	for _, d := range []string{comp, overlay} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{KustomizationFile, PatchFile} {
		b, err := os.ReadFile(filepath.Join(componentDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(comp, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(overlay, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("argocd-cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: argocd-cm\n  namespace: argocd\n  labels:\n    app.kubernetes.io/part-of: argocd\ndata:\n  url: https://argocd.example.com\n")
	write("kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- argocd-cm.yaml\ncomponents:\n- ../argocd-cm\n")
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), overlay)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.Resources()); n != 1 {
		t.Fatalf("got %d resources, want the single patched argocd-cm", n)
	}
	out, err := res.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(out, &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Data["url"] != "https://argocd.example.com" || cm.Metadata.Labels["app.kubernetes.io/part-of"] != "argocd" {
		t.Errorf("existing argocd-cm content was not preserved:\n%s", out)
	}
	for _, s := range loadScripts(t) {
		if shipped, err := s.Shipped(); err != nil || cm.Data[s.Key()] != shipped {
			t.Errorf("%s missing or altered after kustomize build (%v)", s.Key(), err)
		}
	}
	for k := range cm.Data {
		if strings.HasPrefix(k, "resource.customizations.useOpenLibs.") {
			t.Errorf("component must not set %s", k)
		}
	}
}
