package conformance

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argoproj/argo-cd/gitops-engine/v3/pkg/utils/kube"
	"github.com/argoproj/argo-cd/v3/cmpserver/apiclient"
	"github.com/argoproj/argo-cd/v3/cmpserver/plugin"
	argocmp "github.com/argoproj/argo-cd/v3/util/cmp"
	"github.com/argoproj/argo-cd/v3/util/tgzstream"
	"google.golang.org/grpc"
	"sigs.k8s.io/yaml"
)

const root = "../.."

// stream feeds the cmp-server service a repo tarball, as the repo-server does.
type stream struct {
	grpc.ServerStream
	reqs []*apiclient.AppStreamRequest
	resp *apiclient.ManifestResponse
}

func (s *stream) Recv() (*apiclient.AppStreamRequest, error) {
	if len(s.reqs) == 0 {
		return nil, io.EOF
	}
	r := s.reqs[0]
	s.reqs = s.reqs[1:]
	return r, nil
}
func (s *stream) SendAndClose(r *apiclient.ManifestResponse) error { s.resp = r; return nil }
func (s *stream) Context() context.Context                         { return context.Background() }

func newStream(t *testing.T, repo, app string, env []string) *stream {
	t.Helper()
	tgz, meta, err := argocmp.GetCompressedRepoAndMetadata(repo, app, env, []string{".git/*"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tgzstream.CloseAndDelete(tgz)
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, tgz); err != nil {
		t.Fatal(err)
	}
	return &stream{reqs: []*apiclient.AppStreamRequest{meta, argocmp.AppFileRequest(buf.Bytes())}}
}

// TestArgoCDv3RunsThePlugin reads cmp/plugin.yaml with Argo CD v3's config reader and runs
// generate through its cmp-server service, as the v3 sidecar does, then splits the output
// with its splitter. v3 also hands the plugin ARGOCD_ENV_ variables that are set but empty.
func TestArgoCDv3RunsThePlugin(t *testing.T) {
	bin := t.TempDir()
	build := exec.Command("go", "build", "-tags", "cmponly", "-o", filepath.Join(bin, "spokeforge"), ".")
	build.Dir = root
	// spokeforge with its own module's Go, as make build does (this module's tests run under
	// GOTOOLCHAIN=go1.27.3): then it comes from the build cache make test already filled.
	build.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("ARGOCD_CMP_WORKDIR", t.TempDir())
	// The sidecar's own environment, as manifests/cmp sets it.
	t.Setenv("SPOKEFORGE_IMAGE", "ghcr.io/spokeforge/spokeforge:v0.1.0-dev")

	cfg, err := plugin.ReadPluginConfig(filepath.Join(root, "cmp"))
	if err != nil {
		t.Fatalf("Argo CD v3 rejects cmp/plugin.yaml: %v", err)
	}
	svc := plugin.NewService(plugin.CMPServerInitConstants{PluginConfig: *cfg})

	repo, err := filepath.Abs(filepath.Join(root, "examples/gitops"))
	if err != nil {
		t.Fatal(err)
	}
	env := []string{
		"ARGOCD_APP_NAME=spoke-gpu-east-1",
		"ARGOCD_APP_SOURCE_PATH=clusters/gpu-east-1",
		"ARGOCD_APP_SOURCE_REPO_URL=file:///srv/gitops.git",
		"KUBE_VERSION=1.34.0",
		"KUBE_API_VERSIONS=v1,apps/v1,external-secrets.io/v1",
	}
	want, err := os.ReadFile(filepath.Join(root, "examples/gitops/rendered/gpu-east-1.spoke.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	golden, err := kube.SplitYAML(want)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  []string
	}{
		{"renders the example spoke", env},
		// An Application's plugin.env entry with an empty value reaches the plugin as an empty
		// ARGOCD_ENV_ variable on v3: it means "unset" (docs/cmp.md).
		{"empty ARGOCD_ENV_ variables are unset", append(env, "ARGOCD_ENV_ARGOCD_NAMESPACE=", "ARGOCD_ENV_SPOKEFORGE_MODE=", "ARGOCD_ENV_SPOKEFORGE_IMAGE=", "ARGOCD_ENV_HUB_SECRET_STORE=")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStream(t, repo, filepath.Join(repo, "clusters/gpu-east-1"), tc.env)
			if err := svc.GenerateManifest(s); err != nil {
				t.Fatal(err)
			}
			if len(s.resp.Manifests) != len(golden) || len(golden) < 20 {
				t.Fatalf("Argo CD got %d manifests, golden has %d", len(s.resp.Manifests), len(golden))
			}
			for i, m := range s.resp.Manifests {
				u, err := kube.SplitYAML([]byte(m))
				if err != nil || len(u) != 1 {
					t.Fatalf("manifest %d does not parse as one object: %v\n%s", i, err, m)
				}
				g := golden[i]
				if u[0].GetKind() != g.GetKind() || u[0].GetName() != g.GetName() || u[0].GetNamespace() != g.GetNamespace() {
					t.Errorf("manifest %d is %s %s/%s, golden has %s %s/%s", i, u[0].GetKind(), u[0].GetNamespace(), u[0].GetName(), g.GetKind(), g.GetNamespace(), g.GetName())
				}
				if u[0].GetLabels()["spokeforge.io/cluster"] != "gpu-east-1" {
					t.Errorf("%s/%s lacks the cluster label", u[0].GetKind(), u[0].GetName())
				}
				// Annotation tracking (the v3 default) must find nothing of ours relying on the
				// label Argo CD's label tracking sets.
				if _, ok := u[0].GetLabels()["app.kubernetes.io/instance"]; ok {
					t.Errorf("%s/%s carries app.kubernetes.io/instance", u[0].GetKind(), u[0].GetName())
				}
			}
		})
	}
	// With reposerver.plugin.use.manifest.generate.paths (manifests/cmp) and the "." annotation
	// spokeforge's Applications carry, the repo-server tars the common root of the annotated
	// paths and the app path: the cluster directory alone, with the install's exclusions.
	t.Run("the cluster directory alone renders the same", func(t *testing.T) {
		app := filepath.Join(repo, "clusters/gpu-east-1")
		full := newStream(t, repo, app, env)
		if err := svc.GenerateManifest(full); err != nil {
			t.Fatal(err)
		}
		tgz, meta, err := argocmp.GetCompressedRepoAndMetadata(app, app, env, strings.Split(installParams(t)["reposerver.plugin.tar.exclusions"], ";"), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tgzstream.CloseAndDelete(tgz)
		var buf bytes.Buffer
		if _, err := io.Copy(&buf, tgz); err != nil {
			t.Fatal(err)
		}
		if rel := meta.GetMetadata().GetAppRelPath(); rel != "." {
			t.Fatalf("app path in the tarball: %q", rel)
		}
		alone := &stream{reqs: []*apiclient.AppStreamRequest{meta, argocmp.AppFileRequest(buf.Bytes())}}
		if err := svc.GenerateManifest(alone); err != nil {
			t.Fatalf("the cluster directory alone: %v", err)
		}
		if strings.Join(alone.resp.Manifests, "\n---\n") != strings.Join(full.resp.Manifests, "\n---\n") {
			t.Fatal("the cluster directory alone renders other manifests than the whole repository")
		}
		t.Logf("tarball: %d bytes for the cluster directory", buf.Len())
	})
	// The agent image: the Application's parameter over the sidecar's SPOKEFORGE_IMAGE, and no
	// render at all without either (never a made-up tag), through Argo CD's own cmp-server.
	t.Run("the image parameter reaches the agent", func(t *testing.T) {
		s := newStream(t, repo, filepath.Join(repo, "clusters/gpu-east-1"),
			append(env, `ARGOCD_APP_PARAMETERS=[{"name":"image","string":"registry.example.com:5000/platform/spokeforge:v9.9.9"}]`))
		if err := svc.GenerateManifest(s); err != nil {
			t.Fatal(err)
		}
		joined := strings.Join(s.resp.Manifests, "\n")
		if !strings.Contains(joined, `"image":"registry.example.com:5000/platform/spokeforge:v9.9.9"`) || strings.Contains(joined, "v0.1.0-dev") {
			t.Fatal("the rendered agent does not run the parameter's image alone")
		}
	})
	t.Run("no agent image is refused", func(t *testing.T) {
		t.Setenv("SPOKEFORGE_IMAGE", "")
		s := newStream(t, repo, filepath.Join(repo, "clusters/gpu-east-1"), env)
		err := svc.GenerateManifest(s)
		if err == nil || !strings.Contains(err.Error(), "no agent image") {
			t.Fatalf("err = %v; want the render refused for want of an agent image", err)
		}
		if s.resp != nil && len(s.resp.Manifests) > 0 {
			t.Fatal("manifests sent with the refusal")
		}
	})
	t.Run("hub mode through the mode parameter", func(t *testing.T) {
		s := newStream(t, repo, filepath.Join(repo, "clusters/gpu-east-1"),
			append(env, `ARGOCD_APP_PARAMETERS=[{"name":"mode","string":"hub"}]`))
		if err := svc.GenerateManifest(s); err != nil {
			t.Fatal(err)
		}
		joined := strings.Join(s.resp.Manifests, "\n")
		for _, w := range []string{`"name":"cluster-gpu-east-1"`, `"name":"spoke-gpu-east-1"`, `"name":"gpu-east-1-inference"`} {
			if !strings.Contains(joined, w) {
				t.Errorf("hub render lacks %s", w)
			}
		}
	})
	t.Run("an invalid record fails generation with the field", func(t *testing.T) {
		broken := t.TempDir()
		b, err := os.ReadFile(filepath.Join(repo, "clusters/gpu-east-1/cluster.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(broken, "clusters/gpu-east-1"), 0o755); err != nil {
			t.Fatal(err)
		}
		bad := strings.Replace(string(b), "unmounted: true", "unmounted: false", 1)
		if err := os.WriteFile(filepath.Join(broken, "clusters/gpu-east-1/cluster.yaml"), []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		s := newStream(t, broken, filepath.Join(broken, "clusters/gpu-east-1"), env)
		err = svc.GenerateManifest(s)
		if err == nil {
			t.Fatalf("generation succeeded with %d manifests; want an error", len(s.resp.Manifests))
		}
		if !strings.Contains(err.Error(), "clusters/gpu-east-1/cluster.yaml:") || !strings.Contains(err.Error(), "spec.storage.devices[0].safety.unmounted") {
			t.Errorf("error does not name file and field: %v", err)
		}
	})
}

// installParams reads the argocd-cmd-params-cm settings manifests/cmp installs.
func installParams(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "manifests/cmp/argocd-cmd-params-cm.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(b, &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Data["reposerver.plugin.use.manifest.generate.paths"] != "true" {
		t.Fatalf("manifests/cmp does not turn on reposerver.plugin.use.manifest.generate.paths: %v", cm.Data)
	}
	return cm.Data
}
