//go:build !cmponly

package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/spokeforge/spokeforge/healthchecks"
	"github.com/spokeforge/spokeforge/healthchecks/agent"
)

func agentCmd(stderr io.Writer) *cobra.Command {
	var af awsFlags
	var o agent.Options
	var kubeconfig, metricsAddr string
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run in the spoke: re-check the onboarding contracts on an interval and on change, and write the Onboarding status",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if o.Name == "" {
				return errors.New("--onboarding is required")
			}
			if o.Interval < time.Second {
				return fmt.Errorf("--interval %s: want at least 1s", o.Interval)
			}
			ctx, stop := signal.NotifyContext(c.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			kc, dc, err := clients(kubeconfig)
			if err != nil {
				return err
			}
			awsCfg, id, path, err := af.config(ctx)
			if err != nil {
				return err
			}
			o.Check = healthchecks.Config{Kube: kc, Dynamic: dc, Identity: id, AWS: awsCfg, S3PathStyle: path, CallTimeout: af.callTimeout}
			o.Log = slog.New(slog.NewJSONHandler(stderr, nil))
			o.Metrics = agent.NewMetrics()
			l, err := net.Listen("tcp", metricsAddr)
			if err != nil {
				return fmt.Errorf("--metrics-addr %s: %w", metricsAddr, err)
			}
			srv := &http.Server{Handler: o.Metrics.Handler(), ReadHeaderTimeout: 10 * time.Second}
			go func() { _ = srv.Serve(l) }()
			defer srv.Close()
			o.Log.Info("agent started", "onboarding", o.Name, "interval", o.Interval.String(), "metrics", l.Addr().String())
			return agent.New(o).Run(ctx)
		},
	}
	f := cmd.Flags()
	af.register(f, "/var/run/identity/tls.crt", "/var/run/identity/tls.key")
	f.StringVar(&o.Name, "onboarding", "", "name of the Onboarding to keep (the cluster name)")
	f.DurationVar(&o.Interval, "interval", time.Minute, "time between full re-checks")
	f.DurationVar(&o.Debounce, "debounce", 2*time.Second, "wait this long after a change before re-checking")
	f.DurationVar(&o.StaleAfter, "stale-after", 10*time.Minute, "keep a boundary's last known result this long while its dependency does not answer")
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig (default: in-cluster, then KUBECONFIG)")
	f.StringVar(&metricsAddr, "metrics-addr", ":8080", "address of /metrics and /healthz")
	return cmd
}
