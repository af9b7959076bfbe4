//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	exampleSpoke    = "gpu-east-1"
	exampleSpokeApp = "spoke-" + exampleSpoke
	exampleSpokeDir = "clusters/" + exampleSpoke
	recordPath      = exampleSpokeDir + "/cluster.yaml"
)

// TestSpokeforge drives the example spoke through Argo CD as a platform admin would: commit
// the record, sync with the CLI, change it, break it, and break the hub. The steps share one
// hub and build on each other; a failed step skips the rest.
func TestSpokeforge(t *testing.T) {
	parallel(t)
	h := StartHub(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	spoke, err := h.StartSpoke(ctx, filepath.Join(h.opts.RepoRoot, ExampleRepo, exampleSpokeDir), SpokeOptions{})
	if err != nil {
		t.Fatal(err)
	}

	files, err := RepoFiles(filepath.Join(h.opts.RepoRoot, ExampleRepo))
	if err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile(filepath.Join(h.opts.RepoRoot, ExampleRepo, "rendered", exampleSpoke+".spoke.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := RefsOf(string(golden))
	if err != nil {
		t.Fatal(err)
	}
	record := files[recordPath]
	if record == "" {
		t.Fatalf("%s missing from %s", recordPath, ExampleRepo)
	}

	var repo *GitRepo
	steps := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"commit and sync the example spoke", func(t *testing.T) {
			committed := time.Now()
			var err error
			if repo, err = h.NewGitRepo("gitops", files); err != nil {
				t.Fatal(err)
			}
			if _, err := h.Hub.Apply(ctx, SpokeApplication(exampleSpokeApp, repo.URL, exampleSpokeDir)); err != nil {
				t.Fatal(err)
			}
			if _, err := h.ArgoCD(ctx, "app", "sync", exampleSpokeApp, "--timeout", "300"); err != nil {
				t.Fatal(err)
			}
			st, err := h.WaitApp(ctx, exampleSpokeApp, "Synced", 2*time.Minute, func(s AppState) bool { return s.Sync == "Synced" })
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("commit -> Synced in %s (%s)", time.Since(committed).Round(time.Millisecond), st)
			// The agent Deployment is on the spoke now; its pod would start and check.
			if _, err := spoke.StartAgent(ctx, 5*time.Second); err != nil {
				t.Fatal(err)
			}
			if _, err := h.ArgoCD(ctx, "app", "wait", exampleSpokeApp, "--health", "--timeout", "120"); err != nil {
				t.Fatal(err)
			}
			st, err = h.App(ctx, exampleSpokeApp)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("commit -> Synced and Healthy in %s (%s)", time.Since(committed).Round(time.Millisecond), st)
			if missing := h.Spoke.Missing(ctx, want); len(missing) > 0 {
				t.Fatalf("rendered objects missing on the spoke:\n%s", strings.Join(missing, "\n"))
			}
			out, err := h.ArgoCD(ctx, "app", "manifests", exampleSpokeApp)
			if err != nil {
				t.Fatal(err)
			}
			got, err := RefsOf(out)
			if err != nil {
				t.Fatalf("argocd app manifests: %v", err)
			}
			if len(got) != len(want) {
				t.Fatalf("Argo CD rendered %d objects, the golden render has %d", len(got), len(want))
			}
			// Nothing landed on the hub.
			if _, err := h.Hub.Client.CoreV1().Namespaces().Get(ctx, "spokeforge-system", metav1.GetOptions{}); err == nil {
				t.Fatal("namespace spokeforge-system exists on the hub, want only the spoke")
			}
			if _, err := h.ArgoCD(ctx, "app", "set", exampleSpokeApp, "--sync-policy", "automated", "--self-heal", "--auto-prune"); err != nil {
				t.Fatal(err)
			}
		}},
		{"a record change reaches the spoke", func(t *testing.T) {
			changed := strings.Replace(record, "    - purpose: jobs\n", "    - purpose: jobs\n    - purpose: events\n", 1)
			if changed == record {
				t.Fatal("the example record has no jobs queue to add a queue after")
			}
			committed := time.Now()
			if err := repo.Commit("add the events queue", map[string]string{recordPath: changed}); err != nil {
				t.Fatal(err)
			}
			waitQueueKey(ctx, t, h, "QUEUE_EVENTS_NAME", "eue1-events", true)
			t.Logf("commit -> ConfigMap inference/spokeforge-queues updated on the spoke in %s", time.Since(committed).Round(time.Millisecond))
			waitSettled(ctx, t, h, repo)
			t.Logf("commit -> sync operation finished in %s", time.Since(committed).Round(time.Millisecond))
			record = changed
		}},
		{"self-heal restores a deleted object", func(t *testing.T) {
			deleted := time.Now()
			if err := h.Spoke.Client.CoreV1().ConfigMaps("inference").Delete(ctx, "spokeforge-queues", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			waitQueueKey(ctx, t, h, "QUEUE_EVENTS_NAME", "eue1-events", true)
			t.Logf("delete -> restored by self-heal in %s", time.Since(deleted).Round(time.Millisecond))
		}},
		{"an invalid record shows the field and prunes nothing", func(t *testing.T) {
			broken := strings.Replace(record, "    - purpose: events\n", "    - purpose: Events_Queue\n", 1)
			if err := repo.Commit("break the events queue", map[string]string{recordPath: broken}); err != nil {
				t.Fatal(err)
			}
			st, err := h.WaitApp(ctx, exampleSpokeApp, "showing the validation error", 2*time.Minute, func(s AppState) bool {
				return strings.Contains(strings.Join(s.Conditions, "\n"), "spec.queues[1].purpose")
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("application conditions: %q", st.Conditions)
			if !strings.Contains(strings.Join(st.Conditions, "\n"), "cluster.yaml") {
				t.Errorf("the error does not name the file: %q", st.Conditions)
			}
			// Two more reconciliations with the bad commit, past the repo-error grace period.
			time.Sleep(2*h.opts.AppResync + 5*time.Second)
			if missing := h.Spoke.Missing(ctx, want); len(missing) > 0 {
				t.Fatalf("objects pruned from the spoke after an invalid commit:\n%s", strings.Join(missing, "\n"))
			}
			waitQueueKey(ctx, t, h, "QUEUE_EVENTS_NAME", "eue1-events", true)
			if err := repo.Commit("fix the events queue", map[string]string{recordPath: record}); err != nil {
				t.Fatal(err)
			}
			waitSettled(ctx, t, h, repo)
		}},
		{"sync recovers after the repo-server is killed", func(t *testing.T) {
			if err := h.Kill("argocd-repo-server"); err != nil {
				t.Fatal(err)
			}
			without := strings.Replace(record, "    - purpose: events\n", "", 1)
			if err := repo.Commit("drop the events queue", map[string]string{recordPath: without}); err != nil {
				t.Fatal(err)
			}
			if _, err := h.WaitApp(ctx, exampleSpokeApp, "reporting the missing repo-server", time.Minute, func(s AppState) bool {
				return strings.Contains(strings.Join(s.Conditions, "\n"), "ComparisonError")
			}); err != nil {
				t.Logf("no comparison error seen while the repo-server was down: %v", err)
			}
			restarted := time.Now()
			if err := h.Restart(ctx, "argocd-repo-server", tcpCheck(h.RepoServerAddr)); err != nil {
				t.Fatal(err)
			}
			waitQueueKey(ctx, t, h, "QUEUE_EVENTS_NAME", "", false)
			t.Logf("repo-server restart -> change on the spoke in %s", time.Since(restarted).Round(time.Millisecond))
			waitSettled(ctx, t, h, repo)
		}},
	}
	for _, s := range steps {
		if !t.Run(s.name, s.run) {
			t.Fatalf("step %q failed; skipping the rest", s.name)
		}
	}
}

// waitSettled waits until the spoke Application is Synced to the repository's head with its
// last sync operation finished and no error condition. Drift made while an operation still
// runs stalls that operation (it waits for the health of what was deleted), as it would on
// any Argo CD.
func waitSettled(ctx context.Context, t *testing.T, h *Hub, repo *GitRepo) {
	t.Helper()
	head, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.WaitApp(ctx, exampleSpokeApp, "Synced to "+head[:8]+" with its operation finished", 3*time.Minute, func(s AppState) bool {
		return s.Sync == "Synced" && s.Revision == head && s.OperationPhase == "Succeeded" && len(s.Conditions) == 0
	}); err != nil {
		t.Fatal(err)
	}
}

// waitQueueKey waits until ConfigMap inference/spokeforge-queues on the spoke has key = value
// (present) or lacks key (!present).
func waitQueueKey(ctx context.Context, t *testing.T, h *Hub, key, value string, present bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	var last string
	for time.Now().Before(deadline) {
		cm, err := h.Spoke.Client.CoreV1().ConfigMaps("inference").Get(ctx, "spokeforge-queues", metav1.GetOptions{})
		if err == nil {
			v, ok := cm.Data[key]
			if ok == present && (!present || v == value) {
				return
			}
			last = cm.Data[key]
		} else {
			last = err.Error()
		}
		time.Sleep(250 * time.Millisecond)
	}
	st, _ := h.App(ctx, exampleSpokeApp)
	t.Fatalf("ConfigMap inference/spokeforge-queues: %s present=%v value %q not reached (last %q); app %s; logs in %s",
		key, present, value, last, st, h.LogDir)
}
