package generator

import (
	"fmt"
	"github.com/spokeforge/spokeforge/internal/names"
	"sync"
)

// Outcome of a zone's placement (docs/generator.md, "Placement").
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

	why    why
	health string
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

// why is the rule behind a decision; Reason is only spelt out when asked
// for, so a 50,000-zone answer formats no strings.
type why uint8

const (
	whyHub why = iota
	whyNotAllowed
	whyUnknown
	whyRegistered
	whyNoSecret
	whyNoSpokeApp
	whySpokeUnhealthy
)

// decide applies the placement rules of docs/generator.md to z. The caller has checked hub.Ready.
func (p *Placer) decide(s *Snapshot, hub Hub, z *zoneEntry) Decision {
	d := Decision{Org: z.Org, Product: z.Product, Zone: z.Zone, Environment: z.Environment, Cluster: z.Cluster}
	if z.Cluster == "" {
		d.Outcome, d.why = Placed, whyHub
		return d
	}
	if !s.allow[z.Org][z.Cluster] {
		p.forget(z.Zone)
		d.Outcome, d.why = Rejected, whyNotAllowed
		return d
	}
	facts, known := s.clusters[z.Cluster]
	if !known {
		p.forget(z.Zone)
		d.Outcome, d.why = Rejected, whyUnknown
		return d
	}
	d.why, d.health = registration(hub, z.Cluster, facts.inCluster)
	if d.why == whyRegistered {
		p.remember(z.Zone, z.Cluster)
		d.Outcome = Placed
		return d
	}
	if p.wasPlaced(hub, s, z) {
		p.remember(z.Zone, z.Cluster)
		d.Outcome, d.Sticky = Placed, true
		return d
	}
	d.Outcome = Waiting
	return d
}

// explain fills Reason.
func (d *Decision) explain() {
	c := d.Cluster
	var r string
	switch d.why {
	case whyHub:
		r = "no cluster: runs on the management cluster"
	case whyNotAllowed:
		r = fmt.Sprintf("cluster %s is not on org %s's clusterAllowlist (orgs/%s.yaml)", c, d.Org, d.Org)
	case whyUnknown:
		r = fmt.Sprintf("cluster %s is not known: no clusters/%s/cluster.yaml", c, c)
	case whyRegistered:
		r = fmt.Sprintf("cluster %s is registered", c)
	case whyNoSecret:
		r = fmt.Sprintf("no Argo CD cluster Secret names %s", c)
	case whyNoSpokeApp:
		r = fmt.Sprintf("Application spoke-%s does not exist", c)
	case whySpokeUnhealthy:
		h := d.health
		if h == "" {
			h = "unknown"
		}
		r = fmt.Sprintf("Application spoke-%s is %s, not Healthy", c, h)
	}
	switch {
	case d.Sticky:
		r = fmt.Sprintf("placed earlier on cluster %s, kept while it is not registered: %s", c, r)
	case d.Outcome == Waiting:
		r = fmt.Sprintf("cluster %s is not registered yet: %s; re-checked on the next call", c, r)
	}
	d.Reason = r
}

// registration says whether cluster counts as registered (whyRegistered)
// or why not. An inCluster cluster has no cluster Secret (Argo CD's
// built-in destination), so only its spoke Application counts.
func registration(hub Hub, cluster string, inCluster bool) (why, string) {
	if !inCluster && !hub.ClusterSecret(cluster) {
		return whyNoSecret, ""
	}
	app, ok := hub.Application(names.SpokeApplication(cluster))
	switch {
	case !ok:
		return whyNoSpokeApp, ""
	case app.Health != HealthHealthy:
		return whySpokeUnhealthy, app.Health
	}
	return whyRegistered, ""
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
	app, ok := hub.Application(names.ZoneApplication(z.Zone))
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
// and the encoded parameter sets of the placed ones. Reasons are filled in
// when explain is set.
func (p *Placer) Decide(s *Snapshot, hub Hub, f Filter, explain bool) ([]Decision, [][]byte) {
	p.prune(s)
	var ds []Decision
	var sets [][]byte
	for i := range s.zones {
		z := &s.zones[i]
		if !f.match(z) {
			continue
		}
		d := p.decide(s, hub, z)
		if explain {
			d.explain()
		}
		ds = append(ds, d)
		if d.Outcome == Placed {
			sets = append(sets, z.set)
		}
	}
	return ds, sets
}
