//go:build !cmponly

package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/spokeforge/spokeforge/generator"
)

func generatorCmd(stderr io.Writer) *cobra.Command {
	var (
		g                    generator.GitConfig
		listen, tokenFile    string
		kubeconfig, logLevel string
		interval, probe      time.Duration
		maxBody              int64
		noHub                bool
		inv                  generator.InventoryConfig
		argoServer, argoTok  string
		argoCA               string
	)
	cmd := &cobra.Command{
		Use:   "generator",
		Short: "Serve the ApplicationSet plugin generator (kind: clusters and kind: zones)",
		Long: `generator answers Argo CD's plugin generator calls (POST /api/v1/getparams.execute)
from the gitops repo (fetched every --interval and on POST /api/v1/refresh) and the
hub's Argo CD cluster Secrets and Applications in --namespace. See docs/generator.md.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return fmt.Errorf("--log-level %q: %w", logLevel, err)
			}
			log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))
			if g.App.RepoURL == "" {
				if !generator.IsRemote(g.Repo) {
					return fmt.Errorf("--app-repo-url is required when --repo %q is a local path: it is the repoURL the generated Applications use", g.Repo)
				}
				g.App.RepoURL = g.Repo
			}
			if g.App.TargetRevision == "" {
				g.App.TargetRevision = g.Revision
			}
			if os.Getenv("GOGC") == "" {
				debug.SetGCPercent(generator.GCPercent)
			}
			g.Log = log
			src, err := generator.NewGitSource(g)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			go exitSoonAfter(ctx, log)
			var hub generator.Hub
			var dc dynamic.Interface
			if !noHub {
				kh, d, err := kubeHub(kubeconfig, g.App.ArgoNamespace, probe, log)
				if err != nil {
					return err
				}
				go kh.Run(ctx)
				hub, dc = kh, d
			}
			cfg := generator.Config{TokenFile: tokenFile, MaxBodyBytes: maxBody, Log: log}
			if inv.Namespace != "" {
				if dc == nil {
					return fmt.Errorf("--inventory-namespace needs the hub: drop --no-hub")
				}
				if argoServer == "" {
					return fmt.Errorf("--inventory-namespace needs --argocd-server: the profiles' status is read through it")
				}
				argo, err := generator.NewArgoCDAPI(argoServer, argoTok, argoCA)
				if err != nil {
					return err
				}
				inv.Log = log
				cfg.Inventory = generator.NewInventory(inv, src, hub, argo, generator.NewKubeProfiles(ctx, dc, inv.Namespace))
				go cfg.Inventory.Run(ctx)
			}
			srv, err := generator.NewServer(cfg, src, hub)
			if err != nil {
				return err
			}
			go src.Run(ctx, interval)
			return srv.Run(ctx, listen)
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", ":4355", "address to serve on")
	f.StringVar(&tokenFile, "token-file", "/var/run/spokeforge/token", "file holding the bearer token Argo CD sends (at least 16 characters)")
	f.StringVar(&g.Repo, "repo", "", "gitops repo: https://, ssh://, user@host:path or file:// URL, or a local directory")
	f.StringVar(&g.Revision, "revision", "HEAD", "branch, tag or HEAD to read")
	f.StringVar(&g.UsernameFile, "git-username-file", "", "https user name file (default user: git)")
	f.StringVar(&g.PasswordFile, "git-password-file", "", "https password or token file")
	f.StringVar(&g.SSHKeyFile, "git-ssh-key-file", "", "ssh private key file")
	f.StringVar(&g.KnownHostsFile, "git-known-hosts-file", "", "ssh known_hosts file (required with ssh)")
	f.DurationVar(&interval, "interval", time.Minute, "how often the repo is fetched")
	f.DurationVar(&g.MaxStaleness, "max-staleness", 15*time.Minute, "answer 503 once the repo could not be fetched for this long (0: never)")
	f.BoolVar(&g.ConfirmHead, "confirm-head", true, "check the revision's commit before every answer and load it if it moved, so replicas answer alike (503 while the repo is unreachable)")
	f.StringVar(&g.App.RepoURL, "app-repo-url", "", "repoURL of the generated Applications (default: --repo when it is a URL)")
	f.StringVar(&g.App.TargetRevision, "app-target-revision", "", "targetRevision of the generated Applications (default: --revision)")
	f.StringVar(&g.App.ArgoNamespace, "namespace", "argocd", "Argo CD namespace: cluster Secrets and Applications are read there")
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the hub (default: in-cluster, then KUBECONFIG)")
	f.DurationVar(&probe, "hub-probe-interval", 10*time.Second, "how often the hub API server is checked")
	f.BoolVar(&noHub, "no-hub", false, "run without the hub (kind: zones then answers 503)")
	f.Int64Var(&maxBody, "max-body-bytes", generator.DefaultMaxBodyBytes, "largest request body accepted")
	f.StringVar(&inv.Namespace, "inventory-namespace", "", "write the status of spokeforge's ClusterProfiles in this namespace (docs/inventory.md; empty: off)")
	f.DurationVar(&inv.Interval, "inventory-interval", 15*time.Second, "how often every ClusterProfile status is recomputed")
	f.DurationVar(&inv.OnboardingRefresh, "inventory-onboarding-refresh", time.Minute, "how often each spoke's Onboarding is read through argocd-server (and at once when its spoke Application's health changes)")
	f.DurationVar(&inv.Staleness, "inventory-staleness", 5*time.Minute, "state not read for this long turns a ClusterProfile condition Unknown")
	f.StringVar(&argoServer, "argocd-server", "", "argocd-server URL the inventory reads cluster connection states and Onboardings from")
	f.StringVar(&argoTok, "argocd-token-file", "/var/run/spokeforge/argocd-token", "file holding the Argo CD account token (apiKey) for --argocd-server")
	f.StringVar(&argoCA, "argocd-ca-file", "", "CA certificate of argocd-server's TLS certificate (default: the system roots)")
	f.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	_ = cmd.MarkFlagRequired("repo")
	return cmd
}

// ShutdownLimit is how long the generator may take to stop after SIGTERM,
// whatever it is doing (a snapshot load included).
const ShutdownLimit = 2 * time.Second

// exitSoonAfter ends the process once ctx is done and a graceful stop has
// not finished in time.
func exitSoonAfter(ctx context.Context, log *slog.Logger) {
	<-ctx.Done()
	time.Sleep(ShutdownLimit - 300*time.Millisecond)
	log.Warn("graceful stop did not finish in time; exiting", "limit", ShutdownLimit.String())
	os.Exit(0)
}

func kubeHub(kubeconfig, ns string, probe time.Duration, log *slog.Logger) (*generator.KubeHub, dynamic.Interface, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("hub kubernetes client: %w", err)
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	kh, err := generator.NewKubeHub(kc, dc, ns, probe, log)
	return kh, dc, err
}
