//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/spokeforge/spokeforge/generator"
)

// TestGeneratorReplicas: two generator processes behind a round-robin front (a Service
// stand-in) serve the real applicationset-controller. While the ApplicationSets reconcile
// and commits add zones, one replica is killed (SIGKILL): no Application is deleted, no
// ApplicationSet shows ErrorOccurred for longer than one requeue (requeueOnError), and zones
// committed after the kill are placed through the other replica.
// requeueOnError is how long the applicationset-controller waits before retrying an ApplicationSet
// whose generator call failed (ReconcileRequeueOnValidationError, the same in v3.4.7 and
// v3.6.2; docs/generator.md). A call in flight to the killed replica, or sent to it before the
// front's probe drops it, fails; the ApplicationSet then shows ErrorOccurred until its next
// reconcile: an owned Application changing, or this retry. The refresh loop below does not cut
// it short ("true" over "true" is no event).
const requeueOnError = 3 * time.Minute

func TestGeneratorReplicas(t *testing.T) {
	h := StartHub(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if h.Spokeforge == "" {
		t.Fatal("the harness did not build spokeforge")
	}
	// The inventory API first: both replicas write the status of the spoke's ClusterProfile.
	installInventoryCRD(ctx, t, h)
	zonesOf := func(n int) string {
		var b strings.Builder
		b.WriteString("apiVersion: spokeforge.io/v1alpha1\nkind: Product\nmetadata: {name: web}\nspec:\n  delivery:\n    zones:\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "      - {name: web-%02d, environment: pre-release}\n", i)
		}
		return b.String()
	}
	repo, err := h.NewGitRepo("gitops", map[string]string{
		"clusters/spoke/cluster.yaml": clusterRecord(SpokeClusterName, "spk", h.Spoke.URL),
		// The zones run on the management cluster, each in its own namespace.
		"orgs/acme.yaml":         org("acme", SpokeClusterName) + "  hubNamespaces: [web-00, web-01, web-02, web-03, web-04, web-05]\n",
		"products/acme/web.yaml": zonesOf(2),
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Hub.Apply(ctx, fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: org-acme, namespace: %s}
spec:
  sourceRepos: ['*']
  destinations: [{server: https://kubernetes.default.svc, namespace: '*'}]
`, ArgoCDNamespace)); err != nil {
		t.Fatal(err)
	}

	token := randomToken()
	tokenFile := filepath.Join(h.Dir, "generator-token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	inventory, err := h.inventoryFlags()
	if err != nil {
		t.Fatal(err)
	}
	var gens []*Process
	var bases []string
	for i := 0; i < 2; i++ {
		addr, err := freeAddr()
		if err != nil {
			t.Fatal(err)
		}
		base := "http://" + addr
		// A long fetch interval: a replica learns of a commit only by confirming the head.
		gen, err := h.run(procSpec{name: fmt.Sprintf("spokeforge-generator-%d", i), path: h.Spokeforge, args: append([]string{
			"generator", "--listen", addr, "--token-file", tokenFile, "--repo", repo.URL, "--revision", "main",
			"--interval", "10m", "--namespace", ArgoCDNamespace, "--kubeconfig", h.Hub.Kubeconfig, "--hub-probe-interval", "2s",
		}, inventory...)})
		if err != nil {
			t.Fatal(err)
		}
		if err := waitFor(ctx, gen, "/readyz", time.Minute, httpOK(base+"/readyz")); err != nil {
			t.Fatal(err)
		}
		gens, bases = append(gens, gen), append(bases, base)
	}
	fctx, stopFront := context.WithCancel(ctx)
	defer stopFront()
	fr, err := startFront(fctx, bases, 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.InstallApplicationSets(ctx, fr.URL, token); err != nil {
		t.Fatal(err)
	}
	appsets := []string{"spokeforge-clusters", "spokeforge-zones"}

	apps := h.Hub.Dynamic.Resource(applicationsGVR).Namespace(ArgoCDNamespace)
	waitApps := func(what string, want []string) time.Duration {
		t.Helper()
		start := time.Now()
		for {
			var missing []string
			for _, n := range want {
				if _, err := apps.Get(ctx, n, metav1.GetOptions{}); err != nil {
					missing = append(missing, n)
				}
			}
			if len(missing) == 0 {
				return time.Since(start)
			}
			if time.Since(start) > requeueOnError+time.Minute {
				t.Fatalf("%s: missing %v", what, missing)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	zoneApps := func(n int) []string {
		out := []string{"registry-spoke"}
		for i := 0; i < n; i++ {
			out = append(out, fmt.Sprintf("product-web-%02d", i))
		}
		return out
	}
	t.Logf("first generation in %s", waitApps("first generation", zoneApps(2)).Round(100*time.Millisecond))
	inventoryOneWriter(ctx, t, h, bases, token)

	// From here on: every Application deletion, and how long each ApplicationSet shows
	// ErrorOccurred=True at a stretch.
	list, err := apps.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := apps.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var mu sync.Mutex
	var deleted []string
	go func() {
		for ev := range w.ResultChan() {
			if ev.Type == watch.Deleted {
				if u, ok := ev.Object.(*unstructured.Unstructured); ok {
					mu.Lock()
					deleted = append(deleted, u.GetName())
					mu.Unlock()
				}
			}
		}
	}()
	errSince := map[string]time.Time{}
	longest := map[string]time.Duration{}
	errMsgs := map[string]string{}
	pctx, stopPoll := context.WithCancel(ctx)
	pollDone := make(chan struct{})
	go func() {
		defer close(pollDone)
		for pctx.Err() == nil {
			for _, name := range appsets {
				as, err := h.Hub.Dynamic.Resource(applicationSetsGVR).Namespace(ArgoCDNamespace).Get(pctx, name, metav1.GetOptions{})
				if err != nil {
					continue
				}
				on := false
				conds, _, _ := unstructured.NestedSlice(as.Object, "status", "conditions")
				for _, c := range conds {
					if m, _ := c.(map[string]any); m["type"] == "ErrorOccurred" && m["status"] == "True" {
						on = true
						mu.Lock()
						errMsgs[name] = fmt.Sprint(m["message"])
						mu.Unlock()
					}
				}
				mu.Lock()
				switch since, was := errSince[name]; {
				case on && !was:
					errSince[name] = time.Now()
				case was:
					if d := time.Since(since); d > longest[name] {
						longest[name] = d
					}
					if !on {
						delete(errSince, name)
					}
				}
				mu.Unlock()
			}
			time.Sleep(250 * time.Millisecond)
		}
	}()
	// The ApplicationSets reconcile every second meanwhile (the annotation Argo CD's own
	// webhook sets).
	rctx, stopRefresh := context.WithCancel(ctx)
	refreshDone := make(chan struct{})
	go func() {
		defer close(refreshDone)
		for rctx.Err() == nil {
			for _, name := range appsets {
				patch := []byte(`{"metadata":{"annotations":{"argocd.argoproj.io/application-set-refresh":"true"}}}`)
				_, _ = h.Hub.Dynamic.Resource(applicationSetsGVR).Namespace(ArgoCDNamespace).Patch(rctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
			}
			time.Sleep(time.Second)
		}
	}()

	// A commit both replicas learn of only by confirming the head.
	if err := repo.Commit("web: 4 zones", map[string]string{"products/acme/web.yaml": zonesOf(4)}); err != nil {
		t.Fatal(err)
	}
	t.Logf("zones of a commit placed in %s", waitApps("after the second commit", zoneApps(4)).Round(100*time.Millisecond))
	time.Sleep(3 * time.Second)
	killed := time.Now()
	if err := syscall.Kill(-gens[0].cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-gens[0].done
	if err := repo.Commit("web: 6 zones", map[string]string{"products/acme/web.yaml": zonesOf(6)}); err != nil {
		t.Fatal(err)
	}
	t.Logf("zones committed after the kill placed %s after it", (time.Since(killed) + waitApps("after the kill", zoneApps(6))).Round(100*time.Millisecond))
	// Keep reconciling across a few requeues' worth of calls through the survivor; an
	// ApplicationSet whose call failed clears ErrorOccurred at its next reconcile, at the latest
	// the controller's retry (requeueOnError), so wait for that before judging.
	time.Sleep(20 * time.Second)
	for deadline := time.Now().Add(requeueOnError + 30*time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		mu.Lock()
		clear := len(errSince) == 0
		mu.Unlock()
		if clear {
			break
		}
	}
	stopRefresh()
	<-refreshDone
	stopPoll()
	<-pollDone

	mu.Lock()
	defer mu.Unlock()
	if len(deleted) > 0 {
		t.Errorf("Applications deleted while a replica was killed: %v", deleted)
	}
	for _, name := range appsets {
		if since, on := errSince[name]; on {
			t.Errorf("%s still shows ErrorOccurred (for %s): %s", name, time.Since(since).Round(time.Second), errMsgs[name])
		}
		if longest[name] > requeueOnError+30*time.Second {
			t.Errorf("%s showed ErrorOccurred for %s, longer than one requeue: %s", name, longest[name].Round(time.Second), errMsgs[name])
		}
		t.Logf("%s: longest ErrorOccurred stretch %s %s", name, longest[name].Round(100*time.Millisecond), errMsgs[name])
	}
	t.Logf("requests through the front: replica 0 (killed) %d, replica 1 %d", fr.served[0].Load(), fr.served[1].Load())
	if fr.served[1].Load() == 0 || fr.served[0].Load() == 0 {
		t.Errorf("the front did not spread calls over both replicas")
	}
}

// inventoryOneWriter: both replicas write the spoke's ClusterProfile status, and do not fight.
// The status has one owner, the field manager both use with server-side apply, and once it is
// current neither replica writes it again.
func inventoryOneWriter(ctx context.Context, t *testing.T, h *Hub, bases []string, token string) {
	t.Helper()
	// The profile as the app-of-apps' hub render makes it (this hub has no External Secrets
	// CRDs, so registry-spoke does not sync here; TestAddCluster covers the render's profile).
	if _, err := h.Hub.Apply(ctx, fmt.Sprintf(`apiVersion: multicluster.x-k8s.io/v1alpha1
kind: ClusterProfile
metadata:
  name: %s
  namespace: %s
  labels: {x-k8s.io/cluster-manager: spokeforge}
spec:
  displayName: %[1]s
  clusterManager: {name: spokeforge}
`, SpokeClusterName, ArgoCDNamespace)); err != nil {
		t.Fatal(err)
	}
	waitProfile(ctx, t, h, SpokeClusterName, "written by the replicas", func(st profileState) bool {
		return st.cond[generator.ConditionControlPlaneHealthy].Status != "" && st.cond[generator.ConditionContractsHold].Status != ""
	})
	writes := func() (total float64) {
		for _, b := range bases {
			for _, l := range strings.Split(scrape(t, strings.TrimPrefix(b, "http://")), "\n") {
				if v, ok := strings.CutPrefix(l, `spokeforge_generator_inventory_writes_total{result="ok"} `); ok {
					f, _ := strconv.ParseFloat(v, 64)
					total += f
				}
			}
		}
		return total
	}
	// The counter moves just after the write lands, so wait for it to count the status seen.
	var before float64
	if err := waitFor(ctx, nil, "the replicas' write counted", 30*time.Second, func(context.Context) error {
		if before = writes(); before == 0 {
			return errors.New("no write counted yet")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(12 * time.Second) // six cycles of each replica
	if after := writes(); after != before {
		t.Fatalf("the replicas kept writing an unchanged status: %v writes, then %v 12 s later", before, after)
	}
	p, err := h.Hub.Get(ctx, "multicluster.x-k8s.io/v1alpha1", "ClusterProfile", ArgoCDNamespace, SpokeClusterName)
	if err != nil {
		t.Fatal(err)
	}
	var status []string
	for _, m := range p.GetManagedFields() {
		if m.Subresource == "status" {
			status = append(status, fmt.Sprintf("%s/%s", m.Manager, m.Operation))
		}
	}
	if len(status) != 1 || status[0] != generator.InventoryFieldManager+"/Apply" {
		t.Fatalf("managers of the status: %v, want only %s/Apply", status, generator.InventoryFieldManager)
	}
	for _, b := range bases {
		inv := getPlacements(t, ctx, b, token).Inventory
		if !inv.Served || inv.Profiles["current"] != 1 || len(inv.Conflicts) != 0 {
			t.Fatalf("%s /api/v1/placements inventory: %+v", b, inv)
		}
	}
	t.Logf("inventory: %v status writes by the two replicas, none in the 12 s after; status owned by %v", before, status)
}
