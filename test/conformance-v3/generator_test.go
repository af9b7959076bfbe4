package conformance

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/argoproj/argo-cd/v3/applicationset/controllers/template"
	"github.com/argoproj/argo-cd/v3/applicationset/generators"
	"github.com/argoproj/argo-cd/v3/applicationset/utils"
	argov1alpha1 "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	log "github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	"github.com/spokeforge/spokeforge/generator"
	"github.com/spokeforge/spokeforge/internal/names"
)

const testToken = "conformance-token"

var testSource = generator.AppSource{RepoURL: "https://git.example.com/platform/gitops.git", TargetRevision: "main", ArgoNamespace: "argocd"}

// staticSource serves one snapshot of the example repo.
type staticSource struct{ snap *generator.Snapshot }

func (s staticSource) Snapshot() (*generator.Snapshot, error) { return s.snap, nil }
func (s staticSource) Status() generator.SourceStatus {
	return generator.SourceStatus{Commit: s.snap.Commit}
}
func (s staticSource) Refresh(context.Context) (generator.SourceStatus, error) {
	return s.Status(), nil
}
func (s staticSource) Current(context.Context) (*generator.Snapshot, error) { return s.snap, nil }

// hub has every example spoke registered and Healthy, or is not ready when err is set.
type hub struct{ err error }

func (h hub) Ready() error                { return h.err }
func (h hub) Synced() bool                { return h.err == nil }
func (h hub) Version() uint64             { return 1 }
func (h hub) ClusterSecret(c string) bool { return c == "gpu-east-1" || c == "gpu-west-2" }
func (h hub) Application(string) (generator.App, bool) {
	return generator.App{Health: generator.HealthHealthy}, true
}

type notReady struct{}

func (notReady) Error() string { return "hub state not trustworthy" }

// serve runs the generator's HTTP API over the example repo.
func serve(t *testing.T, h generator.Hub) string {
	t.Helper()
	snap, errs := generator.LoadSnapshot(os.DirFS(filepath.Join(root, "examples/gitops")), "c1", testSource)
	if len(errs) > 0 {
		t.Fatalf("LoadSnapshot: %v", errs)
	}
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, err := generator.NewServer(generator.Config{TokenFile: tok, Log: slog.New(slog.DiscardHandler)}, staticSource{snap}, h)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return ts.URL
}

// shippedTokenRef is the token reference of manifests/generator's ConfigMap: Argo CD's own
// lookup below must resolve it to the Secret its kustomization generates
// (spokeforge-generator-token, key token; manifests/generator_test.go checks the bundle).
func shippedTokenRef(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "manifests/generator/plugin-configmap.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := yaml.Unmarshal(b, &cm); err != nil {
		t.Fatal(err)
	}
	return cm.Data["token"]
}

// argoGenerate runs Argo CD v3's plugin generator (its ConfigMap and token Secret lookup
// through the controller-runtime client — v3's constructor takes no clientset — and its
// HTTP client) and template renderer for the example ApplicationSet in file.
func argoGenerate(t *testing.T, url, token, file string) ([]argov1alpha1.Application, error) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "spokeforge-generator", Namespace: "argocd"},
		Data: map[string]string{"baseUrl": url, "token": shippedTokenRef(t), "requestTimeout": "30"}}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "spokeforge-generator-token", Namespace: "argocd",
		Labels: map[string]string{"app.kubernetes.io/part-of": "argocd"}}, Data: map[string][]byte{"token": []byte(token)}}
	cl := fake.NewClientBuilder().WithObjects([]client.Object{cm, sec}...).Build()
	gen := generators.NewPluginGenerator(cl, "argocd")
	b, err := os.ReadFile(filepath.Join(root, "examples/gitops/hub", file))
	if err != nil {
		t.Fatal(err)
	}
	var as argov1alpha1.ApplicationSet
	if err := yaml.UnmarshalStrict(b, &as); err != nil {
		t.Fatalf("%s: Argo CD v3's ApplicationSet type refuses it: %v", file, err)
	}
	if !as.Spec.GoTemplate || as.Spec.SyncPolicy == nil || !as.Spec.SyncPolicy.PreserveResourcesOnDeletion {
		t.Fatalf("%s: want goTemplate and syncPolicy.preserveResourcesOnDeletion", file)
	}
	if g := as.Spec.Generators; len(g) != 1 || g[0].Plugin == nil || g[0].Plugin.RequeueAfterSeconds == nil || *g[0].Plugin.RequeueAfterSeconds != 60 {
		t.Fatalf("%s: want one plugin generator with requeueAfterSeconds: 60", file)
	}
	logger := log.New()
	logger.SetOutput(os.Stderr)
	logger.SetLevel(log.WarnLevel)
	apps, _, err := template.GenerateApplications(log.NewEntry(logger), as, map[string]generators.Generator{"Plugin": gen}, &utils.Render{}, cl)
	sort.Slice(apps, func(i, j int) bool { return apps[i].Name < apps[j].Name })
	return apps, err
}

func appNames(apps []argov1alpha1.Application) string {
	var n []string
	for _, a := range apps {
		n = append(n, a.Name)
	}
	return strings.Join(n, ",")
}

// environments: each example cluster record's spec.environment.
var environments = map[string]string{"gpu-east-1": "prod", "gpu-west-2": "staging", "hub-local": "prod"}

func TestArgoCDv3GeneratesClusters(t *testing.T) {
	apps, err := argoGenerate(t, serve(t, hub{}), testToken, "clusters-appset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := appNames(apps); got != "registry-gpu-east-1,registry-gpu-west-2,registry-hub-local" {
		t.Fatalf("Applications %s", got)
	}
	for _, a := range apps {
		cluster := strings.TrimPrefix(a.Name, "registry-")
		s := a.Spec
		for what, gw := range map[string][2]string{
			"namespace":                       {a.Namespace, "argocd"},
			"label spokeforge.io/cluster":     {a.Labels["spokeforge.io/cluster"], cluster},
			"sync wave":                       {a.Annotations["argocd.argoproj.io/sync-wave"], "50"},
			"project":                         {s.Project, "default"},
			"repoURL":                         {s.Source.RepoURL, testSource.RepoURL},
			"targetRevision":                  {s.Source.TargetRevision, "main"},
			"path":                            {s.Source.Path, "clusters/" + cluster},
			"label spokeforge.io/environment": {a.Labels["spokeforge.io/environment"], environments[cluster]},
			"destination server":              {s.Destination.Server, names.InClusterServer},
			"destination name":                {s.Destination.Name, ""},
			"destination namespace":           {s.Destination.Namespace, "argocd"},
		} {
			if gw[0] != gw[1] {
				t.Errorf("%s %s = %q, want %q", a.Name, what, gw[0], gw[1])
			}
		}
		if s.Source.Plugin == nil || s.Source.Plugin.Name != "spokeforge" || len(s.Source.Plugin.Parameters) != 1 ||
			s.Source.Plugin.Parameters[0].Name != "mode" || s.Source.Plugin.Parameters[0].String_ == nil || *s.Source.Plugin.Parameters[0].String_ != "hub" {
			t.Errorf("%s plugin = %+v, want spokeforge with mode=hub", a.Name, s.Source.Plugin)
		}
		if s.SyncPolicy == nil || s.SyncPolicy.Retry == nil || s.SyncPolicy.Retry.Limit < 1 {
			t.Errorf("%s: no sync retry: a wave's transient Degraded would end the automated sync for good", a.Name)
		}
		if s.SyncPolicy == nil || s.SyncPolicy.Automated == nil || !s.SyncPolicy.Automated.GetPrune() {
			t.Errorf("%s: no automated sync with prune", a.Name)
		}
		if len(a.Finalizers) != 1 || a.Finalizers[0] != "resources-finalizer.argocd.argoproj.io/background" {
			t.Errorf("%s carries finalizers %v, want only the background resources finalizer", a.Name, a.Finalizers)
		}
		if _, ok := a.Labels["app.kubernetes.io/instance"]; ok {
			t.Errorf("%s carries app.kubernetes.io/instance", a.Name)
		}
	}
}

func TestArgoCDv3GeneratesZones(t *testing.T) {
	apps, err := argoGenerate(t, serve(t, hub{}), testToken, "zones-appset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := appNames(apps); got != "product-checkout-prod,product-checkout-rc,product-trainer-staging" {
		t.Fatalf("Applications %s (checkout-west is not on acme's allowlist)", got)
	}
	want := map[string]struct {
		org, product, zone, env, project, path string
		dest                                   argov1alpha1.ApplicationDestination
	}{
		"product-checkout-prod": {"acme", "checkout", "checkout-prod", "release", "org-acme", "products/acme/checkout/checkout-prod",
			argov1alpha1.ApplicationDestination{Name: "gpu-east-1", Namespace: "checkout-prod"}},
		"product-checkout-rc": {"acme", "checkout", "checkout-rc", "pre-release", "org-acme", "products/acme/checkout/checkout-rc",
			argov1alpha1.ApplicationDestination{Server: names.InClusterServer, Namespace: "checkout-rc"}},
		"product-trainer-staging": {"globex", "trainer", "trainer-staging", "pre-release", "org-globex", "products/globex/trainer/trainer-staging",
			argov1alpha1.ApplicationDestination{Name: "gpu-west-2", Namespace: "training"}},
	}
	for _, a := range apps {
		w, s := want[a.Name], a.Spec
		for what, gw := range map[string][2]string{
			"label org": {a.Labels["spokeforge.io/org"], w.org}, "label product": {a.Labels["spokeforge.io/product"], w.product},
			"label zone": {a.Labels["spokeforge.io/zone"], w.zone}, "label environment": {a.Labels["spokeforge.io/environment"], w.env},
			"project": {s.Project, w.project}, "repoURL": {s.Source.RepoURL, testSource.RepoURL}, "targetRevision": {s.Source.TargetRevision, "main"},
			"path": {s.Source.Path, w.path}, "namespace": {a.Namespace, "argocd"},
		} {
			if gw[0] != gw[1] {
				t.Errorf("%s %s = %q, want %q", a.Name, what, gw[0], gw[1])
			}
		}
		if s.Destination != w.dest {
			t.Errorf("%s destination = %+v, want %+v", a.Name, s.Destination, w.dest)
		}
		if s.Source.Plugin != nil {
			t.Errorf("%s uses a plugin", a.Name)
		}
		if a.Spec.SyncPolicy == nil || len(a.Spec.SyncPolicy.SyncOptions) != 1 || a.Spec.SyncPolicy.SyncOptions[0] != "CreateNamespace=true" {
			t.Errorf("%s syncPolicy = %+v", a.Name, a.Spec.SyncPolicy)
		}
	}
}

// TestArgoCDv3GeneratorErrors: v3's client turns our refusals into errors (so the controller
// keeps existing Applications), never into an empty list.
func TestArgoCDv3GeneratorErrors(t *testing.T) {
	if apps, err := argoGenerate(t, serve(t, hub{err: notReady{}}), testToken, "zones-appset.yaml"); err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "hub state not trustworthy") {
		t.Errorf("hub not ready: %d Applications, error %v", len(apps), err)
	}
	if apps, err := argoGenerate(t, serve(t, hub{}), "not-the-token-at-all", "clusters-appset.yaml"); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("wrong token: %d Applications, error %v", len(apps), err)
	}
}
