// Command cert-manager-controller runs cert-manager v1.19.4's controllers for the end-to-end
// suite's spoke: the certificates controllers, the CA issuer, the Issuer and ClusterIssuer
// controllers and (unless --controllers drops it) the internal approver. cert-manager's own
// cmd/controller is a nested module that no proxy serves, so this main wires the controllers as
// its app.Run does: one context factory, every selected controller constructed, then the shared
// informers started. No leader election, metrics, ACME, ingress/gateway shims or webhook.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"golang.org/x/sync/errgroup"
	"k8s.io/klog/v2"

	"github.com/cert-manager/cert-manager/pkg/controller"
	logf "github.com/cert-manager/cert-manager/pkg/logs"

	// Each registers itself with controller.Register in init(); the real binary reaches most of
	// them through an internal package.
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the API server")
	crNS := flag.String("cluster-resource-namespace", "kube-system", "namespace of the ClusterIssuers' Secrets")
	sel := flag.String("controllers", "*", "comma-separated controller names: * for all, -name drops one")
	workers := flag.Int("concurrent-workers", 5, "workers per controller")
	klog.InitFlags(flag.CommandLine)
	flag.Parse()
	logf.InitLogs()
	defer logf.FlushLogs()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(logf.NewContext(ctx, logf.Log, "controller"), *kubeconfig, *crNS, *sel, *workers); err != nil {
		logf.Log.Error(err, "cert-manager controller")
		os.Exit(1)
	}
}

func run(root context.Context, kubeconfig, crNS, sel string, workers int) error {
	root, cancel := context.WithCancel(root)
	defer cancel()
	g, root := errgroup.WithContext(root)
	// cert-manager's defaults (internal/apis/config/controller/v1alpha1/defaults.go).
	f, err := controller.NewContextFactory(root, controller.ContextOptions{
		Kubeconfig:         kubeconfig,
		KubernetesAPIQPS:   20,
		KubernetesAPIBurst: 50,
		IssuerOptions:      controller.IssuerOptions{ClusterResourceNamespace: crNS, ClusterIssuerAmbientCredentials: true},
		CertificateOptions: controller.CertificateOptions{CopiedAnnotationPrefixes: []string{
			"*", "-kubectl.kubernetes.io/", "-fluxcd.io/", "-argocd.argoproj.io/"}},
	})
	if err != nil {
		return err
	}
	cctx, err := f.Build()
	if err != nil {
		return err
	}
	on := enabled(sel)
	for name, construct := range controller.Known() {
		if !on(name) {
			continue
		}
		iface, err := construct(f)
		if err != nil {
			cancel()
			_ = g.Wait()
			return fmt.Errorf("controller %s: %w", name, err)
		}
		logf.Log.Info("starting controller", "controller", name)
		g.Go(func() error { return iface.Run(workers, root) })
	}
	// The informers the constructors asked for, started after all of them (as app.Run).
	cctx.SharedInformerFactory.Start(root.Done())
	cctx.KubeSharedInformerFactory.Start(root.Done())
	cctx.HTTP01ResourceMetadataInformersFactory.Start(root.Done())
	err = g.Wait()
	cctx.HTTP01ResourceMetadataInformersFactory.Shutdown()
	cctx.KubeSharedInformerFactory.Shutdown()
	cctx.SharedInformerFactory.Shutdown()
	return err
}

// enabled reads --controllers as cert-manager does: names turn controllers on, -name turns one
// off, * (or only -names) means every registered one.
func enabled(sel string) func(string) bool {
	all, on, off := false, map[string]bool{}, map[string]bool{}
	for _, s := range strings.Split(sel, ",") {
		switch s = strings.TrimSpace(s); {
		case s == "*":
			all = true
		case strings.HasPrefix(s, "-"):
			off[s[1:]] = true
		case s != "":
			on[s] = true
		}
	}
	all = all || (len(on) == 0 && len(off) > 0)
	return func(n string) bool { return !off[n] && (all || on[n]) }
}
