package generator

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"time"

	"github.com/spokeforge/spokeforge/internal/api/v1alpha1"
	"github.com/spokeforge/spokeforge/internal/names"
	"github.com/spokeforge/spokeforge/internal/record"
	"github.com/spokeforge/spokeforge/internal/repo"
	"github.com/spokeforge/spokeforge/internal/validate"
)

// PluginName is the Config Management Plugin the generated Applications use.
const PluginName = "spokeforge"

// AppOfAppsSyncWave is the sync wave of the app-of-apps registry-<cluster> (docs/generator.md).
const AppOfAppsSyncWave = "50"

// AppSource is where the generated Applications read the gitops repo, as
// Argo CD knows it (it may differ from the URL the generator fetches).
type AppSource struct {
	RepoURL        string
	TargetRevision string
	// ArgoNamespace is the hub namespace the app-of-apps syncs into.
	ArgoNamespace string
}

// Snapshot is one validated commit of the gitops repo with everything the
// generator answers from it computed once: the encoded parameter set of
// every cluster and zone, and the indexes placement needs.
type Snapshot struct {
	Commit   string
	LoadedAt time.Time
	Repo     *repo.Repo

	clusterSets    [][]byte
	clustersAnswer []byte // the encoded kind: clusters response
	clusters       map[string]clusterFacts
	allow          map[string]map[string]bool // org -> allowlisted clusters
	zones          []zoneEntry
}

type clusterFacts struct {
	inCluster bool
}

// zoneEntry is a zone with its static (git-derived) parameter set; only
// whether it is included depends on the hub.
type zoneEntry struct {
	Org, Product, Zone, Environment, Cluster string
	dest                                     Destination
	set                                      []byte
}

// Destination is an Argo CD Application destination: exactly one of Name
// and Server is set.
type Destination struct {
	Name   string `json:"name"`
	Server string `json:"server"`
}

// LoadSnapshot reads and validates every record of fsys. Zones and
// allowlist entries naming a cluster with no record are not repo errors
// here: the placement rules make them a per-zone rejection, so removing a cluster
// record withdraws its zones instead of freezing the whole repo. Every
// other finding rejects the snapshot.
func LoadSnapshot(fsys fs.FS, commit string, src AppSource) (*Snapshot, record.Errors) {
	return NewLoader(src).Load(fsys, commit)
}

// Loader builds one snapshot after another, reusing what did not change:
// the parsed and checked record of every file whose git blob hash is the
// same (repo.Loader), and the encoded parameter sets of every record it
// reuses. Its snapshots equal LoadSnapshot's. Not safe for concurrent use.
type Loader struct {
	src   AppSource
	repo  repo.Loader
	sets  map[*v1alpha1.Cluster][]byte
	zones map[*v1alpha1.Product][]zoneEntry
}

// NewLoader returns a Loader for Applications reading the repo at src.
func NewLoader(src AppSource) *Loader { return &Loader{src: src} }

// Load is LoadSnapshot, incrementally.
func (l *Loader) Load(fsys fs.FS, commit string) (*Snapshot, record.Errors) {
	r, errs := l.repo.Load(fsys)
	if errs = withoutUnknownClusterRefs(r, errs); len(errs) > 0 {
		return nil, errs
	}
	return l.snapshot(r, commit)
}

// Reuse says how many record files the last Load reused and parsed.
func (l *Loader) Reuse() (reused, parsed int) { return l.repo.Reused, l.repo.Parsed }

var (
	zoneClusterPath = regexp.MustCompile(`^spec\.delivery\.zones\[(\d+)\]\.cluster$`)
	allowlistPath   = regexp.MustCompile(`^spec\.clusterAllowlist\[(\d+)\]$`)
)

// withoutUnknownClusterRefs drops the findings that only say a zone or an
// allowlist names a cluster without a record, after checking the record
// really is missing.
func withoutUnknownClusterRefs(r *repo.Repo, errs record.Errors) record.Errors {
	if len(errs) == 0 {
		return nil
	}
	known := map[string]bool{}
	for _, c := range r.Clusters {
		known[c.Cluster.Metadata.Name] = true
	}
	products := map[string]validate.ProductEntry{}
	for _, p := range r.Products {
		products[p.File] = p
	}
	orgs := map[string]validate.OrgEntry{}
	for _, o := range r.Orgs {
		orgs[o.File] = o
	}
	var out record.Errors
	for _, e := range errs {
		if e.Code == record.CodeUnknownCluster {
			if m := zoneClusterPath.FindStringSubmatch(e.Path); m != nil {
				if p, ok := products[e.File]; ok {
					i, _ := strconv.Atoi(m[1])
					if zs := p.Product.Spec.Delivery.Zones; i < len(zs) && !known[zs[i].Cluster] {
						continue
					}
				}
			}
			if m := allowlistPath.FindStringSubmatch(e.Path); m != nil {
				if o, ok := orgs[e.File]; ok {
					i, _ := strconv.Atoi(m[1])
					if al := o.Org.Spec.ClusterAllowlist; i < len(al) && !known[al[i]] {
						continue
					}
				}
			}
		}
		out = append(out, e)
	}
	return out
}

// snapshot indexes r and encodes its parameter sets, taking those of
// records the previous snapshot had (the same parsed record, so the same
// bytes) from the caches. The kind: clusters answer is encoded whole here.
func (l *Loader) snapshot(r *repo.Repo, commit string) (*Snapshot, record.Errors) {
	s := &Snapshot{
		Commit: commit, LoadedAt: time.Now(), Repo: r,
		clusters: make(map[string]clusterFacts, len(r.Clusters)),
		allow:    make(map[string]map[string]bool, len(r.Orgs)),
	}
	sets := make(map[*v1alpha1.Cluster][]byte, len(r.Clusters))
	zones := make(map[*v1alpha1.Product][]zoneEntry, len(r.Products))
	clusters := append([]validate.ClusterEntry(nil), r.Clusters...)
	sort.Slice(clusters, func(i, j int) bool { return clusters[i].Cluster.Metadata.Name < clusters[j].Cluster.Metadata.Name })
	s.clusterSets = make([][]byte, 0, len(clusters))
	for _, e := range clusters {
		b, ok := l.sets[e.Cluster]
		if !ok {
			var err error
			if b, err = json.Marshal(ClusterParams(e, l.src)); err != nil {
				return nil, record.Errors{{File: e.File, Msg: fmt.Sprintf("encoding generator parameters: %v", err)}}
			}
		}
		s.clusterSets = append(s.clusterSets, b)
		s.clusters[e.Cluster.Metadata.Name] = clusterFacts{inCluster: e.Cluster.Spec.Connection.InCluster}
	}
	for _, o := range r.Orgs {
		set := make(map[string]bool, len(o.Org.Spec.ClusterAllowlist))
		for _, c := range o.Org.Spec.ClusterAllowlist {
			set[c] = true
		}
		s.allow[o.Org.Metadata.Name] = set
	}
	products := append([]validate.ProductEntry(nil), r.Products...)
	sort.Slice(products, func(i, j int) bool {
		if products[i].Org != products[j].Org {
			return products[i].Org < products[j].Org
		}
		return products[i].Product.Metadata.Name < products[j].Product.Metadata.Name
	})
	for _, p := range products {
		zs, ok := l.zones[p.Product]
		// A zone's destination depends on its cluster's record too.
		for i := 0; ok && i < len(zs); i++ {
			ok = zs[i].dest == s.destination(zs[i].Cluster)
		}
		if !ok {
			var errs record.Errors
			if zs, errs = l.productZones(s, p); errs != nil {
				return nil, errs
			}
		}
		zones[p.Product] = zs
		s.zones = append(s.zones, zs...)
	}
	// Each set is kept once: as its slice of the answer.
	s.clustersAnswer = encodeResponse(s.clusterSets)
	off := len(responsePrefix)
	for i, e := range clusters {
		n := len(s.clusterSets[i])
		s.clusterSets[i] = s.clustersAnswer[off : off+n : off+n]
		sets[e.Cluster] = s.clusterSets[i]
		off += n + 1
	}
	l.sets, l.zones = sets, zones
	return s, nil
}

// productZones encodes p's zones, sorted by name.
func (l *Loader) productZones(s *Snapshot, p validate.ProductEntry) ([]zoneEntry, record.Errors) {
	zs := append(p.Product.Spec.Delivery.Zones[:0:0], p.Product.Spec.Delivery.Zones...)
	sort.Slice(zs, func(i, j int) bool { return zs[i].Name < zs[j].Name })
	out := make([]zoneEntry, 0, len(zs))
	for _, z := range zs {
		dest := s.destination(z.Cluster)
		b, err := json.Marshal(ZoneParams(p, z, dest, l.src))
		if err != nil {
			return nil, record.Errors{{File: p.File, Msg: fmt.Sprintf("encoding generator parameters: %v", err)}}
		}
		out = append(out, zoneEntry{Org: p.Org, Product: p.Product.Metadata.Name, Zone: z.Name,
			Environment: z.Environment, Cluster: z.Cluster, dest: dest, set: b})
	}
	return out, nil
}

// destination of a zone on cluster ("" is the management cluster).
func (s *Snapshot) destination(cluster string) Destination {
	if cluster == "" || s.clusters[cluster].inCluster {
		return Destination{Server: names.InClusterServer}
	}
	return Destination{Name: cluster}
}

// Counts returns the number of clusters, orgs and zones in the snapshot.
func (s *Snapshot) Counts() (clusters, orgs, zones int) {
	return len(s.clusterSets), len(s.allow), len(s.zones)
}
