package validate

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/spokeforge/spokeforge/internal/api/v1alpha1"
	"github.com/spokeforge/spokeforge/internal/hubpolicy"
	"github.com/spokeforge/spokeforge/internal/names"
	"github.com/spokeforge/spokeforge/internal/record"
)

// Org checks one Organization; file must be orgs/<name>.yaml.
func Org(file string, lines record.Lines, o *v1alpha1.Organization) record.Errors {
	c := &checker{file: file, lines: lines}
	c.header(o.APIVersion, o.Kind, v1alpha1.KindOrganization)
	c.nameIsFileName(o.Metadata.Name, 50)
	c.labels(o.Metadata.Labels)
	seen := map[string]int{}
	for i, cl := range o.Spec.ClusterAllowlist {
		p := fmt.Sprintf("spec.clusterAllowlist[%d]", i)
		if j, dup := seen[cl]; dup {
			c.fail(p, "%q already listed at index %d", cl, j)
		}
		seen[cl] = i
		if !clusterNameRE.MatchString(cl) || len(cl) > MaxClusterName {
			c.fail(p, "%q is not a cluster name", cl)
		}
	}
	seenNS := map[string]int{}
	for i, ns := range o.Spec.HubNamespaces {
		p := fmt.Sprintf("%s[%d]", hubNamespacesPath, i)
		if j, dup := seenNS[ns]; dup {
			c.fail(p, "%q already listed at index %d", ns, j)
		}
		seenNS[ns] = i
		c.slug(p, ns, 63)
		if why := hubpolicy.PlatformNamespace(ns, ""); why != "" {
			c.fail(p, "%q %s: an org's zones never run in a platform component's namespace", ns, why)
		}
	}
	return c.errs
}

// Product checks one Product; file must be products/<org>/<name>.yaml.
func Product(file string, lines record.Lines, p *v1alpha1.Product) record.Errors {
	c := &checker{file: file, lines: lines}
	c.header(p.APIVersion, p.Kind, v1alpha1.KindProduct)
	c.nameIsFileName(p.Metadata.Name, 63)
	c.labels(p.Metadata.Labels)
	if src := p.Spec.Source; src != nil {
		if src.RepoURL != "" {
			if msg := RepoURLProblem(src.RepoURL); msg != "" {
				c.fail("spec.source.repoURL", "%q %s", record.Redact(src.RepoURL), msg)
			}
		}
		if src.TargetRevision != "" {
			if msg := RevisionProblem(src.TargetRevision); msg != "" {
				c.fail("spec.source.targetRevision", "%q %s", src.TargetRevision, msg)
			}
		}
	}
	if len(p.Spec.Delivery.Zones) == 0 {
		c.fail("spec.delivery.zones", "list at least one zone")
	}
	for i, z := range p.Spec.Delivery.Zones {
		zp := fmt.Sprintf("spec.delivery.zones[%d]", i)
		c.slug(zp+".name", z.Name, 63-len(names.ZoneApplication("")))
		c.slug(zp+".environment", z.Environment, 32)
		if z.Namespace != "" {
			c.slug(zp+".namespace", z.Namespace, 63)
		}
		if z.Cluster != "" && (!clusterNameRE.MatchString(z.Cluster) || len(z.Cluster) > MaxClusterName) {
			c.fail(zp+".cluster", "%q is not a cluster name", z.Cluster)
		}
		if z.Path != "" {
			if msg := PathProblem(z.Path); msg != "" {
				c.fail(zp+".path", "%q %s", z.Path, msg)
			}
		}
		if z.ApplicationPath != "" {
			if msg := PathProblem(z.ApplicationPath); msg != "" {
				c.fail(zp+".applicationPath", "%q %s", z.ApplicationPath, msg)
			}
		}
	}
	return c.errs
}

// Loc is where a record sits, for cross-file findings.
type Loc struct {
	File  string
	Lines record.Lines
}

// ClusterEntry, OrgEntry and ProductEntry are decoded records with their location.
type (
	ClusterEntry struct {
		Loc
		Cluster *v1alpha1.Cluster
		Names   *names.Names
	}
	OrgEntry struct {
		Loc
		Org *v1alpha1.Organization
	}
	ProductEntry struct {
		Loc
		Org     string
		Product *v1alpha1.Product
	}
)

func (l Loc) err(code record.Code, path, format string, args ...any) record.Error {
	return record.Error{File: l.File, Line: l.Lines.Line(path), Path: path, Code: code, Msg: fmt.Sprintf(format, args...)}
}

// unknownCluster is the finding for a reference to a cluster without a record.
func (l Loc) unknownCluster(path, cluster string) record.Error {
	return l.err(record.CodeUnknownCluster, path, "unknown cluster %q (no clusters/%s/cluster.yaml)", cluster, cluster)
}

// The field paths CrossFile names in findings, and whose lines TrimLines keeps.
const (
	namePath      = "metadata.name"
	shortNamePath = "spec.shortName"
	// secretPathField: the secret path derives from the whole spec.
	secretPathField   = "spec"
	workloadsPath     = "spec.workloads"
	allowlistPath     = "spec.clusterAllowlist"
	zonesPath         = "spec.delivery.zones"
	orgPath           = "spec.org"
	inClusterPath     = "spec.connection.inCluster"
	hubNamespacesPath = "spec.hubNamespaces"
)

// Present names the clusters and orgs whose record files exist, decoded or
// not: an allowlist, zone or product naming one whose file failed to decode
// is not also reported as unknown (that file's own error says what is wrong).
type Present struct{ Clusters, Orgs map[string]bool }

// CrossFile checks the rules that span records: colliding cloud names,
// allowlists and zones naming unknown clusters, products of unknown orgs,
// duplicate zone names, duplicate cluster names and two records deriving
// the same Argo CD Application name.
func CrossFile(clusters []ClusterEntry, orgs []OrgEntry, products []ProductEntry, present Present) record.Errors {
	// Maps hold indexes, sized up front, and field paths are spelt out only
	// for a finding: a fleet repo runs this on every commit.
	var errs record.Errors
	known := make(map[string]int, len(clusters))
	type owner struct {
		cluster int
		field   string
	}
	cloud := make(map[string]owner, 4*len(clusters))
	claim := func(i int, kind, name, field string) {
		e := &clusters[i]
		key := kind + "\x00" + name
		if prev, ok := cloud[key]; ok && clusters[prev.cluster].Cluster.Metadata.Name != e.Cluster.Metadata.Name {
			pe := &clusters[prev.cluster]
			errs = append(errs, e.err(record.CodeCloudNameCollision, field, "derived %s %q collides with cluster %s (%s:%d %s)",
				kind, name, pe.Cluster.Metadata.Name, pe.File, pe.Lines.Line(prev.field), prev.field))
			return
		}
		cloud[key] = owner{i, field}
	}
	// Every Argo CD Application the repo makes lives in one namespace: two
	// records may not derive the same name.
	zoneCount := 0
	for _, p := range products {
		zoneCount += len(p.Product.Spec.Delivery.Zones)
	}
	apps := make(map[string]*Loc, 2*len(clusters)+zoneCount)
	claimApp := func(l *Loc, path func() string, app string) {
		if prev, ok := apps[app]; ok && prev.File != l.File {
			errs = append(errs, l.err(record.CodeApplicationClash, path(), "the Argo CD Application %q is also made by %s", app, prev.File))
			return
		}
		apps[app] = l
	}
	nameField := func() string { return namePath }
	for i := range clusters {
		e := &clusters[i]
		n := e.Cluster.Metadata.Name
		if prev, dup := known[n]; dup {
			errs = append(errs, e.err(record.CodeDuplicateCluster, namePath, "cluster %q is also defined in %s", n, clusters[prev].File))
			continue
		}
		known[n] = i
		if e.Names == nil {
			continue
		}
		claimApp(&e.Loc, nameField, names.SpokeApplication(n))
		claimApp(&e.Loc, nameField, names.AppOfApps(n))
		for j, w := range e.Cluster.Spec.Workloads {
			claimApp(&e.Loc, func() string { return indexPath(nil, workloadsPath, j, ".name") }, names.WorkloadApplication(n, w.Name))
		}
		claim(i, "IAM role", e.Names.IAMRole, shortNamePath)
		claim(i, "secret path", e.Names.SecretPath, secretPathField)
		for _, c := range e.Names.Queues {
			claim(i, "SQS queue", c.Name, c.Field)
		}
		for _, c := range e.Names.Buckets {
			claim(i, "S3 bucket", c.Name, c.Field)
		}
		for _, c := range e.Names.Registries {
			claim(i, "ECR repository", c.Name, c.Field)
		}
	}
	orgNames := make(map[string]bool, len(orgs))
	allowed := make(map[[2]string]bool, len(clusters))
	for _, o := range orgs {
		orgNames[o.Org.Metadata.Name] = true
		for i, cl := range o.Org.Spec.ClusterAllowlist {
			allowed[[2]string{o.Org.Metadata.Name, cl}] = true
			if _, ok := known[cl]; !ok && !present.Clusters[cl] {
				errs = append(errs, o.unknownCluster(indexPath(nil, allowlistPath, i, ""), cl))
			}
		}
	}
	// Workload Applications go through the AppProject of the org the record
	// names (hub.yaml.tmpl): that org must exist and allowlist the cluster.
	// One record only may be the management cluster: two would share its
	// spokeforge-system, ClusterRole and ClusterSecretStore.
	inCluster := -1
	for i := range clusters {
		e := &clusters[i]
		if e.Names == nil || known[e.Cluster.Metadata.Name] != i {
			continue
		}
		n, s := e.Cluster.Metadata.Name, e.Cluster.Spec
		// An org whose file exists but did not decode is reported there only.
		orgBroken := present.Orgs[s.Org] && !orgNames[s.Org]
		if s.Org != "" && !orgBroken {
			switch {
			case !orgNames[s.Org]:
				errs = append(errs, e.err(record.CodeWorkloadOrg, orgPath, "unknown org %q (no orgs/%s.yaml): workload Applications go through the AppProject of an org that allowlists the cluster", s.Org, s.Org))
			case !allowed[[2]string{s.Org, n}]:
				errs = append(errs, e.err(record.CodeWorkloadOrg, orgPath, "org %q does not list %q in its spec.clusterAllowlist (orgs/%s.yaml): its AppProject %s would not admit the workload Applications", s.Org, n, s.Org, names.OrgProject(s.Org)))
			}
		}
		if s.Connection.InCluster {
			if inCluster >= 0 {
				errs = append(errs, e.err(record.CodeSecondInCluster, inClusterPath, "cluster %s (%s) is already the management cluster: one record only may be inCluster", clusters[inCluster].Cluster.Metadata.Name, clusters[inCluster].File))
			} else {
				inCluster = i
			}
		}
	}
	zones := make(map[string]*Loc, zoneCount)
	for pi := range products {
		p := &products[pi]
		if !orgNames[p.Org] && !present.Orgs[p.Org] {
			errs = append(errs, p.err(record.CodeUnknownOrg, namePath, "product of unknown org %q (no orgs/%s.yaml)", p.Org, p.Org))
		}
		for i, z := range p.Product.Spec.Delivery.Zones {
			zp := func(field string) string { return indexPath(nil, zonesPath, i, field) }
			if prev, dup := zones[z.Name]; dup {
				errs = append(errs, p.err(record.CodeDuplicateZone, zp(".name"), "zone %q is also defined in %s; zone names are unique (the Application is %s)", z.Name, prev.File, names.ZoneApplication(z.Name)))
			} else {
				zones[z.Name] = &p.Loc
				claimApp(&p.Loc, func() string { return zp(".name") }, names.ZoneApplication(z.Name))
			}
			if z.Cluster != "" {
				if _, ok := known[z.Cluster]; !ok && !present.Clusters[z.Cluster] {
					errs = append(errs, p.unknownCluster(zp(".cluster"), z.Cluster))
				}
			}
		}
	}
	errs = append(errs, hubPlacement(clusters, orgs, products)...)
	sort.SliceStable(errs, func(i, j int) bool {
		if errs[i].File != errs[j].File {
			return errs[i].File < errs[j].File
		}
		return errs[i].Line < errs[j].Line
	})
	return errs
}

// nameIsFileName checks metadata.name is a slug and matches <name>.yaml.
func (c *checker) nameIsFileName(name string, max int) {
	c.slug("metadata.name", name, max)
	if stem := strings.TrimSuffix(filepath.Base(c.file), filepath.Ext(c.file)); name != "" && stem != name {
		c.fail("metadata.name", "%q differs from the file name %q", name, stem)
	}
}

// TrimLines keeps of e's line map only the lines CrossFile reads for it. A
// record's full map (every field path) is most of its decoded memory, and
// once the per-file checks ran only the cross-file rules read it: a loader
// that keeps entries from one commit to the next keeps them trimmed.
// CrossFile reports the same findings, with the same lines, either way.
// intern, when not nil, gives the one copy of each path the caller keeps
// (a fleet repo spells zones[0].name thousands of times).
func (e *ClusterEntry) TrimLines(intern func(string) string) {
	paths := []string{namePath}
	if e.Names != nil {
		paths = append(paths, shortNamePath, secretPathField, orgPath, inClusterPath)
		for j := range e.Cluster.Spec.Workloads {
			paths = append(paths, indexPath(intern, workloadsPath, j, ".name"))
		}
		if s := e.Cluster.Spec; s.Connection.InCluster {
			// hubPlacement names the namespaces of an inCluster record.
			for j := range s.Secrets {
				paths = append(paths, indexPath(intern, "spec.secrets", j, ".namespace"))
			}
			for j, x := range s.Registries {
				for k := range x.Namespaces {
					paths = append(paths, indexPath(intern, indexPath(nil, "spec.registries", j, ".namespaces"), k, ""))
				}
			}
			for j := range s.Certificates {
				paths = append(paths, indexPath(intern, "spec.certificates", j, ".namespace"))
			}
		}
		for _, cs := range [][]names.Cloud{e.Names.Queues, e.Names.Buckets, e.Names.Registries} {
			for _, c := range cs {
				paths = append(paths, c.Field)
			}
		}
	}
	e.Lines = keepLines(e.Lines, paths)
}

// TrimLines is ClusterEntry.TrimLines for an org.
func (e *OrgEntry) TrimLines(intern func(string) string) {
	paths := make([]string, 0, len(e.Org.Spec.ClusterAllowlist)+len(e.Org.Spec.HubNamespaces))
	for i := range e.Org.Spec.ClusterAllowlist {
		paths = append(paths, indexPath(intern, allowlistPath, i, ""))
	}
	for i := range e.Org.Spec.HubNamespaces {
		paths = append(paths, indexPath(intern, hubNamespacesPath, i, ""))
	}
	e.Lines = keepLines(e.Lines, paths)
}

// TrimLines is ClusterEntry.TrimLines for a product.
func (e *ProductEntry) TrimLines(intern func(string) string) {
	zs := e.Product.Spec.Delivery.Zones
	paths := make([]string, 0, 1+3*len(zs))
	paths = append(paths, namePath)
	for i := range zs {
		paths = append(paths, indexPath(intern, zonesPath, i, ".name"), indexPath(intern, zonesPath, i, ".cluster"), indexPath(intern, zonesPath, i, ".namespace"))
	}
	e.Lines = keepLines(e.Lines, paths)
}

// keepLines is the part of l that answers paths, each resolved as
// l.Line resolves it, so the result's Line gives the same for them.
func keepLines(l record.Lines, paths []string) record.Lines {
	m := make(record.Lines, len(paths))
	for _, p := range paths {
		m[p] = l.Line(p)
	}
	return m
}

// indexPath is prefix[i]suffix, through intern when it is not nil.
func indexPath(intern func(string) string, prefix string, i int, suffix string) string {
	p := prefix + "[" + strconv.Itoa(i) + "]" + suffix
	if intern != nil {
		return intern(p)
	}
	return p
}
