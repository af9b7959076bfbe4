package generator

import (
	"encoding/json"
	"path"

	"github.com/spokeforge/spokeforge/internal/api/v1alpha1"
	"github.com/spokeforge/spokeforge/internal/names"
	"github.com/spokeforge/spokeforge/internal/validate"
)

// ClusterParams is the kind: clusters parameter set of one cluster record:
// what the app-of-apps registry-<cluster> template needs (it runs the CMP in
// mode hub over clusters/<cluster>, syncing into the hub's Argo CD
// namespace), and what that CMP puts into the spoke Application, so a
// template can also build the spoke Application directly. Keys are stable
// API (docs/generator.md).
func ClusterParams(e validate.ClusterEntry, src AppSource) map[string]any {
	c, n := e.Cluster, e.Names
	s := c.Spec
	project := s.Project
	if project == "" {
		project = "default"
	}
	dest := Destination{Name: c.Metadata.Name}
	if s.Connection.InCluster {
		dest = Destination{Server: names.InClusterServer}
	}
	workloadProject := ""
	if s.Org != "" {
		workloadProject = names.OrgProject(s.Org)
	}
	labels := map[string]any{}
	for k, v := range c.Metadata.Labels {
		labels[k] = v
	}
	return map[string]any{
		"name":             c.Metadata.Name,
		"shortName":        s.ShortName,
		"project":          project,
		"org":              s.Org,
		"workloadProject":  workloadProject,
		"appOfApps":        n.ArgoCD.AppOfApps,
		"spokeApplication": n.ArgoCD.SpokeApp,
		"clusterSecret":    n.ArgoCD.ClusterSecret,
		"syncWave":         AppOfAppsSyncWave,
		"inCluster":        s.Connection.InCluster,
		"server":           s.Connection.Server,
		"destination":      map[string]any{"name": dest.Name, "server": dest.Server},
		"argocdNamespace":  src.ArgoNamespace,
		"repoURL":          src.RepoURL,
		"targetRevision":   src.TargetRevision,
		"path":             n.ArgoCD.ComponentsPath,
		"plugin":           PluginName,
		"account":          s.Account,
		"accountID":        s.AccountID,
		"environment":      s.Environment,
		"region":           s.Region,
		"zone":             s.Zone,
		"provider":         s.Provider,
		"stabilization":    s.Stabilization,
		"identity": map[string]any{
			"trustAnchorArn": s.Identity.TrustAnchorArn,
			"profileArn":     s.Identity.ProfileArn,
			"roleArn":        n.IAMRoleArn,
		},
		"names":  namesMap(n),
		"labels": labels,
	}
}

// namesMap is the derived names in their `spokeforge names -o json` form.
func namesMap(n *names.Names) map[string]any {
	b, err := json.Marshal(n)
	if err != nil {
		panic(err) // names.Names holds only strings and slices of them
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		panic(err)
	}
	return m
}

// ZoneParams is the kind: zones parameter set of one zone: the Application
// product-<zone> in the org's AppProject org-<org>, deploying the zone's
// path to its destination.
func ZoneParams(p validate.ProductEntry, z v1alpha1.Zone, dest Destination, src AppSource) map[string]any {
	ns := z.Namespace
	if ns == "" {
		ns = z.Name
	}
	zonePath := z.Path
	if zonePath == "" {
		zonePath = path.Join("products", p.Org, p.Product.Metadata.Name, z.Name)
	}
	repoURL, rev := src.RepoURL, src.TargetRevision
	if ps := p.Product.Spec.Source; ps != nil {
		if ps.RepoURL != "" {
			repoURL = ps.RepoURL
		}
		if ps.TargetRevision != "" {
			rev = ps.TargetRevision
		}
	}
	return map[string]any{
		"org":             p.Org,
		"product":         p.Product.Metadata.Name,
		"zone":            z.Name,
		"environment":     z.Environment,
		"cluster":         z.Cluster,
		"namespace":       ns,
		"destination":     map[string]any{"name": dest.Name, "server": dest.Server},
		"applicationName": names.ZoneApplication(z.Name),
		"project":         names.OrgProject(p.Org),
		"repoURL":         repoURL,
		"targetRevision":  rev,
		"path":            zonePath,
	}
}
