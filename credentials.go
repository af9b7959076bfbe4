//go:build !cmponly

package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/spokeforge/spokeforge/internal/credentials"
)

func credentialsCmd(stderr io.Writer) *cobra.Command {
	var o credentials.Options
	var secrets []string
	var kubeconfig string
	var once bool
	cmd := &cobra.Command{
		Use:   "credentials",
		Short: "Exchange the workload certificate for AWS credentials (IAM Roles Anywhere) and keep them in a Secret for External Secrets",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			for _, s := range secrets {
				ns, name, ok := strings.Cut(s, "/")
				if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
					return fmt.Errorf("--secret %q: want NAMESPACE/NAME", s)
				}
				o.Secrets = append(o.Secrets, credentials.SecretRef{Namespace: ns, Name: name})
			}
			cfg, err := kubeConfig(kubeconfig)
			if err != nil {
				return err
			}
			kc := func(ns string) (credentials.SecretClient, error) { return credentials.NewSecretClient(cfg, ns) }
			log := slog.New(slog.NewJSONHandler(stderr, nil))
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			if once {
				iss, err := credentials.RefreshOnce(ctx, kc, o)
				if err != nil {
					return err
				}
				log.Info("credentials refreshed", "secrets", strings.Join(secrets, ","), "expiration", iss.Expiration.Format(time.RFC3339))
				return nil
			}
			return credentials.Run(ctx, kc, o, log)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Certificate, "certificate", "/var/run/identity/tls.crt", "workload certificate (PEM)")
	f.StringVar(&o.PrivateKey, "private-key", "/var/run/identity/tls.key", "its private key (PEM)")
	f.StringVar(&o.TrustAnchorArn, "trust-anchor-arn", "", "Roles Anywhere trust anchor ARN")
	f.StringVar(&o.ProfileArn, "profile-arn", "", "Roles Anywhere profile ARN")
	f.StringVar(&o.RoleArn, "role-arn", "", "IAM role to assume")
	f.StringVar(&o.Region, "region", "", "AWS region (default: the trust anchor's)")
	f.DurationVar(&o.SessionDuration, "session-duration", time.Hour, "session duration (15m-12h)")
	f.StringVar(&o.Endpoint, "endpoint", "", "Roles Anywhere endpoint override")
	f.StringArrayVar(&secrets, "secret", []string{"spokeforge-system/aws-credentials"},
		"Secret to write, NAMESPACE/NAME; repeat it for each (the registry ExternalSecrets' namespaces need their own)")
	f.DurationVar(&o.RefreshBefore, "refresh-before", 15*time.Minute, "refresh this long before expiry")
	f.DurationVar(&o.RetryMax, "retry-max", 5*time.Minute, "longest wait between failed attempts")
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig (default: in-cluster, then KUBECONFIG)")
	f.BoolVar(&once, "once", false, "refresh once and exit")
	for _, req := range []string{"trust-anchor-arn", "profile-arn", "role-arn"} {
		_ = cmd.MarkFlagRequired(req)
	}
	return cmd
}

// kubeConfig uses the kubeconfig if given, else in-cluster config, else the default loading rules.
func kubeConfig(kubeconfig string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return cfg, nil
}
