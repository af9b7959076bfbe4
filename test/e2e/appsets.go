//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

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
