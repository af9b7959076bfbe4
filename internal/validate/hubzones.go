package validate

import (
	"github.com/spokeforge/spokeforge/internal/hubpolicy"
	"github.com/spokeforge/spokeforge/internal/names"
	"github.com/spokeforge/spokeforge/internal/record"
)

// hubPlacement checks, from the data the org AppProjects are rendered from
// (render.Projects), where orgs reach the management cluster:
//
//   - a hub namespace belongs to one org (orgs/<org>.yaml spec.hubNamespaces);
//   - a zone on the management cluster (no cluster, or an inCluster one)
//     uses one of its org's hub namespaces, as its AppProject demands;
//   - a zone on a spoke uses neither a platform namespace nor a hub
//     namespace: its namespace is a Namespace its org's AppProject may
//     create, and that permission holds on the hub too (Argo CD's kind
//     allowlist covers every destination of a project);
//   - an inCluster record's namespaces (its secrets, registries and
//     certificates) are no org's, so no zone mounts what lands there, and
//     no two Applications manage one Namespace.
func hubPlacement(clusters []ClusterEntry, orgs []OrgEntry, products []ProductEntry) record.Errors {
	var errs record.Errors
	owner := map[string]int{}
	decoded := make(map[string]bool, len(orgs))
	for oi := range orgs {
		o := &orgs[oi]
		decoded[o.Org.Metadata.Name] = true
		for i, ns := range o.Org.Spec.HubNamespaces {
			if prev, dup := owner[ns]; dup && orgs[prev].Org.Metadata.Name != o.Org.Metadata.Name {
				errs = append(errs, o.err(record.CodeHubNamespace, indexPath(nil, hubNamespacesPath, i, ""),
					"hub namespace %q is also listed by org %s (%s): each hub namespace belongs to one org", ns, orgs[prev].Org.Metadata.Name, orgs[prev].File))
				continue
			}
			owner[ns] = oi
		}
	}
	orgHas := func(org, ns string) bool {
		oi, ok := owner[ns]
		return ok && orgs[oi].Org.Metadata.Name == org
	}
	hub := map[string]bool{}
	for i := range clusters {
		e := &clusters[i]
		if !e.Cluster.Spec.Connection.InCluster {
			continue
		}
		hub[e.Cluster.Metadata.Name] = true
		s := e.Cluster.Spec
		check := func(path func() string, ns string) {
			if oi, ok := owner[ns]; ok {
				errs = append(errs, e.err(record.CodeHubNamespace, path(),
					"namespace %q of the management cluster is a hub namespace of org %s (%s): its zones could mount what this record delivers there; use a namespace no org lists", ns, orgs[oi].Org.Metadata.Name, orgs[oi].File))
			}
		}
		for j, x := range s.Secrets {
			check(func() string { return indexPath(nil, "spec.secrets", j, ".namespace") }, x.Namespace)
		}
		for j, x := range s.Registries {
			for k, ns := range x.Namespaces {
				check(func() string { return indexPath(nil, indexPath(nil, "spec.registries", j, ".namespaces"), k, "") }, ns)
			}
		}
		for j, x := range s.Certificates {
			check(func() string { return indexPath(nil, "spec.certificates", j, ".namespace") }, x.Namespace)
		}
	}
	for pi := range products {
		p := &products[pi]
		if !decoded[p.Org] {
			// An unknown org or one whose file did not decode is reported
			// once, there or as CodeUnknownOrg.
			continue
		}
		for i, z := range p.Product.Spec.Delivery.Zones {
			ns, field := z.Namespace, ".namespace"
			if ns == "" {
				ns, field = z.Name, ".name"
			}
			path := indexPath(nil, zonesPath, i, field)
			if z.Cluster == "" || hub[z.Cluster] {
				if !orgHas(p.Org, ns) {
					errs = append(errs, p.err(record.CodeHubNamespace, path,
						"zone %q runs on the management cluster in namespace %q, which org %s does not list in spec.hubNamespaces (orgs/%s.yaml): its AppProject %s refuses it", z.Name, ns, p.Org, p.Org, names.OrgProject(p.Org)))
				}
				continue
			}
			if why := hubpolicy.PlatformNamespace(ns, ""); why != "" {
				errs = append(errs, p.err(record.CodeHubNamespace, path,
					"zone %q uses namespace %q, which %s: a zone's namespace is one its org's AppProject may create, on every destination of the project, the management cluster among them", z.Name, ns, why))
			} else if oi, ok := owner[ns]; ok {
				errs = append(errs, p.err(record.CodeHubNamespace, path,
					"zone %q on cluster %s uses namespace %q, a hub namespace of org %s (%s): a spoke zone's namespace is one its org's AppProject may create on the management cluster too, so it is never a hub namespace", z.Name, z.Cluster, ns, orgs[oi].Org.Metadata.Name, orgs[oi].File))
			}
		}
	}
	return errs
}
