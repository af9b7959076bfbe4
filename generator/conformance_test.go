package generator

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/argoproj/argo-cd/v2/applicationset/controllers/template"
	"github.com/argoproj/argo-cd/v2/applicationset/generators"
	"github.com/argoproj/argo-cd/v2/applicationset/utils"
	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	log "github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	"github.com/spokeforge/spokeforge/cmp/render"
	"github.com/spokeforge/spokeforge/internal/names"
)

// argoGenerate runs Argo CD's own plugin generator (ConfigMap and token
// Secret lookup, HTTP client) and its template renderer against url, for
// the example ApplicationSet in file, as the applicationset-controller does.
func argoGenerate(t *testing.T, url, token, file string) ([]argov1alpha1.Application, error) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "spokeforge-generator", Namespace: "argocd"},
		Data: map[string]string{"baseUrl": url, "token": "$spokeforge-generator-token:token", "requestTimeout": "30"}}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "spokeforge-generator-token", Namespace: "argocd",
		Labels: map[string]string{"app.kubernetes.io/part-of": "argocd"}}, Data: map[string][]byte{"token": []byte(token)}}
	cl := fake.NewClientBuilder().WithObjects([]client.Object{cm, sec}...).Build()
	gen := generators.NewPluginGenerator(cl, context.Background(), kubefake.NewSimpleClientset(cm, sec), "argocd")
	b, err := os.ReadFile(filepath.Join(exampleRepo, "hub", file))
	if err != nil {
		t.Fatal(err)
	}
	var as argov1alpha1.ApplicationSet
	if err := yaml.UnmarshalStrict(b, &as); err != nil {
		t.Fatalf("%s: %v", file, err)
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

func TestConformanceClusters(t *testing.T) {
	snap := mustSnapshot(t, exampleFS(t, nil), "c1")
	f := newFixture(t, &staticSource{snap: snap}, registeredHub())
	apps, err := argoGenerate(t, f.url, testToken, "clusters-appset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := appNames(apps); got != "registry-gpu-east-1,registry-gpu-west-2,registry-hub-local" {
		t.Fatalf("Applications %s", got)
	}
	for _, a := range apps {
		cluster := strings.TrimPrefix(a.Name, "registry-")
		var entry = snap.Repo.Clusters[0]
		for _, e := range snap.Repo.Clusters {
			if e.Cluster.Metadata.Name == cluster {
				entry = e
			}
		}
		s := a.Spec
		check := func(what, got, want string) {
			t.Helper()
			if got != want {
				t.Errorf("%s %s = %q, want %q", a.Name, what, got, want)
			}
		}
		check("namespace", a.Namespace, "argocd")
		check("label spokeforge.io/cluster", a.Labels["spokeforge.io/cluster"], cluster)
		check("label spokeforge.io/environment", a.Labels["spokeforge.io/environment"], entry.Cluster.Spec.Environment)
		check("sync wave", a.Annotations["argocd.argoproj.io/sync-wave"], "50")
		check("project", s.Project, "default")
		check("repoURL", s.Source.RepoURL, testSource.RepoURL)
		check("targetRevision", s.Source.TargetRevision, "main")
		check("path", s.Source.Path, "clusters/"+cluster)
		if s.Source.Plugin == nil || s.Source.Plugin.Name != "spokeforge" || len(s.Source.Plugin.Parameters) != 1 ||
			s.Source.Plugin.Parameters[0].Name != "mode" || s.Source.Plugin.Parameters[0].String_ == nil || *s.Source.Plugin.Parameters[0].String_ != "hub" {
			t.Errorf("%s plugin = %+v, want spokeforge with mode=hub", a.Name, s.Source.Plugin)
		}
		check("destination server", s.Destination.Server, names.InClusterServer)
		check("destination name", s.Destination.Name, "")
		check("destination namespace", s.Destination.Namespace, "argocd")
		if s.SyncPolicy == nil || s.SyncPolicy.Retry == nil || s.SyncPolicy.Retry.Limit < 1 {
			t.Errorf("%s: no sync retry: a wave's transient Degraded would end the automated sync for good", a.Name)
		}
		if s.SyncPolicy == nil || s.SyncPolicy.Automated == nil || !s.SyncPolicy.Automated.Prune {
			t.Errorf("%s: no automated sync", a.Name)
		}
		// The app-of-apps cascades to the hub objects it synced (docs/generator.md, "Removing a
		// cluster"); the Applications among them carry no finalizer (checked below), so the
		// cascade stops at the hub.
		if len(a.Finalizers) != 1 || a.Finalizers[0] != "resources-finalizer.argocd.argoproj.io/background" {
			t.Errorf("%s carries finalizers %v, want only the background resources finalizer", a.Name, a.Finalizers)
		}
		// The CMP, run the way this app-of-apps runs it, renders the spoke Application with
		// the destination and project the generator announced.
		objs, err := render.Hub(entry, render.Options{ESOVersion: "external-secrets.io/v1", ArgoNamespace: s.Destination.Namespace,
			HubSecretStore: "spokeforge-hub", RepoURL: s.Source.RepoURL, TargetRevision: s.Source.TargetRevision, SourcePath: s.Source.Path})
		if err != nil {
			t.Fatal(err)
		}
		var params map[string]any
		for _, p := range paramsOf(t, f, KindClusters) {
			if p["name"] == cluster {
				params = p
			}
		}
		dest := params["destination"].(map[string]any)
		found := false
		for _, o := range objs {
			md := o.Obj["metadata"].(map[string]any)
			if o.Obj["kind"] == "Application" && md["finalizers"] != nil {
				t.Errorf("hub render of %s: Application %v carries finalizers %v: deleting it would delete spoke objects", cluster, md["name"], md["finalizers"])
			}
			if o.Boundary == "hub-workloads" {
				// Workload Applications go through the org's AppProject the generator announces.
				if p := o.Obj["spec"].(map[string]any)["project"]; p != params["workloadProject"] || p == "" {
					t.Errorf("%s: workload Application %v in project %v, generator says workloadProject %v", cluster, md["name"], p, params["workloadProject"])
				}
			}
			if o.Obj["kind"] != "Application" || md["name"] != params["spokeApplication"] {
				continue
			}
			found = true
			spec := o.Obj["spec"].(map[string]any)
			rd := spec["destination"].(map[string]any)
			if (rd["name"] == nil && dest["name"] != "") || (rd["name"] != nil && rd["name"] != dest["name"]) ||
				(rd["server"] == nil && dest["server"] != "") || (rd["server"] != nil && rd["server"] != dest["server"]) {
				t.Errorf("%s: rendered spoke Application destination %v, generator says %v", cluster, rd, dest)
			}
			src := spec["source"].(map[string]any)
			if spec["project"] != params["project"] || src["path"] != params["path"] || src["repoURL"] != params["repoURL"] ||
				src["plugin"].(map[string]any)["name"] != params["plugin"] {
				t.Errorf("%s: rendered spoke Application %v disagrees with parameters %v", cluster, spec, params)
			}
		}
		if !found {
			t.Errorf("%s: the hub render has no Application %v", cluster, params["spokeApplication"])
		}
	}
}

func paramsOf(t *testing.T, f *fixture, kind string) []map[string]any {
	t.Helper()
	code, body := f.do(t, "POST", "/api/v1/getparams.execute", `{"input":{"parameters":{"kind":"`+kind+`"}}}`, okHeaders)
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	var r Response
	if err := yaml.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	return r.Output.Parameters
}

func TestConformanceZones(t *testing.T) {
	f := newFixture(t, &staticSource{snap: mustSnapshot(t, exampleFS(t, nil), "c1")}, registeredHub())
	apps, err := argoGenerate(t, f.url, testToken, "zones-appset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := appNames(apps); got != "product-checkout-prod,product-checkout-rc,product-trainer-staging" {
		t.Fatalf("Applications %s (checkout-west is not on acme's allowlist)", got)
	}
	want := map[string]struct {
		org, product, zone, env, project, path, ns string
		dest                                       argov1alpha1.ApplicationDestination
	}{
		"product-checkout-prod": {"acme", "checkout", "checkout-prod", "release", "org-acme", "products/acme/checkout/checkout-prod", "checkout-prod",
			argov1alpha1.ApplicationDestination{Name: "gpu-east-1", Namespace: "checkout-prod"}},
		"product-checkout-rc": {"acme", "checkout", "checkout-rc", "pre-release", "org-acme", "products/acme/checkout/checkout-rc", "checkout-rc",
			argov1alpha1.ApplicationDestination{Server: names.InClusterServer, Namespace: "checkout-rc"}},
		"product-trainer-staging": {"globex", "trainer", "trainer-staging", "pre-release", "org-globex", "products/globex/trainer/trainer-staging", "training",
			argov1alpha1.ApplicationDestination{Name: "gpu-west-2", Namespace: "training"}},
	}
	for _, a := range apps {
		w := want[a.Name]
		s := a.Spec
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
		if s.SyncPolicy == nil || len(s.SyncPolicy.SyncOptions) != 1 || s.SyncPolicy.SyncOptions[0] != "CreateNamespace=true" {
			t.Errorf("%s syncPolicy = %+v", a.Name, s.SyncPolicy)
		}
	}
}

// TestConformanceErrors: what Argo CD makes of our refusals. Any error from the generator
// makes the controller keep existing Applications.
func TestConformanceErrors(t *testing.T) {
	snap := mustSnapshot(t, exampleFS(t, nil), "c1")
	down := newFixture(t, &staticSource{snap: snap}, &fakeHub{err: errNoSnapshot})
	if _, err := argoGenerate(t, down.url, testToken, "zones-appset.yaml"); err == nil || !strings.Contains(err.Error(), "API error with status code 503: hub state not trustworthy") {
		t.Errorf("hub not ready: %v", err)
	}
	ok := newFixture(t, &staticSource{snap: snap}, registeredHub())
	if _, err := argoGenerate(t, ok.url, "not-the-token-at-all", "clusters-appset.yaml"); err == nil || !strings.Contains(err.Error(), "API error with status code 403: wrong token") {
		t.Errorf("wrong token: %v", err)
	}
}
