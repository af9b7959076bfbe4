package conformance

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// moduleDir is the module cache folder of an Argo CD release (go mod download).
func moduleDir(t *testing.T, modVersion string) string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", modVersion)
	cmd.Dir = os.TempDir() // outside any module: no go.mod or go.sum is touched
	out, err := cmd.Output()
	var info struct{ Dir string }
	if err != nil || json.Unmarshal(out, &info) != nil || info.Dir == "" {
		t.Fatalf("go mod download %s: %v", modVersion, err)
	}
	return info.Dir
}

// TestInstallOnReleaseManifests builds README's install overlay — the release's
// manifests/install.yaml with spokeforge's CMP sidecar, argocd-cm and UI extension Components — for each
// supported Argo CD release, and checks that the sidecar finds what it relies on in that
// release's argocd-repo-server (the volumes var-files and plugins, the copyutil init container
// that puts argocd-cmp-server into var-files) and that the health checks join the release's own
// argocd-cm defaults (v3 ships ignoreResourceUpdates and exclusions there) instead of replacing
// them. The releases: v3.6.2, whose code this module builds, and v3.4.7 (its manifests only);
// v2.14 and v3.2, out of upstream support, are no longer checked here.
func TestInstallOnReleaseManifests(t *testing.T) {
	root, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, release := range []string{"github.com/argoproj/argo-cd/v3@v3.6.2", "github.com/argoproj/argo-cd/v3@v3.4.7"} {
		t.Run(release, func(t *testing.T) {
			install := filepath.Join(moduleDir(t, release), "manifests", "install.yaml")
			dir := t.TempDir()
			b, err := os.ReadFile(install)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "install.yaml"), b, 0o644); err != nil {
				t.Fatal(err)
			}
			var components []string
			for _, c := range []string{"cmp", "argocd-cm", "ui-extension"} {
				rel, err := filepath.Rel(dir, filepath.Join(root, "manifests", c)) // kustomize takes relative paths only
				if err != nil {
					t.Fatal(err)
				}
				components = append(components, rel)
			}
			kust := "namespace: argocd\nresources: [install.yaml]\ncomponents: [" + strings.Join(components, ", ") + "]\n"
			if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kust), 0o644); err != nil {
				t.Fatal(err)
			}
			opts := krusty.MakeDefaultOptions()
			opts.LoadRestrictions = 0 // the install and the Components live outside the overlay
			m, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), dir)
			if err != nil {
				t.Fatalf("kustomize build of the install overlay: %v", err)
			}
			var repo, cm, params map[string]any
			for _, r := range m.Resources() {
				obj, err := r.Map()
				if err != nil {
					t.Fatal(err)
				}
				switch r.GetKind() + "/" + r.GetName() {
				case "Deployment/argocd-repo-server":
					repo = obj
				case "ConfigMap/argocd-cm":
					cm = obj
				case "ConfigMap/argocd-cmd-params-cm":
					params = obj
				}
			}
			if repo == nil || cm == nil {
				t.Fatal("the install has no argocd-repo-server Deployment or argocd-cm")
			}
			var dep struct {
				Spec struct {
					Template struct {
						Spec struct {
							InitContainers []struct {
								Name          string
								Command, Args []string
								VolumeMounts  []struct{ Name, MountPath string } `json:"volumeMounts"`
							} `json:"initContainers"`
							Containers []struct {
								Name         string
								Command      []string
								VolumeMounts []struct{ Name, MountPath string } `json:"volumeMounts"`
								Env          []struct {
									Name      string
									ValueFrom *struct {
										ConfigMapKeyRef *struct{ Name, Key string } `json:"configMapKeyRef"`
									} `json:"valueFrom"`
								}
							}
							Volumes []struct{ Name string }
						}
					}
				}
			}
			b, _ = json.Marshal(repo)
			if err := json.Unmarshal(b, &dep); err != nil {
				t.Fatal(err)
			}
			pod := dep.Spec.Template.Spec
			volumes := map[string]bool{}
			for _, v := range pod.Volumes {
				volumes[v.Name] = true
			}
			var sidecar bool
			for _, c := range pod.Containers {
				if c.Name != "spokeforge" {
					continue
				}
				sidecar = true
				varFiles := false
				for _, vm := range c.VolumeMounts {
					if !volumes[vm.Name] {
						t.Errorf("the sidecar mounts %s, which the %s repo-server does not have", vm.Name, release)
					}
					varFiles = varFiles || vm.Name == "var-files" && vm.MountPath == "/var/run/argocd"
				}
				// Where the init container wrote it: since v3.4 argocd-cmp-server is a symlink to
				// /var/run/argocd/argocd, which must resolve in the sidecar too.
				if !varFiles {
					t.Error("the sidecar does not mount var-files at /var/run/argocd")
				}
				if len(c.Command) == 0 || c.Command[0] != "/var/run/argocd/argocd-cmp-server" {
					t.Errorf("sidecar command %v", c.Command)
				}
			}
			if !sidecar {
				t.Error("no spokeforge sidecar in argocd-repo-server")
			}
			// The fleet settings manifests/cmp puts in argocd-cmd-params-cm reach the repo-server
			// through the release's own env mapping.
			pdata, _ := params["data"].(map[string]any)
			for key, env := range map[string]string{
				"reposerver.plugin.use.manifest.generate.paths": "ARGOCD_REPO_SERVER_PLUGIN_USE_MANIFEST_GENERATE_PATHS",
				"reposerver.plugin.tar.exclusions":              "ARGOCD_REPO_SERVER_PLUGIN_TAR_EXCLUSIONS",
			} {
				if pdata[key] == nil {
					t.Errorf("argocd-cmd-params-cm lacks %s", key)
				}
				mapped := false
				for _, c := range pod.Containers {
					for _, e := range c.Env {
						if c.Name == "argocd-repo-server" && e.Name == env && e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil &&
							e.ValueFrom.ConfigMapKeyRef.Name == "argocd-cmd-params-cm" && e.ValueFrom.ConfigMapKeyRef.Key == key {
							mapped = true
						}
					}
				}
				if !mapped {
					t.Errorf("the %s repo-server does not read %s from argocd-cmd-params-cm %s", release, env, key)
				}
			}
			if pdata["reposerver.plugin.use.manifest.generate.paths"] != "true" {
				t.Errorf("argocd-cmd-params-cm: reposerver.plugin.use.manifest.generate.paths = %v", pdata["reposerver.plugin.use.manifest.generate.paths"])
			}
			var copies bool
			for _, ic := range pod.InitContainers {
				// v3.2 copies the binary with command [/bin/cp, -n, …, /var/run/argocd/argocd-cmp-server];
				// v3.4 and later run sh -c with args: a copy to /var/run/argocd/argocd and
				// ln -sf /var/run/argocd/argocd /var/run/argocd/argocd-cmp-server.
				run := strings.Join(append(ic.Command, ic.Args...), " ")
				for _, vm := range ic.VolumeMounts {
					if vm.Name == "var-files" && vm.MountPath == "/var/run/argocd" && strings.Contains(run, "/var/run/argocd/argocd-cmp-server") {
						copies = true
					}
				}
			}
			if !copies {
				t.Errorf("no init container of the %s repo-server puts argocd-cmp-server into var-files", release)
			}
			data, _ := cm["data"].(map[string]any)
			if _, ok := data["resource.customizations.health.spokeforge.io_Onboarding"]; !ok {
				t.Error("argocd-cm lacks spokeforge's Onboarding health check")
			}
			shipped, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(install)), "manifests", "base", "config", "argocd-cm.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			var base struct{ Data map[string]string }
			if err := yaml.Unmarshal(shipped, &base); err != nil {
				t.Fatal(err)
			}
			for k := range base.Data {
				if _, ok := data[k]; !ok {
					t.Errorf("argocd-cm lost the release's default %s", k)
				}
			}
			t.Logf("%s: argocd-cm has %d keys of the release and %d in all", release, len(base.Data), len(data))
		})
	}
}

// TestInstallExample builds docs/install.md's overlays as a user applies them: examples/install/hub
// on each release's install.yaml (its resources URL pointed at the module's copy, as no network is
// read here) and examples/install/generator with a token file. The images a user sets are the only
// spokeforge images in the output, the agent image reaches the sidecar's SPOKEFORGE_IMAGE once, and
// the generator reads the repo the overlay names.
func TestInstallExample(t *testing.T) {
	root, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	const (
		cmpImage   = "registry.example.com/platform/spokeforge-cmp:v0.1.0"
		agentImage = "registry.example.com/platform/spokeforge:v0.1.0"
		repoArg    = "--repo=https://github.com/acme/platform-gitops.git"
	)
	// memFS holds the repository's manifests/ and examples/install/ at their paths under /repo.
	memFS := func(t *testing.T) filesys.FileSystem {
		fs := filesys.MakeFsInMemory()
		for _, dir := range []string{"manifests/cmp", "manifests/argocd-cm", "manifests/ui-extension", "manifests/generator", "examples/install/hub", "examples/install/generator"} {
			ents, err := os.ReadDir(filepath.Join(root, dir))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				if e.IsDir() || e.Name() == "token" {
					continue
				}
				b, err := os.ReadFile(filepath.Join(root, dir, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				if err := fs.WriteFile("/repo/"+dir+"/"+e.Name(), b); err != nil {
					t.Fatal(err)
				}
			}
		}
		return fs
	}
	build := func(t *testing.T, fs filesys.FileSystem, dir string) []map[string]any {
		t.Helper()
		m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, dir)
		if err != nil {
			t.Fatalf("kustomize build %s: %v", dir, err)
		}
		var out []map[string]any
		for _, r := range m.Resources() {
			obj, err := r.Map()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, obj)
			b, _ := yaml.Marshal(obj)
			if strings.Contains(string(b), "ghcr.io/spokeforge") {
				t.Errorf("%s %s still names an image of ghcr.io/spokeforge, which no registry holds", r.GetKind(), r.GetName())
			}
		}
		return out
	}
	type container struct {
		Name  string
		Image string
		Args  []string
		Env   []struct{ Name, Value string }
	}
	containersOf := func(t *testing.T, objs []map[string]any, kind, name string) []container {
		t.Helper()
		for _, o := range objs {
			md, _ := o["metadata"].(map[string]any)
			if o["kind"] != kind || md["name"] != name {
				continue
			}
			var d struct {
				Spec struct {
					Template struct {
						Spec struct{ Containers []container }
					}
				}
			}
			b, _ := json.Marshal(o)
			if err := json.Unmarshal(b, &d); err != nil {
				t.Fatal(err)
			}
			return d.Spec.Template.Spec.Containers
		}
		t.Fatalf("no %s %s in the build", kind, name)
		return nil
	}

	for _, release := range []string{"github.com/argoproj/argo-cd/v3@v3.6.2", "github.com/argoproj/argo-cd/v3@v3.4.7"} {
		t.Run("hub on "+release, func(t *testing.T) {
			fs := memFS(t)
			install, err := os.ReadFile(filepath.Join(moduleDir(t, release), "manifests", "install.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if err := fs.WriteFile("/repo/examples/install/hub/install.yaml", install); err != nil {
				t.Fatal(err)
			}
			k, err := fs.ReadFile("/repo/examples/install/hub/kustomization.yaml")
			if err != nil {
				t.Fatal(err)
			}
			const url = "https://raw.githubusercontent.com/argoproj/argo-cd/v3.6.2/manifests/install.yaml"
			if !strings.Contains(string(k), "  - "+url+"\n") {
				t.Fatalf("examples/install/hub/kustomization.yaml no longer installs %s", url)
			}
			if err := fs.WriteFile("/repo/examples/install/hub/kustomization.yaml", []byte(strings.Replace(string(k), url, "install.yaml", 1))); err != nil {
				t.Fatal(err)
			}
			objs := build(t, fs, "/repo/examples/install/hub")
			var sidecar *container
			for _, c := range containersOf(t, objs, "Deployment", "argocd-repo-server") {
				if c.Name == "spokeforge" {
					sidecar = &c
				}
			}
			if sidecar == nil {
				t.Fatal("the repo-server has no spokeforge sidecar")
			}
			if sidecar.Image != cmpImage {
				t.Errorf("sidecar image %q, want %q", sidecar.Image, cmpImage)
			}
			var agent []string
			for _, e := range sidecar.Env {
				if e.Name == "SPOKEFORGE_IMAGE" {
					agent = append(agent, e.Value)
				}
			}
			if len(agent) != 1 || agent[0] != agentImage {
				t.Errorf("the sidecar's SPOKEFORGE_IMAGE is %q, want [%s]", agent, agentImage)
			}
		})
	}
	t.Run("generator", func(t *testing.T) {
		fs := memFS(t)
		if err := fs.WriteFile("/repo/manifests/generator/token", []byte("not-a-real-token")); err != nil {
			t.Fatal(err)
		}
		objs := build(t, fs, "/repo/examples/install/generator")
		cs := containersOf(t, objs, "Deployment", "spokeforge-generator")
		if len(cs) != 1 || cs[0].Image != agentImage {
			t.Fatalf("generator containers %+v, want one running %s", cs, agentImage)
		}
		repos := 0
		for _, a := range cs[0].Args {
			if strings.HasPrefix(a, "--repo=") {
				repos++
				if a != repoArg {
					t.Errorf("generator reads %s, want %s", a, repoArg)
				}
			}
		}
		if repos != 1 {
			t.Errorf("generator has %d --repo flags", repos)
		}
	})
}
