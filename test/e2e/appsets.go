//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Generator is a spokeforge generator the harness runs on the hub, as manifests/generator
// deploys it: Base is its URL, Token the bearer token the plugin ConfigMap's Secret holds.
type Generator struct {
	Base, Token string
	Proc        *Process
	spec        procSpec
	h           *Hub
}

// InventoryStaleness is the harness generator's --inventory-staleness.
const InventoryStaleness = 45 * time.Second

// StartGenerator runs `spokeforge generator` on repoURL's main branch (fetching every 5 s,
// probing the hub every 2 s) with a new token, writing the ClusterProfiles' status of Argo CD's
// namespace, and waits until it is ready.
func (h *Hub) StartGenerator(ctx context.Context, repoURL string) (*Generator, error) {
	g := &Generator{Token: randomToken(), h: h}
	tokenFile := filepath.Join(h.Dir, "generator-token")
	if err := os.WriteFile(tokenFile, []byte(g.Token), 0o600); err != nil {
		return nil, err
	}
	inventory, err := h.inventoryFlags()
	if err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	g.Base = "http://" + addr
	g.spec = procSpec{name: "spokeforge-generator", path: h.Spokeforge, args: append([]string{
		"generator", "--listen", addr, "--token-file", tokenFile, "--repo", repoURL, "--revision", "main",
		"--interval", "5s", "--namespace", ArgoCDNamespace, "--kubeconfig", h.Hub.Kubeconfig, "--hub-probe-interval", "2s",
	}, inventory...)}
	return g, g.Start(ctx)
}

// inventoryFlags are the generator flags that write the ClusterProfiles' status of Argo CD's
// namespace (docs/inventory.md), with a token file for argocd-server (which runs with
// --disable-auth here, so any token reads). The inventory idles on a hub without the CRD.
func (h *Hub) inventoryFlags() ([]string, error) {
	tokenFile := filepath.Join(h.Dir, "generator-argocd-token")
	if err := os.WriteFile(tokenFile, []byte(randomToken()), 0o600); err != nil {
		return nil, err
	}
	return []string{"--inventory-namespace", ArgoCDNamespace, "--argocd-server", "http://" + h.ServerAddr, "--argocd-token-file", tokenFile,
		"--inventory-interval", "2s", "--inventory-onboarding-refresh", "5s", "--inventory-staleness", InventoryStaleness.String()}, nil
}

// Start runs the generator (again, after Stop) and waits until it is ready.
func (g *Generator) Start(ctx context.Context) error {
	p, err := g.h.run(g.spec)
	if err != nil {
		return err
	}
	g.Proc = p
	return waitFor(ctx, p, "/readyz", 2*time.Minute, httpOK(g.Base+"/readyz"))
}

// Stop stops the generator, waiting up to grace for it to exit.
func (g *Generator) Stop(grace time.Duration) { g.Proc.stop(grace) }

// InstallApplicationSets installs what README's step 4 installs on the hub, pointed at a
// generator at baseURL: the plugin ConfigMap of manifests/generator, the token Secret it
// names, and the example ApplicationSets of examples/gitops/hub.
func (h *Hub) InstallApplicationSets(ctx context.Context, baseURL, token string) error {
	cm, err := os.ReadFile(filepath.Join(h.opts.RepoRoot, "manifests", "generator", "plugin-configmap.yaml"))
	if err != nil {
		return err
	}
	plugin := strings.Replace(string(cm), "http://spokeforge-generator:4355", baseURL, 1)
	plugin = strings.Replace(plugin, "\n  name: spokeforge-generator\n", "\n  name: spokeforge-generator\n  namespace: "+ArgoCDNamespace+"\n", 1)
	if _, err := h.Hub.Apply(ctx, plugin+fmt.Sprintf("---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: spokeforge-generator-token\n  namespace: %s\n  labels: {app.kubernetes.io/part-of: argocd}\nstringData:\n  token: %s\n", ArgoCDNamespace, token)); err != nil {
		return err
	}
	for _, f := range []string{"clusters-appset.yaml", "zones-appset.yaml"} {
		b, err := os.ReadFile(filepath.Join(h.opts.RepoRoot, "examples", "gitops", "hub", f))
		if err != nil {
			return err
		}
		if _, err := h.Hub.Apply(ctx, string(b)); err != nil {
			return err
		}
	}
	return nil
}
