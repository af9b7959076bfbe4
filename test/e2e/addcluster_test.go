//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestAddCluster runs the "add a cluster" step make demo prints, exactly: on the demo's hub (the
// generator, the two example ApplicationSets and the projects Application over the example repo),
// a second spoke API server waits with its controllers and its credentials in the hub's secret
// store; the printed shell commands write its record, add it to acme's allowlist, commit and
// push. Nothing else registers it: the app-of-apps appears because the record was committed, its
// ExternalSecret makes the cluster Secret with the server the record names, the spoke
// Application renders onto that spoke, and with its agent running it turns Healthy.
func TestAddCluster(t *testing.T) {
	parallel(t)
	h := StartHub(t, Options{})
	if h.Spokeforge == "" {
		t.Fatal("the harness did not build spokeforge")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	files, err := DemoRepoFiles(h.opts.RepoRoot)
	if err != nil {
		t.Fatal(err)
	}
	repo, err := h.NewGitRepo("gitops", files)
	if err != nil {
		t.Fatal(err)
	}
	// The cluster inventory API on the hub, from its module: each app-of-apps then also syncs its
	// cluster's ClusterProfile (docs/inventory.md). Before any Application: Argo CD learns a CRD's
	// kinds (what it passes renders as KUBE_API_VERSIONS) when it first syncs the cluster, which the
	// first Application to it starts, or from the CRD's Added event; a CRD created during that first
	// sync can miss both until the next full sync (ARGOCD_CLUSTER_CACHE_RESYNC_DURATION).
	inv, err := ModuleDir(ClusterInventoryModule)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Hub.ApplyFiles(ctx, filepath.Join(inv, "config", "crd", "bases", "multicluster.x-k8s.io_clusterprofiles.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, nil, "the ClusterProfile CRD Established", time.Minute, func(ctx context.Context) error {
		crd, err := h.Hub.Get(ctx, "apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "clusterprofiles.multicluster.x-k8s.io")
		if err != nil {
			return err
		}
		if st := conditionStatus(crd, "Established"); st != "True" {
			return fmt.Errorf("Established=%q", st)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := h.InstallProjectsApp(ctx, repo.URL); err != nil {
		t.Fatal(err)
	}
	gen, err := h.StartGenerator(ctx, repo.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.InstallApplicationSets(ctx, gen.Base, gen.Token); err != nil {
		t.Fatal(err)
	}
	add, err := h.PrepareAddCluster(ctx, repo.Work)
	if err != nil {
		t.Fatal(err)
	}
	appOfApps, app, secret := "registry-"+add.Name, "spoke-"+add.Name, "cluster-"+add.Name
	// The hub knows nothing of the cluster before the push.
	if _, err := h.WaitApp(ctx, "registry-gpu-east-1", "generated", 3*time.Minute, func(AppState) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Hub.Client.CoreV1().Secrets(ArgoCDNamespace).Get(ctx, secret, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("cluster Secret %s before the record was pushed: %v", secret, err)
	}

	t.Logf("the printed steps:\n%s", add.Steps)
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", add.Steps)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the printed steps failed: %v\n%s", err, out)
	}
	pushed := time.Now()
	// What was committed is a valid repo: the step is also what a PR check would pass.
	if out, err := exec.CommandContext(ctx, h.Spokeforge, "validate", repo.Work).CombinedOutput(); err != nil {
		t.Fatalf("spokeforge validate on the repo after the steps: %v\n%s", err, out)
	}

	if _, err := h.WaitApp(ctx, appOfApps, "generated", 3*time.Minute, func(AppState) bool { return true }); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s appeared %s after the push", appOfApps, time.Since(pushed).Round(100*time.Millisecond))
	if err := waitFor(ctx, nil, "cluster Secret "+secret, 3*time.Minute, func(ctx context.Context) error {
		s, err := h.Hub.Client.CoreV1().Secrets(ArgoCDNamespace).Get(ctx, secret, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got := string(s.Data["server"]); got != add.Cluster.URL {
			t.Fatalf("cluster Secret %s: server %q, want the record's %q", secret, got, add.Cluster.URL)
		}
		if s.Labels["argocd.argoproj.io/secret-type"] != "cluster" || s.Labels["gpu"] != "h100" {
			t.Fatalf("cluster Secret %s: labels %v", secret, s.Labels)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.WaitApp(ctx, app, "Synced", 5*time.Minute, func(s AppState) bool { return s.Sync == "Synced" }); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s synced %s after the push", app, time.Since(pushed).Round(100*time.Millisecond))
	if _, err := add.StartAgentWhenSynced(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if out, err := h.ArgoCD(ctx, "app", "wait", app, "--health", "--timeout", "300"); err != nil {
		t.Fatalf("%s never Healthy: %v\n%s", app, err, out)
	}
	t.Logf("%s Healthy %s after the push", app, time.Since(pushed).Round(100*time.Millisecond))

	// The org's AppProject, from the projects Application, took the allowlist change.
	if err := waitFor(ctx, nil, "AppProject org-acme admits "+add.Name, 3*time.Minute, func(ctx context.Context) error {
		p, err := h.Hub.Get(ctx, "argoproj.io/v1alpha1", "AppProject", ArgoCDNamespace, "org-acme")
		if err != nil {
			return err
		}
		dests, _, _ := unstructured.NestedSlice(p.Object, "spec", "destinations")
		for _, d := range dests {
			if name, _, _ := unstructured.NestedString(d.(map[string]any), "name"); name == add.Name {
				return nil
			}
		}
		return fmt.Errorf("destinations %v", dests)
	}); err != nil {
		t.Fatal(err)
	}
	// Its profile in the inventory (Argo CD's namespace: no other is configured), owned by spokeforge.
	if err := waitFor(ctx, nil, "ClusterProfile "+add.Name, 2*time.Minute, func(ctx context.Context) error {
		p, err := h.Hub.Get(ctx, "multicluster.x-k8s.io/v1alpha1", "ClusterProfile", ArgoCDNamespace, add.Name)
		if err != nil {
			return err
		}
		manager, _, _ := unstructured.NestedString(p.Object, "spec", "clusterManager", "name")
		display, _, _ := unstructured.NestedString(p.Object, "spec", "displayName")
		if manager != "spokeforge" || display != add.Name || p.GetLabels()["x-k8s.io/cluster-manager"] != "spokeforge" {
			t.Fatalf("ClusterProfile %s: %v", add.Name, p.Object)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// The record landed on its own spoke alone: nothing of spokeforge on the hub's first spoke.
	if _, err := h.Spoke.Client.CoreV1().Namespaces().Get(ctx, spokeforgeNamespace, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("namespace %s on the other spoke: %v", spokeforgeNamespace, err)
	}
}
