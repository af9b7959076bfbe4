//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

var (
	applicationsGVR    = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	applicationSetsGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applicationsets"}
)

func clusterRecord(name, short, server string) string {
	return fmt.Sprintf(`apiVersion: spokeforge.io/v1alpha1
kind: Cluster
metadata:
  name: %[1]s
spec:
  shortName: %[2]s
  account: acme-ml
  accountID: "111122223333"
  environment: staging
  region: us-west-2
  zone: colo-e2e
  provider: onprem
  connection:
    server: %[3]s
    credentials: {type: bearerToken}
  identity:
    trustAnchorArn: arn:aws:rolesanywhere:us-west-2:111122223333:trust-anchor/3e4f5a6b-7c8d-4e9f-a0b1-c2d3e4f5a6b7
    profileArn: arn:aws:rolesanywhere:us-west-2:111122223333:profile/9b0c1d2e-3f4a-4b5c-9d6e-7f8a9b0c1d2e
    issuer: {name: spokeforge-ca}
  network: {podCIDR: 172.16.0.0/16, serviceCIDR: 172.17.0.0/16, dnsServiceIP: 172.17.0.10}
  queues: [{purpose: jobs}]
`, name, short, server)
}

func org(name string, allow ...string) string {
	return fmt.Sprintf("apiVersion: spokeforge.io/v1alpha1\nkind: Organization\nmetadata: {name: %s}\nspec:\n  clusterAllowlist: [%s]\n", name, strings.Join(allow, ", "))
}

// acmeOrg is orgs/acme.yaml: its zone web-rc runs on the management cluster, in its namespace.
func acmeOrg(allow ...string) string {
	return org("acme", allow...) + "  hubNamespaces: [web-rc]\n"
}

// TestGenerator: the real applicationset-controller calls `spokeforge generator` through the
// plugin ConfigMap and renders the example ApplicationSets. App-of-apps and placed zone
// Applications appear; removing an allowlist entry withdraws its zone; with the generator
// stopped every existing Application stays.
func TestGenerator(t *testing.T) {
	parallel(t)
	h := StartHub(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 14*time.Minute)
	defer cancel()
	if h.Spokeforge == "" {
		t.Fatal("the harness did not build spokeforge")
	}
	repo, err := h.NewGitRepo("gitops", map[string]string{
		"clusters/spoke/cluster.yaml": clusterRecord(SpokeClusterName, "spk", h.Spoke.URL),
		"clusters/edge/cluster.yaml":  clusterRecord("edge", "edg", "https://edge.example.invalid:6443"),
		"orgs/acme.yaml":              acmeOrg(SpokeClusterName, "edge"),
		"orgs/globex.yaml":            org("globex"),
		"products/acme/web.yaml": `apiVersion: spokeforge.io/v1alpha1
kind: Product
metadata: {name: web}
spec:
  delivery:
    zones:
      - {name: web-prod, environment: release, cluster: spoke}
      - {name: web-rc, environment: pre-release}
      - {name: web-edge, environment: release, cluster: edge}
`,
		"products/globex/api.yaml": `apiVersion: spokeforge.io/v1alpha1
kind: Product
metadata: {name: api}
spec:
  delivery:
    zones:
      - {name: api-spoke, environment: release, cluster: spoke}
`,
		"fixtures/spoke/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: spoke-registered, namespace: default}\ndata: {ok: \"true\"}\n",
	})
	if err != nil {
		t.Fatal(err)
	}

	// Registration of "spoke": its cluster Secret exists (the harness made it) and its spoke
	// Application is Healthy. The CMP's hub render would create spoke-spoke; here a directory
	// Application stands in for it, as the hub has no External Secrets for the cluster Secret.
	if _, err := h.Hub.Apply(ctx, fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: spoke-spoke, namespace: %[1]s}
spec:
  project: default
  source: {repoURL: %[2]s, targetRevision: HEAD, path: fixtures/spoke}
  destination: {name: %[3]s, namespace: default}
---
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: org-acme, namespace: %[1]s}
spec:
  sourceRepos: ['*']
  destinations: [{server: https://kubernetes.default.svc, namespace: '*'}, {name: %[3]s, namespace: '*'}, {name: edge, namespace: '*'}]
---
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: org-globex, namespace: %[1]s}
spec:
  sourceRepos: ['*']
  destinations: [{server: https://kubernetes.default.svc, namespace: '*'}]
`, ArgoCDNamespace, repo.URL, SpokeClusterName)); err != nil {
		t.Fatal(err)
	}
	if err := h.SyncApp(ctx, "spoke-spoke", 2*time.Minute); err != nil {
		t.Fatal(err)
	}

	// The generator, with its token Secret and the plugin ConfigMap of manifests/generator.
	gen, err := h.StartGenerator(ctx, repo.URL)
	if err != nil {
		t.Fatal(err)
	}
	base, token := gen.Base, gen.Token
	if err := h.InstallApplicationSets(ctx, base, token); err != nil {
		t.Fatal(err)
	}

	apps := h.Hub.Dynamic.Resource(applicationsGVR).Namespace(ArgoCDNamespace)
	waitApps := func(what string, want, absent []string) {
		t.Helper()
		deadline := time.Now().Add(3 * time.Minute)
		for {
			var missing, present []string
			for _, n := range want {
				if _, err := apps.Get(ctx, n, metav1.GetOptions{}); err != nil {
					missing = append(missing, n)
				}
			}
			for _, n := range absent {
				if _, err := apps.Get(ctx, n, metav1.GetOptions{}); err == nil {
					present = append(present, n)
				} else if !apierrors.IsNotFound(err) {
					present = append(present, n+" ("+err.Error()+")")
				}
			}
			if len(missing) == 0 && len(present) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: missing %v, unexpectedly present %v", what, missing, present)
			}
			time.Sleep(2 * time.Second)
		}
	}
	start := time.Now()
	waitApps("first generation", []string{"registry-spoke", "registry-edge", "product-web-prod", "product-web-rc"},
		[]string{"product-web-edge", "product-api-spoke"})
	t.Logf("Applications generated in %s", time.Since(start).Round(time.Second))
	// Argo CD v3.4+ keeps an ApplicationSet's health in status.health (from its conditions):
	// both report Healthy while the generator answers.
	for _, as := range []string{"spokeforge-zones", "spokeforge-clusters"} {
		waitAppSetHealth(t, ctx, h, as, "Healthy")
	}

	aoa, err := apps.Get(ctx, "registry-spoke", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"spec.source.path": "clusters/spoke", "spec.source.repoURL": repo.URL, "spec.source.targetRevision": "main",
		"spec.source.plugin.name": "spokeforge", "spec.destination.server": "https://kubernetes.default.svc",
		"spec.destination.namespace": ArgoCDNamespace, "spec.project": "default",
		"metadata.annotations.argocd\\.argoproj\\.io/sync-wave": "50",
	} {
		if got := field(aoa.Object, path); got != want {
			t.Errorf("registry-spoke %s = %q, want %q", path, got, want)
		}
	}
	zone, err := apps.Get(ctx, "product-web-prod", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"spec.destination.name": SpokeClusterName, "spec.destination.namespace": "web-prod", "spec.project": "org-acme",
		"spec.source.path": "products/acme/web/web-prod",
	} {
		if got := field(zone.Object, path); got != want {
			t.Errorf("product-web-prod %s = %q, want %q", path, got, want)
		}
	}

	// Every decision with its reason.
	p := placements(t, ctx, base, token)
	for zone, want := range map[string]string{"web-prod": "placed", "web-rc": "placed", "web-edge": "waiting", "api-spoke": "rejected"} {
		if p[zone] == "" || !strings.HasPrefix(p[zone], want+":") {
			t.Errorf("placement of %s = %q, want %s", zone, p[zone], want)
		}
	}

	// Registration follows the spoke Application's own health (status.health; Argo CD v3 keeps
	// none per resource in status.resources): its one resource deleted on the spoke makes it
	// Missing (v3.4+: all of its resources are), so spoke is no longer registered. The zone
	// placed there stays placed, sticky, with its Application; it is placed plainly again once
	// the spoke Application is Healthy.
	if err := h.Spoke.Client.CoreV1().ConfigMaps("default").Delete(ctx, "spoke-registered", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPlacement := func(what, zone, want string) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for {
			got := placements(t, ctx, base, token)[zone]
			if strings.HasPrefix(got, want) {
				t.Logf("%s: %s: %s", what, zone, got)
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: placement of %s = %q, want %q…", what, zone, got, want)
			}
			time.Sleep(2 * time.Second)
		}
	}
	waitPlacement("spoke Application not Healthy", "web-prod",
		"placed: placed earlier on cluster spoke, kept while it is not registered: Application spoke-spoke is Missing, not Healthy")
	waitApps("while spoke is not registered", []string{"product-web-prod"}, nil)
	if err := h.SyncApp(ctx, "spoke-spoke", 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	waitPlacement("spoke Application Healthy again", "web-prod", "placed: cluster spoke is registered")

	// Git withdraws a zone: acme no longer allowlists spoke.
	if err := repo.Commit("acme: drop spoke", map[string]string{"orgs/acme.yaml": acmeOrg("edge")}); err != nil {
		t.Fatal(err)
	}
	post(t, ctx, base+"/api/v1/refresh", token)
	refreshAppSet(t, ctx, h, "spokeforge-zones")
	waitApps("after removing spoke from acme's allowlist", []string{"product-web-rc"}, []string{"product-web-prod"})

	// An invalid commit is not served: the last good snapshot stays, and says why.
	if err := repo.Commit("globex: typo", map[string]string{"orgs/globex.yaml": org("globex") + "  colour: red\n"}); err != nil {
		t.Fatal(err)
	}
	post(t, ctx, base+"/api/v1/refresh", token)
	if st := repoStatus(t, ctx, base, token); !strings.Contains(st, "orgs/globex.yaml") || !strings.Contains(st, "colour") {
		t.Errorf("repo status after an invalid commit: %s", st)
	}
	refreshAppSet(t, ctx, h, "spokeforge-zones")
	time.Sleep(5 * time.Second)
	waitApps("after an invalid commit", []string{"product-web-rc"}, []string{"product-web-prod"})

	// Stop the generator: the controller gets errors and keeps every Application.
	gen.Stop(5 * time.Second)
	for _, as := range []string{"spokeforge-zones", "spokeforge-clusters"} {
		refreshAppSet(t, ctx, h, as)
		waitErrorCondition(t, ctx, h, as)
		// The outage shows as the ApplicationSet's health, with the controller's error.
		waitAppSetHealth(t, ctx, h, as, "Degraded")
	}
	failed := time.Now() // about when the controller last called the stopped generator
	time.Sleep(5 * time.Second)
	waitApps("with the generator stopped", []string{"registry-spoke", "registry-edge", "product-web-rc", "spoke-spoke"}, nil)

	// A placement committed during the outage, and the generator back: how long until the
	// controller asks again on its own (no refresh annotation, no webhook)? After a generator
	// error the controller requeues the ApplicationSet after a fixed delay
	// (ReconcileRequeueOnValidationError, 3 min in v3.4 and v3.6); docs/generator.md.
	// The commit also fixes globex's typo: a generator that starts on an invalid head has no
	// last good snapshot to serve.
	if err := repo.Commit("acme: spoke again; globex fixed", map[string]string{"orgs/acme.yaml": acmeOrg(SpokeClusterName, "edge"), "orgs/globex.yaml": org("globex")}); err != nil {
		t.Fatal(err)
	}
	if err := gen.Start(ctx); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	deadline := back.Add(5 * time.Minute)
	for {
		if _, err := apps.Get(ctx, "product-web-prod", metav1.GetOptions{}); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("product-web-prod not placed %s after the generator came back", time.Since(back).Round(time.Second))
		}
		time.Sleep(time.Second)
	}
	t.Logf("Argo CD %s: a zone placed during a generator outage appeared %s after the generator was back and %s after the controller's last failed call (no refresh)",
		h.ArgoCDVersion, time.Since(back).Round(time.Second), time.Since(failed).Round(time.Second))
	refreshAppSet(t, ctx, h, "spokeforge-clusters")
	for _, as := range []string{"spokeforge-zones", "spokeforge-clusters"} {
		waitAppSetHealth(t, ctx, h, as, "Healthy")
	}
}

// field reads a dotted path ("\\." escapes a dot) of obj as a string.
func field(obj map[string]any, path string) string {
	parts := strings.Split(strings.ReplaceAll(path, `\.`, "\x00"), ".")
	var cur any = obj
	for _, p := range parts {
		m, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		cur = m[strings.ReplaceAll(p, "\x00", ".")]
	}
	s, _ := cur.(string)
	return s
}

// placementsBody is the answer of /api/v1/placements, as far as the test reads it.
type placementsBody struct {
	Zones     []struct{ Zone, Outcome, Reason string }
	Repo      json.RawMessage
	Inventory struct {
		Served    bool           `json:"served"`
		Profiles  map[string]int `json:"profiles"`
		Conflicts []any          `json:"conflicts"`
	} `json:"inventory"`
}

func getPlacements(t *testing.T, ctx context.Context, base, token string) placementsBody {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/placements", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var body placementsBody
	if err := json.Unmarshal(b, &body); err != nil || resp.StatusCode != 200 {
		t.Fatalf("placements: %d %s %v", resp.StatusCode, b, err)
	}
	return body
}

// placements returns every zone's decision and reason.
func placements(t *testing.T, ctx context.Context, base, token string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, z := range getPlacements(t, ctx, base, token).Zones {
		out[z.Zone] = z.Outcome + ": " + z.Reason
	}
	t.Logf("placements: %v", out)
	return out
}

// repoStatus returns the repo part of /api/v1/placements as JSON.
func repoStatus(t *testing.T, ctx context.Context, base, token string) string {
	t.Helper()
	return string(getPlacements(t, ctx, base, token).Repo)
}

func post(t *testing.T, ctx context.Context, url, token string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("POST %s: %d %s", url, resp.StatusCode, b)
	}
}

// refreshAppSet asks the controller to reconcile now, with the annotation Argo CD's own webhook
// sets. The controller removes it only after a reconcile that succeeds, and requeues on an
// annotation change only: after a failed one (generator down) setting "true" again is no
// change at all, so each call writes a new value.
func refreshAppSet(t *testing.T, ctx context.Context, h *Hub, name string) {
	t.Helper()
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{"argocd.argoproj.io/application-set-refresh":"%d"}}}`, time.Now().UnixNano()))
	if _, err := h.Hub.Dynamic.Resource(applicationSetsGVR).Namespace(ArgoCDNamespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitAppSetHealth waits until the ApplicationSet's status.health (Argo CD v3.4+) is want.
func waitAppSetHealth(t *testing.T, ctx context.Context, h *Hub, name, want string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	var got, msg string
	for {
		as, err := h.Hub.Dynamic.Resource(applicationSetsGVR).Namespace(ArgoCDNamespace).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			got, _, _ = unstructured.NestedString(as.Object, "status", "health", "status")
			msg, _, _ = unstructured.NestedString(as.Object, "status", "health", "message")
			if got == want {
				t.Logf("%s: status.health %s: %s", name, got, msg)
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: status.health %q (%s), want %s", name, got, msg, want)
		}
		time.Sleep(2 * time.Second)
	}
}

// waitErrorCondition waits until the ApplicationSet reports ErrorOccurred=True.
func waitErrorCondition(t *testing.T, ctx context.Context, h *Hub, name string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		as, err := h.Hub.Dynamic.Resource(applicationSetsGVR).Namespace(ArgoCDNamespace).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			conds, _, _ := unstructured.NestedSlice(as.Object, "status", "conditions")
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["type"] == "ErrorOccurred" && m["status"] == "True" {
					t.Logf("%s: ErrorOccurred: %v", name, m["message"])
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never reported ErrorOccurred with the generator stopped", name)
		}
		time.Sleep(2 * time.Second)
	}
}
