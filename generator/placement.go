package generator

import (
	"fmt"
	"sync"
)

// Outcome of a zone's placement (seed 001).
type Outcome string

// Outcomes.
const (
	Placed   Outcome = "placed"
	Waiting  Outcome = "waiting"
	Rejected Outcome = "rejected"
)

// Outcomes in report order.
var Outcomes = []Outcome{Placed, Waiting, Rejected}

// HealthHealthy is Argo CD's Healthy health status.
const HealthHealthy = "Healthy"

// App is what the generator needs of an Argo CD Application on the hub.
type App struct {
	Health      string
	Destination Destination
}

// Hub is the hub's Argo CD state as the informers see it.
type Hub interface {
	// Ready is nil once the caches are synced and the API server answers;
	// otherwise it says why the state cannot be trusted.
	Ready() error
	// ClusterSecret reports whether an Argo CD cluster Secret names cluster.
	ClusterSecret(cluster string) bool
	// Application returns the Application called name in the Argo CD namespace.
	Application(name string) (App, bool)
}

// Decision is one zone's placement and why.
type Decision struct {
	Org         string  `json:"org"`
	Product     string  `json:"product"`
	Zone        string  `json:"zone"`
	Environment string  `json:"environment"`
	Cluster     string  `json:"cluster"`
	Outcome     Outcome `json:"outcome"`
	Reason      string  `json:"reason"`
	// Sticky: placed although the cluster is not registered right now,
	// because the zone was placed on it before.
	Sticky bool `json:"sticky,omitempty"`
}

// Placer decides placements and remembers which zones it placed, so a
// zone stays placed while its cluster is briefly unready. Only a change in
// git (zone removed, moved to another cluster, allowlist entry removed,
// cluster record removed) withdraws it.
type Placer struct {
	mu     sync.Mutex
	placed map[string]string // zone -> cluster it was placed on
	seen   *Snapshot         // the snapshot placed was last pruned against
}

// NewPlacer returns a Placer with no memory.
func NewPlacer() *Placer { return &Placer{placed: map[string]string{}} }

// decide applies seed 001's rules to z. The caller has checked hub.Ready.
func (p *Placer) decide(s *Snapshot, hub Hub, z *zoneEntry) Decision {
	d := Decision{Org: z.Org, Product: z.Product, Zone: z.Zone, Environment: z.Environment, Cluster: z.Cluster}
	set := func(o Outcome, format string, args ...any) Decision {
		d.Outcome, d.Reason = o, fmt.Sprintf(format, args...)
		return d
	}
	if z.Cluster == "" {
		return set(Placed, "no cluster: runs on the management cluster")
	}
	if !s.allow[z.Org][z.Cluster] {
		p.forget(z.Zone)
		return set(Rejected, "cluster %s is not on org %s's clusterAllowlist (orgs/%s.yaml)", z.Cluster, z.Org, z.Org)
	}
	facts, known := s.clusters[z.Cluster]
	if !known {
		p.forget(z.Zone)
		return set(Rejected, "cluster %s is not known: no clusters/%s/cluster.yaml", z.Cluster, z.Cluster)
	}
	why := notRegistered(hub, z.Cluster, facts.inCluster)
	if why == "" {
		p.remember(z.Zone, z.Cluster)
		return set(Placed, "cluster %s is registered", z.Cluster)
	}
	if p.wasPlaced(hub, s, z) {
		p.remember(z.Zone, z.Cluster)
		d.Sticky = true
		return set(Placed, "placed earlier on cluster %s, kept while it is not registered: %s", z.Cluster, why)
	}
	return set(Waiting, "cluster %s is not registered yet: %s; re-checked on the next call", z.Cluster, why)
}

// notRegistered says why cluster does not count as registered, or "".
// An inCluster cluster has no cluster Secret (Argo CD's built-in
// destination), so only its spoke Application counts.
func notRegistered(hub Hub, cluster string, inCluster bool) string {
	if !inCluster && !hub.ClusterSecret(cluster) {
		return fmt.Sprintf("no Argo CD cluster Secret names %s", cluster)
	}
	spoke := "spoke-" + cluster
	app, ok := hub.Application(spoke)
	switch {
	case !ok:
		return fmt.Sprintf("Application %s does not exist", spoke)
	case app.Health != HealthHealthy:
		h := app.Health
		if h == "" {
			h = "unknown"
		}
		return fmt.Sprintf("Application %s is %s, not Healthy", spoke, h)
	}
	return ""
}

// wasPlaced: this process placed z on its cluster, or the zone's
// Application already exists with the zone's destination (it was placed
// before a restart).
func (p *Placer) wasPlaced(hub Hub, s *Snapshot, z *zoneEntry) bool {
	p.mu.Lock()
	c, ok := p.placed[z.Zone]
	p.mu.Unlock()
	if ok && c == z.Cluster {
		return true
	}
	app, ok := hub.Application("product-" + z.Zone)
	return ok && app.Destination == s.destination(z.Cluster)
}

func (p *Placer) remember(zone, cluster string) {
	p.mu.Lock()
	p.placed[zone] = cluster
	p.mu.Unlock()
}

func (p *Placer) forget(zone string) {
	p.mu.Lock()
	delete(p.placed, zone)
	p.mu.Unlock()
}

// prune forgets zones the snapshot no longer has, so a zone removed and
// later re-added starts afresh.
func (p *Placer) prune(s *Snapshot) {
	p.mu.Lock()
	fresh := p.seen != s
	p.seen = s
	p.mu.Unlock()
	if !fresh {
		return
	}
	live := make(map[string]string, len(s.zones))
	for _, z := range s.zones {
		live[z.Zone] = z.Cluster
	}
	p.mu.Lock()
	for zone, c := range p.placed {
		if lc, ok := live[zone]; !ok || lc != c {
			delete(p.placed, zone)
		}
	}
	p.mu.Unlock()
}

// Filter selects zones; empty fields match everything.
type Filter struct {
	Org, Product, Environment string
}

func (f Filter) match(z *zoneEntry) bool {
	return (f.Org == "" || f.Org == z.Org) && (f.Product == "" || f.Product == z.Product) &&
		(f.Environment == "" || f.Environment == z.Environment)
}

// Decide returns the decision of every zone f selects, in snapshot order,
// and the encoded parameter sets of the placed ones.
func (p *Placer) Decide(s *Snapshot, hub Hub, f Filter) ([]Decision, [][]byte) {
	p.prune(s)
	var ds []Decision
	var sets [][]byte
	for i := range s.zones {
		z := &s.zones[i]
		if !f.match(z) {
			continue
		}
		d := p.decide(s, hub, z)
		ds = append(ds, d)
		if d.Outcome == Placed {
			sets = append(sets, z.set)
		}
	}
	return ds, sets
}
