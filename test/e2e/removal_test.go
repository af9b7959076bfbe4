//go:build e2e

package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/spokeforge/spokeforge/generator"
)

// removalZone is the zone of the example repo placed on the example spoke
// (products/acme/checkout.yaml), and removalZoneApp its Application.
const (
	removalZone    = "checkout-prod"
	removalZoneApp = "product-" + removalZone
)

// TestRemoveCluster (SPEC "Removing a cluster"): deleting a cluster record from git removes on
// the hub its app-of-apps, its spoke Application, its workload and zone Applications, and
// deletes nothing on the spoke. The example spoke is onboarded through the real
// applicationset-controller and `spokeforge generator` with the ApplicationSets of
// examples/gitops/hub, then clusters/gpu-east-1/ is removed in one commit; every object of the
// spoke (uid, resourceVersion and, for Secrets, a hash of the data) must be as before.
func TestRemoveCluster(t *testing.T) {
	parallel(t)
	t.Run("record and allowlist entry in one commit, generator running", func(t *testing.T) { removeCluster(t, false, true) })
	t.Run("generator stopped at the removal commit, then started again", func(t *testing.T) { removeCluster(t, true, false) })
}

func removeCluster(t *testing.T, stopGenerator, withAllowlist bool) {
	started := time.Now()
	h := StartHub(t, Options{})
	if h.Spokeforge == "" {
		t.Fatal("the harness did not build spokeforge")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	// As in TestHostileRecord: External Secrets CRDs on the hub, the real controllers on the
	// spoke, a stand-in External Secrets on the hub, and the Argo CD cluster Secret of gpu-east-1 written by hand (what ESO
	// would write from the rendered ExternalSecret), the spoke API server under another URL.
	spoke, err := h.StartSpoke(ctx, filepath.Join(h.opts.RepoRoot, ExampleRepo, exampleSpokeDir), SpokeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.RegisterSpokeAs(ctx, exampleSpoke, map[string]string{"gpu": "a100"}); err != nil {
		t.Fatal(err)
	}

	// The example repo, with the record of hub-local left out (its zones are then rejected per
	// zone; fewer Applications for a 2-core machine) and the manifests of the checkout zones
	// added, so the zone Application on the spoke has an object there. gpu-west-2 (never
	// registered) stays: the generator refuses a repo without any cluster record as invalid
	// and keeps serving the last good snapshot.
	files, err := RepoFiles(filepath.Join(h.opts.RepoRoot, ExampleRepo))
	if err != nil {
		t.Fatal(err)
	}
	if files[recordPath] == "" || files[exampleSpokeDir+"/kustomization.yaml"] == "" {
		t.Fatalf("%s/ in %s has no record or no overlay", exampleSpokeDir, ExampleRepo)
	}
	for p := range files {
		if strings.HasPrefix(p, "clusters/hub-local/") {
			delete(files, p)
		}
	}
	for _, z := range []string{removalZone, "checkout-rc"} {
		files["products/acme/checkout/"+z+"/configmap.yaml"] = fmt.Sprintf(
			"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: checkout-settings, namespace: %s}\ndata: {zone: %s}\n", z, z)
	}
	var removal map[string]string
	for p := range files {
		if strings.HasPrefix(p, exampleSpokeDir+"/") {
			if removal == nil {
				removal = map[string]string{}
			}
			removal[p] = "" // Commit deletes files given empty content
		}
	}
	if withAllowlist {
		removal["orgs/acme.yaml"] = "apiVersion: spokeforge.io/v1alpha1\nkind: Organization\nmetadata:\n  name: acme\nspec:\n  clusterAllowlist: []\n  hubNamespaces: [checkout-rc]\n"
	}
	repo, err := h.NewGitRepo("gitops", files)
	if err != nil {
		t.Fatal(err)
	}
	// The inventory API, before any Application: the app-of-apps then also syncs the profile.
	installInventoryCRD(ctx, t, h)
	if err := h.ApplyOrgProject(ctx, "acme", exampleSpoke); err != nil {
		t.Fatal(err)
	}

	// The generator and the two example ApplicationSets, as in TestGenerator.
	gen, err := h.StartGenerator(ctx, repo.URL)
	if err != nil {
		t.Fatal(err)
	}
	base, token := gen.Base, gen.Token
	if err := h.InstallApplicationSets(ctx, base, token); err != nil {
		t.Fatal(err)
	}

	// Onboarding: the app-of-apps registry-gpu-east-1 (automated, from the clusters
	// ApplicationSet) syncs the ExternalSecret, spoke-gpu-east-1 (automated) and the workload
	// Application in waves; the agent makes the spoke Application Healthy.
	onboarded := time.Now()
	if _, err := h.WaitApp(ctx, hostileHubApp, "generated", 3*time.Minute, func(AppState) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if _, err := h.WaitApp(ctx, exampleSpokeApp, "Synced", 5*time.Minute, func(s AppState) bool { return s.Sync == "Synced" }); err != nil {
		t.Fatal(err)
	}
	sa, err := spoke.StartAgent(ctx, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.ArgoCD(ctx, "app", "wait", exampleSpokeApp, "--health", "--timeout", "240"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.WaitApp(ctx, hostileWorkloadApp, "created", 3*time.Minute, func(AppState) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if err := h.SyncApp(ctx, hostileWorkloadApp, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	// The zone on gpu-east-1 is placed once spoke-gpu-east-1 is Healthy.
	post(t, ctx, base+"/api/v1/refresh", token)
	refreshAppSet(t, ctx, h, "spokeforge-zones")
	if _, err := h.WaitApp(ctx, removalZoneApp, "Synced and Healthy", 4*time.Minute, func(s AppState) bool {
		return s.Sync == "Synced" && s.Health == "Healthy"
	}); err != nil {
		t.Fatal(err)
	}
	head, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	for _, app := range []string{hostileHubApp, exampleSpokeApp} {
		if _, err := h.WaitApp(ctx, app, "Synced with its sync finished", 4*time.Minute, func(s AppState) bool {
			return s.Sync == "Synced" && s.Revision == head && s.OperationPhase == "Succeeded"
		}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.Spoke.Get(ctx, "v1", "ConfigMap", removalZone, "checkout-settings"); err != nil {
		t.Fatalf("the zone Application %s did not deliver its ConfigMap: %v", removalZoneApp, err)
	}
	t.Logf("onboarded in %s", time.Since(onboarded).Round(time.Second))
	waitProfile(ctx, t, h, exampleSpoke, "onboarded", func(st profileState) bool {
		return st.cond[generator.ConditionContractsHold].Status == "True"
	})

	// The agent writes the Onboarding status on every check; it is not Argo CD and would change
	// resourceVersions on its own: stop it before the snapshot. Then the spoke must be still.
	sa.Agent.stop(5 * time.Second)
	time.Sleep(5 * time.Second)
	before, err := spokeState(ctx, h.Spoke)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2*h.opts.AppResync + 5*time.Second)
	again, err := spokeState(ctx, h.Spoke)
	if err != nil {
		t.Fatal(err)
	}
	if d := stateDiff(before, again); len(d) > 0 {
		t.Fatalf("the spoke changes on its own with nothing committed (not comparable):\n  %s", strings.Join(d, "\n  "))
	}
	for _, want := range []string{
		"Onboarding.spokeforge.io /" + exampleSpoke, "Namespace /" + removalZone, "ConfigMap " + removalZone + "/checkout-settings",
	} {
		if _, ok := before[want]; !ok {
			t.Fatalf("the snapshot of the spoke has no %s", want)
		}
	}
	hubGone := []string{hostileHubApp, exampleSpokeApp, hostileWorkloadApp, removalZoneApp}
	t.Logf("snapshot: %d objects on the spoke; hub Applications of %s: %v", len(before), exampleSpoke, hubGone)

	// The removal: one commit deletes clusters/gpu-east-1/ (record and overlay).
	if stopGenerator {
		gen.Stop(5 * time.Second)
		t.Log("generator stopped")
	}
	committed := time.Now()
	if err := repo.Commit("remove cluster "+exampleSpoke, removal); err != nil {
		t.Fatal(err)
	}
	if stopGenerator {
		// The ApplicationSets get errors meanwhile and must keep every Application.
		refreshAppSet(t, ctx, h, "spokeforge-clusters")
		waitErrorCondition(t, ctx, h, "spokeforge-clusters")
		time.Sleep(2*h.opts.AppResync + h.opts.RepoErrorGrace)
		for _, app := range []string{hostileHubApp, removalZoneApp} {
			if _, err := h.App(ctx, app); err != nil {
				t.Errorf("%s with the generator stopped: %v", app, err)
			}
		}
		if d := stateDiff(before, mustSpokeState(ctx, t, h.Spoke)); len(d) > 0 {
			t.Errorf("the spoke changed while the generator was stopped:\n  %s", strings.Join(d, "\n  "))
		}
		if err := gen.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Logf("generator started again %s after the commit", time.Since(committed).Round(time.Second))
	}
	post(t, ctx, base+"/api/v1/refresh", token)

	// Wait up to 3 minutes for every Application of gpu-east-1 to be gone from the hub.
	goneAt := map[string]time.Duration{}
	deadline := committed.Add(3 * time.Minute)
	nextRefresh := time.Now()
	for {
		if time.Now().After(nextRefresh) {
			refreshAppSet(t, ctx, h, "spokeforge-clusters")
			refreshAppSet(t, ctx, h, "spokeforge-zones")
			nextRefresh = time.Now().Add(15 * time.Second)
		}
		for _, app := range hubGone {
			if _, seen := goneAt[app]; seen {
				continue
			}
			_, err := h.Hub.Dynamic.Resource(applicationsGVR).Namespace(ArgoCDNamespace).Get(ctx, app, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				goneAt[app] = time.Since(committed)
			}
		}
		if len(goneAt) == len(hubGone) || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	placements(t, ctx, base, token)
	var remaining []string
	for _, app := range hubGone {
		if d, ok := goneAt[app]; ok {
			t.Logf("%s gone from the hub %s after the commit", app, d.Round(time.Millisecond))
			continue
		}
		remaining = append(remaining, app+": "+describeApp(ctx, h, app))
	}
	if len(remaining) > 0 {
		t.Errorf("3 minutes after removing %s/ from git these Applications are still on the hub:\n  %s",
			exampleSpokeDir, strings.Join(remaining, "\n  "))
	} else {
		var last time.Duration
		for _, d := range goneAt {
			last = max(last, d)
		}
		t.Logf("every Application of %s gone from the hub %s after the commit", exampleSpoke, last.Round(time.Millisecond))
	}
	// The ExternalSecret of the hub render goes with the app-of-apps' render; the cluster Secret
	// itself was written by the test (no ESO on the hub), so nothing deletes it here.
	es, err := h.Hub.Get(ctx, "external-secrets.io/v1", "ExternalSecret", ArgoCDNamespace, "cluster-"+exampleSpoke)
	switch {
	case err == nil:
		t.Errorf("ExternalSecret %s/cluster-%s is still on the hub (deletionTimestamp %v, finalizers %v, annotations %v)",
			ArgoCDNamespace, exampleSpoke, es.GetDeletionTimestamp(), es.GetFinalizers(), es.GetAnnotations())
	case !apierrors.IsNotFound(err):
		t.Errorf("ExternalSecret cluster-%s on the hub: %v", exampleSpoke, err)
	}

	// Its ClusterProfile goes with the app-of-apps' render too.
	if err := waitFor(ctx, nil, "ClusterProfile "+exampleSpoke+" gone", time.Minute, func(ctx context.Context) error {
		_, err := h.Hub.Get(ctx, "multicluster.x-k8s.io/v1alpha1", "ClusterProfile", ArgoCDNamespace, exampleSpoke)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%v)", err)
	}); err != nil {
		t.Error(err)
	}

	// Nothing on the spoke deleted or changed, also after a few more reconciliations.
	time.Sleep(2*h.opts.AppResync + h.opts.RepoErrorGrace)
	after := mustSpokeState(ctx, t, h.Spoke)
	if d := stateDiff(before, after); len(d) > 0 {
		t.Errorf("removing %s changed the spoke (%d objects before, %d after):\n  %s", exampleSpoke, len(before), len(after), strings.Join(d, "\n  "))
	} else {
		t.Logf("the spoke is unchanged: %d objects, same uid, resourceVersion and Secret data", len(after))
	}
	t.Logf("took %s", time.Since(started).Round(time.Second))
}

// describeApp says what keeps an Application on the hub.
func describeApp(ctx context.Context, h *Hub, name string) string {
	u, err := h.Hub.Dynamic.Resource(applicationsGVR).Namespace(ArgoCDNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	st, _ := h.App(ctx, name)
	return fmt.Sprintf("deletionTimestamp=%v finalizers=%v ownerReferences=%d tracking=%q %s", u.GetDeletionTimestamp(), u.GetFinalizers(),
		len(u.GetOwnerReferences()), u.GetAnnotations()["argocd.argoproj.io/tracking-id"]+u.GetLabels()["app.kubernetes.io/instance"], st)
}

func mustSpokeState(ctx context.Context, t *testing.T, c *Cluster) map[string]string {
	t.Helper()
	s, err := spokeState(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// spokeState maps every object of c, namespaced and cluster-scoped ("Kind.group ns/name", as
// listObjects names them; Events, Leases and ComponentStatus left out), to its uid,
// resourceVersion, deletionTimestamp and, for Secrets, a hash of the data.
func spokeState(ctx context.Context, c *Cluster) (map[string]string, error) {
	lists, err := c.Client.Discovery().ServerPreferredResources()
	if err != nil {
		return nil, fmt.Errorf("%s: discovery: %w", c.Name, err)
	}
	out := map[string]string{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			return nil, err
		}
		for _, r := range l.APIResources {
			gr := schema.GroupResource{Group: gv.Group, Resource: r.Name}
			if strings.Contains(r.Name, "/") || !listable(r.Verbs) {
				continue
			}
			switch gr {
			case schema.GroupResource{Resource: "events"}, schema.GroupResource{Group: "events.k8s.io", Resource: "events"},
				schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, schema.GroupResource{Resource: "componentstatuses"}:
				continue
			}
			items, err := c.Dynamic.Resource(gv.WithResource(r.Name)).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, fmt.Errorf("%s: list %s: %w", c.Name, gr, err)
			}
			kind := r.Kind
			if gv.Group != "" {
				kind += "." + gv.Group
			}
			for _, it := range items.Items {
				v := fmt.Sprintf("uid=%s rv=%s", it.GetUID(), it.GetResourceVersion())
				if ts := it.GetDeletionTimestamp(); ts != nil {
					v += " deleting-since=" + ts.String()
				}
				if gr == (schema.GroupResource{Resource: "secrets"}) {
					b, _ := json.Marshal(it.Object["data"])
					sum := sha256.Sum256(b)
					v += " data=" + hex.EncodeToString(sum[:8])
				}
				out[fmt.Sprintf("%s %s/%s", kind, it.GetNamespace(), it.GetName())] = v
			}
		}
	}
	return out, nil
}

// stateDiff lists the objects gone, new or changed between two spokeState snapshots.
func stateDiff(before, now map[string]string) []string {
	var d []string
	for k, v := range before {
		switch w, ok := now[k]; {
		case !ok:
			d = append(d, "gone: "+k+" ("+v+")")
		case w != v:
			d = append(d, "changed: "+k+" ("+v+" -> "+w+")")
		}
	}
	for k, v := range now {
		if _, ok := before[k]; !ok {
			d = append(d, "new: "+k+" ("+v+")")
		}
	}
	sort.Strings(d)
	return d
}
