//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// RegisterSpokeAs makes the harness spoke the Argo CD cluster name on the hub, as the hub's
// External Secrets would from the ExternalSecret cluster-<name> that the hub render makes
// for the record: the Secret cluster-<name> (cluster type, the record's labels) holding the
// spoke's URL, token and CA. The hub has no Secrets Manager, so the harness writes the Secret,
// and the hub's stand-in External Secrets (hubExternalSecrets) answers for the ExternalSecret.
// The record's connection.server is not the harness spoke's: ServeClusterCredentials is the
// path for a record that names its spoke's URL.
func (h *Hub) RegisterSpokeAs(ctx context.Context, name string, labels map[string]string) error {
	if _, err := h.hubExternalSecrets(ctx); err != nil {
		return err
	}
	cfg, err := h.Spoke.argoCDConfig()
	if err != nil {
		return err
	}
	ls := map[string]string{"argocd.argoproj.io/secret-type": "cluster", "spokeforge.io/cluster": name}
	for k, v := range labels {
		ls[k] = v
	}
	lb, err := json.Marshal(ls)
	if err != nil {
		return err
	}
	// The spoke by another name than the harness's "spoke" cluster: Argo CD keys clusters by URL.
	url := strings.Replace(h.Spoke.URL, "https://127.0.0.1:", "https://localhost:", 1)
	_, err = h.Hub.Apply(ctx, fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: cluster-%[1]s
  namespace: %[2]s
  labels: %[3]s
stringData:
  name: %[1]s
  server: %[4]s
  config: '%[5]s'
`, name, ArgoCDNamespace, lb, url, cfg))
	return err
}

// ApplyOrgProject creates the AppProject org-<org> as the projects render makes it for an org
// whose allowlist names cluster: sources anywhere, destinations the management cluster and
// cluster, Namespaces the one cluster-scoped kind. Zone and workload Applications go through it.
func (h *Hub) ApplyOrgProject(ctx context.Context, org, cluster string) error {
	_, err := h.Hub.Apply(ctx, fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: org-%[1]s, namespace: %[2]s}
spec:
  sourceRepos: ['*']
  destinations: [{server: https://kubernetes.default.svc, namespace: '*'}, {name: %[3]s, namespace: '*'}]
  clusterResourceWhitelist: [{group: '', kind: Namespace}]
`, org, ArgoCDNamespace, cluster))
	return err
}

// ApplyRenderedProjects applies the org AppProjects that spokeforge's projects mode renders
// from the gitops work tree dir, as the install's projects Application would.
func (h *Hub) ApplyRenderedProjects(ctx context.Context, dir string) error {
	cmd := exec.CommandContext(ctx, h.Spokeforge, "render", "--mode", "projects")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	projects, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("render --mode projects: %v: %s", err, stderr.String())
	}
	_, err = h.Hub.Apply(ctx, string(projects))
	return err
}

// hubExternalSecrets installs External Secrets' CRDs on the hub and starts, once per hub, the
// stand-in that answers for the hub's ExternalSecrets (StandInControllers) until ctx ends.
func (h *Hub) hubExternalSecrets(ctx context.Context) (*StandInControllers, error) {
	h.hubESOOnce.Do(func() {
		esoDir, err := ModuleDir(ExternalSecretsMod)
		if err == nil {
			err = h.Hub.ApplyFiles(ctx, filepath.Join(esoDir, "deploy", "crds", "bundle.yaml"))
		}
		if err != nil {
			h.hubESOErr = err
			return
		}
		h.hubESO = StartStandInControllers(ctx, h.Hub, "ExternalSecret")
	})
	return h.hubESO, h.hubESOErr
}

// ServeClusterCredentials puts spoke c's credentials into the hub's secret store (the stand-in's)
// under key, as a platform team stores a cluster's Argo CD credentials in the hub Secrets Manager
// for the record's bearerToken connection (docs/install.md): caData and bearerToken. The cluster
// Secret then appears only when the record's app-of-apps syncs its ExternalSecret, with the
// server the record names.
func (h *Hub) ServeClusterCredentials(ctx context.Context, key string, c *Cluster) error {
	s, err := h.hubExternalSecrets(ctx)
	if err != nil {
		return err
	}
	s.Serve(key, map[string]string{"caData": string(c.CAData), "bearerToken": c.Token})
	return nil
}
