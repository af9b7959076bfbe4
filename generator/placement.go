package generator

import (
	"fmt"
	"sync"

	"github.com/spokeforge/spokeforge/internal/names"
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
	// Synced reports whether the caches hold a full view of the hub.
	Synced() bool
	// Version changes whenever anything ClusterSecret or Application
	// answers may have changed, after the change is visible to them.
	Version() uint64
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

// registered is a cluster's registration, worked out once per Placement.
type registered struct {
	why    why
	health string
}

// decide applies the placement rules of docs/generator.md to z. The caller
// has checked hub.Ready. Nothing but the snapshot and the hub decides: a
// zone stays placed while its cluster is unready only because its
// Application exists on the hub with the zone's destination, so every
// replica decides the same.
func decide(s *Snapshot, hub Hub, z *zoneEntry, regs map[string]registered) Decision {
	d := Decision{Org: z.Org, Product: z.Product, Zone: z.Zone, Environment: z.Environment, Cluster: z.Cluster}
	if z.Cluster == "" {
		d.Outcome, d.why = Placed, whyHub
		return d
	}
	if !s.allow[z.Org][z.Cluster] {
		d.Outcome, d.why = Rejected, whyNotAllowed
		return d
	}
	facts, known := s.clusters[z.Cluster]
	if !known {
		d.Outcome, d.why = Rejected, whyUnknown
		return d
	}
	reg, ok := regs[z.Cluster]
	if !ok {
		reg.why, reg.health = registration(hub, z.Cluster, facts.inCluster)
		regs[z.Cluster] = reg
	}
	d.why, d.health = reg.why, reg.health
	if d.why == whyRegistered {
		d.Outcome = Placed
		return d
	}
	if app, ok := hub.Application(names.ZoneApplication(z.Zone)); ok && app.Destination == z.dest {
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

// Filter selects zones; empty fields match everything.
type Filter struct {
	Org, Product, Environment string
}

func (f Filter) match(z *zoneEntry) bool {
	return (f.Org == "" || f.Org == z.Org) && (f.Product == "" || f.Product == z.Product) &&
		(f.Environment == "" || f.Environment == z.Environment)
}

// Placement is every zone's decision for one snapshot and one hub state,
// with the kind: zones answers made of them: computed once when either
// changes, then served as bytes.
type Placement struct {
	Snapshot   *Snapshot
	HubVersion uint64
	decisions  []Decision // snapshot order, reasons not spelt out
	answer     []byte     // the unfiltered answer
	placed     int

	mu       sync.Mutex
	filtered map[Filter]filteredAnswer
}

type filteredAnswer struct {
	body []byte
	sets int
}

// maxFiltered bounds the filtered answers kept per Placement: filters come
// from callers, so they must not grow memory without limit.
const maxFiltered = 64

// newer reports whether p's inputs are at least as recent as q's: a
// snapshot loaded later, or the same snapshot under the same or a later
// hub state. Anything is newer than nil.
func (p *Placement) newer(q *Placement) bool {
	switch {
	case q == nil:
		return true
	case p.Snapshot != q.Snapshot:
		return p.Snapshot.LoadedAt.After(q.Snapshot.LoadedAt)
	}
	return p.HubVersion >= q.HubVersion
}

// Place decides every zone of s under hub's current state. The caller has
// checked hub.Ready.
func Place(s *Snapshot, hub Hub) *Placement {
	p := &Placement{Snapshot: s, HubVersion: hub.Version(), decisions: make([]Decision, len(s.zones))}
	regs := make(map[string]registered, len(s.clusters))
	sets := make([][]byte, 0, len(s.zones))
	for i := range s.zones {
		p.decisions[i] = decide(s, hub, &s.zones[i], regs)
		if p.decisions[i].Outcome == Placed {
			sets = append(sets, s.zones[i].set)
		}
	}
	p.answer, p.placed = encodeResponse(sets), len(sets)
	return p
}

// Answer is the encoded kind: zones response for f and its number of sets.
func (p *Placement) Answer(f Filter) ([]byte, int) {
	if f == (Filter{}) {
		return p.answer, p.placed
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if a, ok := p.filtered[f]; ok {
		return a.body, a.sets
	}
	var sets [][]byte
	for i := range p.Snapshot.zones {
		if z := &p.Snapshot.zones[i]; f.match(z) && p.decisions[i].Outcome == Placed {
			sets = append(sets, z.set)
		}
	}
	a := filteredAnswer{encodeResponse(sets), len(sets)}
	if len(p.filtered) < maxFiltered {
		if p.filtered == nil {
			p.filtered = map[Filter]filteredAnswer{}
		}
		p.filtered[f] = a
	}
	return a.body, a.sets
}

// Decisions returns the decision of every zone f selects, in snapshot
// order, with reasons when explain is set.
func (p *Placement) Decisions(f Filter, explain bool) []Decision {
	var ds []Decision
	for i := range p.Snapshot.zones {
		if !f.match(&p.Snapshot.zones[i]) {
			continue
		}
		d := p.decisions[i]
		if explain {
			d.explain()
		}
		ds = append(ds, d)
	}
	return ds
}
