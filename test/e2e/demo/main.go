//go:build e2e

// Command demo brings up the end-to-end hub (test/e2e) with the bundled example gitops
// repository, syncs the example spoke through Argo CD and the spokeforge plugin, prints
// the applications and how to reach them, and keeps everything running until Ctrl-C.
// Run it from the repository root: make demo.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spokeforge/spokeforge/test/e2e"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	err := run(ctx)
	stop()
	e2e.KillAll() // what the hub left, and the spokeforge build the hub linked
	if err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
	// A Ctrl-C, even one that cut the start short, is a clean stop: exit 0, so that make
	// reports no error (README, "What make demo shows").
	if err != nil {
		say("stopped before the demo was up")
	}
}

func say(format string, args ...any) { fmt.Printf("[demo] "+format+"\n", args...) }

func run(ctx context.Context) error {
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(root, e2e.ExampleRepo)); err != nil {
		return fmt.Errorf("run from the repository root (make demo): %w", err)
	}

	say("starting etcd, hub and spoke kube-apiservers, Redis and Argo CD (about 30 s on 2 cores; building spokeforge first)")
	started := time.Now()
	startCtx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	h, err := e2e.Start(startCtx, e2e.Options{RepoRoot: root})
	cancel()
	if h != nil {
		defer h.Stop()
	}
	if err != nil {
		if h != nil {
			return fmt.Errorf("%w (logs in %s)", err, h.LogDir)
		}
		return err
	}
	say("hub up in %s; logs in %s", time.Since(started).Round(time.Second), h.LogDir)
	if err := h.InstallUIExtension(); err != nil {
		return err
	}
	say("starting the spoke's cert-manager and External Secrets Operator, and a local fake AWS account")
	spoke, err := h.StartSpoke(ctx, filepath.Join(root, e2e.ExampleRepo, "clusters", "gpu-east-1"), e2e.SpokeOptions{})
	if err != nil {
		return fmt.Errorf("%w (logs in %s)", err, h.LogDir)
	}

	// The hub's half of registering gpu-east-1: the cluster Secret its hub render's
	// ExternalSecret would make (the hub has no Secrets Manager here).
	const cluster = "gpu-east-1"
	if err := h.RegisterSpokeAs(ctx, cluster, map[string]string{"gpu": "a100"}); err != nil {
		return err
	}
	// hub-local's spoke is the hub itself: its contracts would need another agent on this
	// 2-core machine. gpu-west-2 stays: a record whose cluster has no API server here.
	files, err := e2e.DemoRepoFiles(root)
	if err != nil {
		return err
	}
	repo, err := h.NewGitRepo("gitops", files)
	if err != nil {
		return err
	}
	say("committed %s to %s; starting the spokeforge generator, the two example ApplicationSets and the org projects' Application", e2e.ExampleRepo, repo.URL)
	if err := h.InstallProjectsApp(ctx, repo.URL); err != nil {
		return err
	}
	committed := time.Now()
	gen, err := h.StartGenerator(ctx, repo.URL)
	if err != nil {
		return err
	}
	if err := h.InstallApplicationSets(ctx, gen.Base, gen.Token); err != nil {
		return err
	}
	const appOfApps, app = "registry-" + cluster, "spoke-" + cluster
	if _, err := h.WaitApp(ctx, appOfApps, "generated", 3*time.Minute, func(e2e.AppState) bool { return true }); err != nil {
		return err
	}
	say("%s appeared %s after the commit (spokeforge-clusters ApplicationSet, from the record); it syncs the cluster Secret and %s", appOfApps, time.Since(committed).Round(100*time.Millisecond), app)
	if _, err := h.WaitApp(ctx, app, "Synced", 5*time.Minute, func(s e2e.AppState) bool { return s.Sync == "Synced" }); err != nil {
		return err
	}
	say("%s synced %s after the commit: the spokeforge plugin rendered clusters/%s onto the spoke, wave by wave; starting the spoke's agent against the fake AWS account", app, time.Since(committed).Round(100*time.Millisecond), cluster)
	agent, err := spoke.StartAgent(ctx, 10*time.Second)
	if err != nil {
		return err
	}
	if _, err := h.ArgoCD(ctx, "app", "wait", app, "--health", "--timeout", "240"); err != nil {
		return err
	}
	say("Healthy %s after the commit: every onboarding contract holds", time.Since(committed).Round(100*time.Millisecond))
	say("starting a second spoke API server for the \"add a cluster\" step, with its controllers and its Argo CD credentials in the hub's secret store")
	add, err := h.PrepareAddCluster(ctx, repo.Work)
	if err != nil {
		return err
	}
	go followAddedCluster(ctx, h, add)
	list, err := h.ArgoCD(ctx, "app", "list")
	if err != nil {
		return err
	}
	argocd := filepath.Join(h.PathDir, "argocd")
	fmt.Printf(`
%s
The hub is running. Argo CD's web UI (no login; the Onboarding's Contracts tab shows its contracts):
  http://%s/applications/argocd/%s
Try:
  %s --server %s --plaintext --auth-token x app get %s
  %s --server %s --plaintext --auth-token x app resources %s
  KUBECONFIG=%s kubectl get all -A          # the spoke (if kubectl is installed)
  cd %s && git log --oneline  # the gitops repo: edit, git commit -a, git push to change the spoke
  env %s \
    %s check %s --kubeconfig %s \
    --certificate %s --private-key %s   # the contracts, as from a laptop
Argo CD reconciles every 10 s; the generator reads the repo every 5 s and the ApplicationSets
ask it every 60 s. gpu-west-2's record has no API server here: its spoke Application says its
cluster is unknown, which is what a record whose cluster is not registered looks like. The spoke
runs the real cert-manager and External Secrets Operator; it has no kubelet: a stand-in writes
Deployment status (see test/e2e/controllers.go), and the harness runs the credentials and agent
containers as processes. The hub's External Secrets is a stand-in too (test/e2e/register.go).

Add a cluster: a second spoke API server is up at %s and knows nothing yet. Paste these lines
into a shell to commit its record and push (the record's connection.server is that API server):

%s
Within about a minute registry-%s appears, its ExternalSecret makes the cluster Secret, and
spoke-%s syncs and turns Healthy (this window says when); argocd app get spoke-%s tells
the first failed boundary if it does not.

Press Ctrl-C to stop and clean up.
`, list, h.ServerAddr, app, argocd, h.ServerAddr, app, argocd, h.ServerAddr, app, h.Spoke.Kubeconfig, repo.Work,
		strings.Join(agent.AWSEnv, " "), h.Spokeforge, filepath.Join(repo.Work, "clusters", "gpu-east-1"), h.Spoke.Kubeconfig,
		filepath.Join(spoke.IdentityDir, "tls.crt"), filepath.Join(spoke.IdentityDir, "tls.key"),
		add.Cluster.URL, add.Steps, add.Name, add.Name, add.Name)
	<-ctx.Done()
	say("stopping")
	return nil
}

// followAddedCluster reports the added cluster's progress once its record is pushed: its
// app-of-apps appearing, its agent starting when the spoke Application delivered the Onboarding,
// then its health, or the first failed boundary that Argo CD reports.
func followAddedCluster(ctx context.Context, h *e2e.Hub, add *e2e.AddCluster) {
	appOfApps, app := "registry-"+add.Name, "spoke-"+add.Name
	for {
		if _, err := h.App(ctx, appOfApps); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
	}
	say("%s appeared: the spokeforge-clusters ApplicationSet made it from the pushed record", appOfApps)
	if _, err := add.StartAgentWhenSynced(ctx, 10*time.Second); err != nil {
		if ctx.Err() == nil {
			say("%s: the agent did not start: %v", add.Name, err)
		}
		return
	}
	say("%s synced onto the second spoke; its agent runs", app)
	if _, err := h.ArgoCD(ctx, "app", "wait", app, "--health", "--timeout", "600"); err != nil {
		if ctx.Err() == nil {
			st, _ := h.App(ctx, app)
			say("%s not Healthy after 10 min: %s (%s)", app, st.Health, st.HealthMessage)
		}
		return
	}
	say("%s Healthy: every onboarding contract of %s holds", app, add.Name)
}
