//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spokeforge/spokeforge/internal/names"
	"github.com/spokeforge/spokeforge/internal/repo"
)

// AddedCluster is the record the demo's "add a cluster" step commits.
const AddedCluster = "gpu-east-2"

// AddCluster is everything the "add a cluster" step needs around the commit a user makes: a
// spoke API server of its own (StartCluster) with its cert-manager, External Secrets Operator
// and fake AWS account (StartSpoke), and its Argo CD credentials in the hub's secret store
// (ServeClusterCredentials). Nothing on the hub knows the cluster until the record is pushed.
type AddCluster struct {
	Name    string
	Cluster *Cluster
	Spoke   *Spoke
	// Steps are the shell commands that onboard it: write the record, add it to its org's
	// allowlist, commit and push. The demo prints them; TestAddCluster runs them.
	Steps string
}

// addedClusterRecord is the record the steps write, for a spoke whose API server is at server.
func addedClusterRecord(name, server string) string {
	return fmt.Sprintf(`apiVersion: spokeforge.io/v1alpha1
kind: Cluster
metadata:
  name: %[1]s
  labels:
    gpu: h100
spec:
  shortName: eue2
  account: acme-ml
  accountID: "111122223333"
  environment: staging
  region: us-east-1
  zone: dc-ash2
  provider: equinix
  org: acme
  connection:
    server: %[2]s
    credentials:
      type: bearerToken
  identity:
    trustAnchorArn: arn:aws:rolesanywhere:us-east-1:111122223333:trust-anchor/0c5d6a3e-1f2b-4c8d-9e0f-1a2b3c4d5e6f
    profileArn: arn:aws:rolesanywhere:us-east-1:111122223333:profile/7a8b9c0d-1e2f-4a5b-8c6d-7e8f9a0b1c2d
    roleArn: arn:aws:iam::111122223333:role/eue2-workload
    issuer:
      name: spokeforge-ca
  network:
    podCIDR: 10.44.0.0/16
    serviceCIDR: 10.45.0.0/16
    dnsServiceIP: 10.45.0.10
  gpu:
    nodes:
      - name: h100-a
        product: NVIDIA-H100-80GB-HBM3
        count: 4
        memoryMiB: 81559
  queues:
    - purpose: jobs
  buckets:
    - purpose: checkpoints
  registries:
    - purpose: training
      namespaces: [training]
`, name, server)
}

// orgAllowing is orgs/acme.yaml with the allowlist clusters, and the example's hub namespace
// (zone checkout-rc).
func orgAllowing(clusters ...string) string {
	return "apiVersion: spokeforge.io/v1alpha1\nkind: Organization\nmetadata:\n  name: acme\nspec:\n  clusterAllowlist: [" +
		strings.Join(clusters, ", ") + "]\n  hubNamespaces: [checkout-rc]\n"
}

// DemoRepoFiles are the files the demo commits to its gitops repo (and TestAddCluster, which runs
// its step): examples/gitops under root without hub-local, whose spoke is the hub itself, and
// acme's allowlist without it.
func DemoRepoFiles(root string) (map[string]string, error) {
	files, err := RepoFiles(filepath.Join(root, ExampleRepo))
	if err != nil {
		return nil, err
	}
	for p := range files {
		if strings.HasPrefix(p, "clusters/hub-local/") {
			delete(files, p)
		}
	}
	files["orgs/acme.yaml"] = orgAllowing("gpu-east-1")
	return files, nil
}

// PrepareAddCluster readies the spoke of AddedCluster for a commit to the gitops work tree work:
// its API server, controllers, nodes and AWS account, and its credentials in the hub's store.
func (h *Hub) PrepareAddCluster(ctx context.Context, work string) (*AddCluster, error) {
	c, err := h.StartCluster(ctx, AddedCluster)
	if err != nil {
		return nil, err
	}
	record := addedClusterRecord(AddedCluster, c.URL)
	dir := filepath.Join(h.Dir, "add-cluster", AddedCluster)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte(record), 0o644); err != nil {
		return nil, err
	}
	spoke, err := h.StartSpoke(ctx, dir, SpokeOptions{Cluster: c})
	if err != nil {
		return nil, err
	}
	e, errs := repo.LoadCluster(dir, dir)
	if len(errs) > 0 {
		return nil, errs
	}
	if err := h.ServeClusterCredentials(ctx, e.Names.SecretPath+"/"+names.DefaultCredentialsSecret, c); err != nil {
		return nil, err
	}
	steps := fmt.Sprintf(`cd '%[1]s'
mkdir -p clusters/%[2]s
cat > clusters/%[2]s/cluster.yaml <<'EOF'
%[3]sEOF
cat > orgs/acme.yaml <<'EOF'
%[4]sEOF
git add clusters/%[2]s orgs/acme.yaml
git commit -q -m 'Onboard %[2]s'
git push -q
`, work, AddedCluster, record, orgAllowing("gpu-east-1", AddedCluster))
	return &AddCluster{Name: AddedCluster, Cluster: c, Spoke: spoke, Steps: steps}, nil
}

// StartAgentWhenSynced waits until the spoke Application delivered the Onboarding to the added
// spoke, then runs its agent as the spoke's kubelet would (Spoke.StartAgent).
func (a *AddCluster) StartAgentWhenSynced(ctx context.Context, interval time.Duration) (*SpokeAgent, error) {
	for {
		if _, err := a.Cluster.Get(ctx, "spokeforge.io/v1alpha1", "Onboarding", "", a.Name); err == nil {
			return a.Spoke.StartAgent(ctx, interval)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// InstallProjectsApp applies examples/gitops/hub/projects-app.yaml, the org AppProjects'
// Application, with repoURL the gitops repo.
func (h *Hub) InstallProjectsApp(ctx context.Context, repoURL string) error {
	b, err := os.ReadFile(filepath.Join(h.opts.RepoRoot, "examples", "gitops", "hub", "projects-app.yaml"))
	if err != nil {
		return err
	}
	const exampleURL = "https://git.example.com/platform/gitops.git"
	if !strings.Contains(string(b), exampleURL) {
		return fmt.Errorf("projects-app.yaml no longer names %s", exampleURL)
	}
	_, err = h.Hub.Apply(ctx, strings.Replace(string(b), exampleURL, repoURL, 1))
	return err
}
