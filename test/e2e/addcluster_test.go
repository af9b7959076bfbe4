//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/spokeforge/spokeforge/generator"
	"github.com/spokeforge/spokeforge/internal/names"
	records "github.com/spokeforge/spokeforge/internal/repo"
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
	installInventoryCRD(ctx, t, h)
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
	// Not ready: the profile is there (its app-of-apps synced it) and says the contracts do not hold yet.
	waitProfile(ctx, t, h, add.Name, "before the agent's first check", func(st profileState) bool {
		return st.cond[generator.ConditionContractsHold].Status == "False"
	})
	checkAdmitted(ctx, t, h, add.Name, false)
	agent, err := add.StartAgentWhenSynced(ctx, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := h.ArgoCD(ctx, "app", "wait", app, "--health", "--timeout", "300"); err != nil {
		t.Fatalf("%s never Healthy: %v\n%s", app, err, out)
	}
	t.Logf("%s Healthy %s after the push", app, time.Since(pushed).Round(100*time.Millisecond))
	st := waitProfile(ctx, t, h, add.Name, "every boundary holds", func(st profileState) bool {
		return st.cond[generator.ConditionContractsHold].Status == "True" && st.cond[generator.ConditionControlPlaneHealthy].Status == "True"
	})
	checkAdmitted(ctx, t, h, add.Name, true)
	if st.version == "" || st.props["spokeforge.io/node-count"] == "" || st.props["gpu.spokeforge.io/NVIDIA-H100-80GB-HBM3"] != "4" || st.props["spokeforge.io/zone"] != "dc-ash2" {
		t.Fatalf("ClusterProfile %s: version %q, properties %v", add.Name, st.version, st.props)
	}

	// A contract fails: the role's policy loses the queue. The profile says which boundary.
	e, errs := records.LoadCluster(filepath.Join(h.Dir, "add-cluster", add.Name), add.Name)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	full := names.Policies(e.Cluster, e.Names).PermissionPolicy
	queue := e.Names.Queues[0].Name
	broken := time.Now()
	add.Spoke.AWS.PutRolePolicy(e.Cluster.Spec.Identity.RoleArn, "spokeforge", full.WithoutResource("arn:aws:sqs:us-east-1:111122223333:"+queue))
	st = waitProfile(ctx, t, h, add.Name, "the Queues boundary fails", func(st profileState) bool {
		return st.cond[generator.ConditionContractsHold].Status == "False" && st.cond[generator.ConditionContractsHold].Reason == "Queues"
	})
	if m := st.cond[generator.ConditionContractsHold].Message; !strings.Contains(m, queue) {
		t.Fatalf("ContractsHold message does not name the queue %s: %q", queue, m)
	}
	checkAdmitted(ctx, t, h, add.Name, false)
	t.Logf("policy narrowed -> ContractsHold False/Queues in %s", time.Since(broken).Round(100*time.Millisecond))
	add.Spoke.AWS.PutRolePolicy(e.Cluster.Spec.Identity.RoleArn, "spokeforge", *full)
	fixed := time.Now()
	waitProfile(ctx, t, h, add.Name, "the policy restored", func(st profileState) bool {
		return st.cond[generator.ConditionContractsHold].Status == "True"
	})
	checkAdmitted(ctx, t, h, add.Name, true)
	t.Logf("policy restored -> ContractsHold True in %s", time.Since(fixed).Round(100*time.Millisecond))
	// The agent stops checking: its last word does not stand as a True past the staleness.
	agent.Agent.stop(5 * time.Second)
	stopped := time.Now()
	waitProfile(ctx, t, h, add.Name, "the agent stopped", func(st profileState) bool {
		c := st.cond[generator.ConditionContractsHold]
		return c.Status == "Unknown" && c.Reason == "AgentSilent"
	})
	checkAdmitted(ctx, t, h, add.Name, false)
	t.Logf("agent stopped -> ContractsHold Unknown/AgentSilent in %s (staleness %s)", time.Since(stopped).Round(100*time.Millisecond), InventoryStaleness)
	// The generator reports the inventory: nothing owned by another manager here.
	if inv := getPlacements(t, ctx, gen.Base, gen.Token).Inventory; !inv.Served || inv.Profiles["current"] < 2 || len(inv.Conflicts) != 0 {
		t.Fatalf("/api/v1/placements inventory: %+v", inv)
	}

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

// profileState is what the test reads of a ClusterProfile's status.
type profileState struct {
	cond    map[string]metav1.Condition
	version string
	props   map[string]string
	raw     string
}

// waitProfile waits until the ClusterProfile called name in Argo CD's namespace satisfies ok,
// and logs its status (the note shows it at each step).
func waitProfile(ctx context.Context, t *testing.T, h *Hub, name, step string, ok func(profileState) bool) profileState {
	t.Helper()
	var st profileState
	err := waitFor(ctx, nil, "ClusterProfile "+name+": "+step, 3*time.Minute, func(ctx context.Context) error {
		p, err := h.Hub.Get(ctx, "multicluster.x-k8s.io/v1alpha1", "ClusterProfile", ArgoCDNamespace, name)
		if err != nil {
			return err
		}
		b, _ := json.Marshal(p.Object["status"])
		var s struct {
			Conditions []metav1.Condition             `json:"conditions"`
			Version    struct{ Kubernetes string }    `json:"version"`
			Properties []struct{ Name, Value string } `json:"properties"`
		}
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		st = profileState{cond: map[string]metav1.Condition{}, version: s.Version.Kubernetes, props: map[string]string{}, raw: string(b)}
		for _, c := range s.Conditions {
			st.cond[c.Type] = c
		}
		for _, p := range s.Properties {
			st.props[p.Name] = p.Value
		}
		if !ok(st) {
			return fmt.Errorf("status %s", b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ClusterProfile %s, %s: %s", name, step, st.raw)
	return st
}

// admitted is what a consumer following the inventory API's documented contract admits: the
// profiles of spokeforge's cluster manager (the x-k8s.io/cluster-manager label) whose
// ControlPlaneHealthy and spokeforge.io/ContractsHold conditions are both True.
func admitted(ctx context.Context, t *testing.T, h *Hub) map[string]bool {
	t.Helper()
	gvr := schema.GroupVersionResource{Group: "multicluster.x-k8s.io", Version: "v1alpha1", Resource: "clusterprofiles"}
	list, err := h.Hub.Dynamic.Resource(gvr).Namespace(ArgoCDNamespace).List(ctx, metav1.ListOptions{LabelSelector: "x-k8s.io/cluster-manager=spokeforge"})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for i := range list.Items {
		p := &list.Items[i]
		if conditionStatus(p, generator.ConditionControlPlaneHealthy) == "True" && conditionStatus(p, generator.ConditionContractsHold) == "True" {
			out[p.GetName()] = true
		}
	}
	return out
}

func checkAdmitted(ctx context.Context, t *testing.T, h *Hub, cluster string, want bool) {
	t.Helper()
	if got := admitted(ctx, t, h)[cluster]; got != want {
		t.Fatalf("a consumer of the inventory admits %s: %v, want %v", cluster, got, want)
	}
}

// installInventoryCRD installs the cluster inventory API on the hub from its module: each
// app-of-apps then also syncs its cluster's ClusterProfile (docs/inventory.md). Call it before
// any Application: Argo CD learns a CRD's kinds (what it passes renders as KUBE_API_VERSIONS) when
// it first syncs the cluster, which the first Application to it starts, or from the CRD's Added
// event; a CRD created during that first sync can miss both until the next full sync
// (ARGOCD_CLUSTER_CACHE_RESYNC_DURATION).
func installInventoryCRD(ctx context.Context, t *testing.T, h *Hub) {
	t.Helper()
	inv, err := ModuleDir(ClusterInventoryModule)
	if err != nil {
		t.Fatal(err)
	}
	// ApplyFiles waits for the CRD to be Established.
	if err := h.Hub.ApplyFiles(ctx, filepath.Join(inv, "config", "crd", "bases", "multicluster.x-k8s.io_clusterprofiles.yaml")); err != nil {
		t.Fatal(err)
	}
}
