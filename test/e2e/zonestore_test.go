//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestZoneHubStore: an org's zone that tries the hub's secret store (the one that holds every
// cluster's Argo CD credentials) is refused by Argo CD, through the org AppProject render
// --mode projects makes, and by validate. In its own hub namespace the zone's ExternalSecret
// is a kind the project does not name; in Argo CD's namespace, which the documented store
// serves, the zone is outside the project's destinations, and validate refuses the commit.
func TestZoneHubStore(t *testing.T) {
	parallel(t)
	h := StartHub(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	if h.Spokeforge == "" {
		t.Fatal("the harness did not build spokeforge")
	}
	esoDir, err := ModuleDir(ExternalSecretsMod)
	if err != nil {
		t.Fatal(err)
	}
	// External Secrets' CRDs (established) first, then the hub store as docs/install.md has it.
	if err := h.Hub.ApplyFiles(ctx, filepath.Join(esoDir, "deploy", "crds", "bundle.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := h.Hub.ApplyFiles(ctx, filepath.Join(h.opts.RepoRoot, "examples", "install", "hub-store", "cluster-secret-store.yaml")); err != nil {
		t.Fatal(err)
	}

	const steal = `apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: steal}
spec:
  secretStoreRef: {kind: ClusterSecretStore, name: spokeforge-hub}
  target: {name: stolen}
  dataFrom: [{extract: {key: acme-ml/us-east-1/use1-az1/aws/gpu-east-1/argocd-cluster}}]
`
	files := map[string]string{
		"clusters/spoke/cluster.yaml": clusterRecord(SpokeClusterName, "spk", h.Spoke.URL),
		"orgs/acme.yaml":              org("acme", SpokeClusterName) + "  hubNamespaces: [shop-rc]\n",
		"products/acme/shop.yaml": "apiVersion: spokeforge.io/v1alpha1\nkind: Product\nmetadata: {name: shop}\nspec:\n  delivery:\n    zones:\n" +
			"      - {name: shop-rc, environment: pre-release}\n",
		"products/acme/shop/shop-rc/steal.yaml": steal,
	}
	repo, err := h.NewGitRepo("gitops", files)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(ctx, h.Spokeforge, "validate", repo.Work).CombinedOutput(); err != nil {
		t.Fatalf("validate refused the zone in its org's hub namespace: %v\n%s", err, out)
	}
	if err := h.ApplyRenderedProjects(ctx, repo.Work); err != nil {
		t.Fatal(err)
	}

	zoneApp := func(name, namespace string) string {
		return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  project: org-acme
  source: {repoURL: %[3]s, targetRevision: main, path: products/acme/shop/shop-rc}
  destination: {server: https://kubernetes.default.svc, namespace: %[4]s}
  syncPolicy: {syncOptions: [CreateNamespace=true]}
`, name, ArgoCDNamespace, repo.URL, namespace)
	}
	appJSON := func(name string) string {
		u, err := h.Hub.Dynamic.Resource(ApplicationGVR).Namespace(ArgoCDNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		b, _ := json.Marshal(u.Object["status"])
		return string(b)
	}

	// In its own hub namespace: the ExternalSecret is not a kind of the org's project.
	if _, err := h.Hub.Apply(ctx, zoneApp("product-shop-rc", "shop-rc")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.WaitApp(ctx, "product-shop-rc", "compared", 2*time.Minute, func(s AppState) bool { return s.Sync != "" }); err != nil {
		t.Fatal(err)
	}
	out, _ := h.ArgoCD(ctx, "app", "sync", "product-shop-rc", "--timeout", "60")
	const notPermitted = "external-secrets.io:ExternalSecret is not permitted in project org-acme"
	if _, err := h.WaitApp(ctx, "product-shop-rc", "refused", 2*time.Minute, func(AppState) bool {
		return strings.Contains(appJSON("product-shop-rc"), notPermitted)
	}); err != nil {
		t.Fatalf("%v\nsync said: %s\nstatus: %s", err, out, appJSON("product-shop-rc"))
	}
	if _, err := h.Hub.Get(ctx, "external-secrets.io/v1", "ExternalSecret", "shop-rc", "steal"); !apierrors.IsNotFound(err) {
		t.Fatalf("ExternalSecret shop-rc/steal on the hub (err %v): the project let it through", err)
	}
	t.Logf("zone in its hub namespace: %s", notPermitted)

	// In Argo CD's namespace, where the hub store serves: outside the project's destinations.
	if _, err := h.Hub.Apply(ctx, zoneApp("product-shop-steal", ArgoCDNamespace)); err != nil {
		t.Fatal(err)
	}
	notAllowed := fmt.Sprintf("namespace '%s' do not match any of the allowed destinations in project 'org-acme'", ArgoCDNamespace)
	if _, err := h.WaitApp(ctx, "product-shop-steal", "refused", 2*time.Minute, func(s AppState) bool {
		return strings.Contains(strings.Join(s.Conditions, "\n"), notAllowed)
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Hub.Get(ctx, "external-secrets.io/v1", "ExternalSecret", ArgoCDNamespace, "steal"); !apierrors.IsNotFound(err) {
		t.Fatalf("ExternalSecret %s/steal on the hub (err %v)", ArgoCDNamespace, err)
	}
	t.Logf("zone in %s: %s", ArgoCDNamespace, notAllowed)

	// validate refuses the commit that places the zone there.
	if err := repo.Commit("shop: a zone in argocd", map[string]string{
		"products/acme/shop.yaml": files["products/acme/shop.yaml"] + "      - {name: shop-steal, environment: pre-release, namespace: " + ArgoCDNamespace + ", path: products/acme/shop/shop-rc}\n",
	}); err != nil {
		t.Fatal(err)
	}
	vout, err := exec.CommandContext(ctx, h.Spokeforge, "validate", repo.Work).CombinedOutput()
	want := fmt.Sprintf(`products/acme/shop.yaml:8: spec.delivery.zones[1].namespace: zone "shop-steal" runs on the management cluster in namespace %q, which org acme does not list in spec.hubNamespaces`, ArgoCDNamespace)
	if err == nil || !strings.Contains(string(vout), want) {
		t.Fatalf("validate: err %v, output %s; want a refusal containing %q", err, vout, want)
	}
}
