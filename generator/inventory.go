package generator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/spokeforge/spokeforge/internal/api/v1alpha1"
	"github.com/spokeforge/spokeforge/internal/names"
)

// ClusterProfilesResource is SIG-Multicluster's cluster inventory API.
var ClusterProfilesResource = schema.GroupVersionResource{Group: "multicluster.x-k8s.io", Version: "v1alpha1", Resource: "clusterprofiles"}

const (
	// ClusterManagerName is spokeforge's spec.clusterManager.name: it writes
	// the status of those profiles only.
	ClusterManagerName = "spokeforge"
	// InventoryFieldManager is the server-side apply field manager of the status.
	InventoryFieldManager = "spokeforge-generator"
)

// InventoryConfig configures the ClusterProfile status writer.
type InventoryConfig struct {
	// Namespace holds the profiles (the render's inventory namespace).
	Namespace string
	// Interval: every profile's status is recomputed this often (default 15 s).
	Interval time.Duration
	// OnboardingRefresh: each Onboarding is read through argocd-server at
	// least this often, and at once when its spoke Application's health
	// changes (default 1 min).
	OnboardingRefresh time.Duration
	// Staleness: state not read for this long turns a condition Unknown
	// (default 5 min).
	Staleness time.Duration
	// Workers read Onboardings concurrently (default 8).
	Workers int
	Log     *slog.Logger
	Now     func() time.Time
}

// ProfileStore reads and writes ClusterProfiles.
type ProfileStore interface {
	// Served reports whether the hub serves the inventory API.
	Served(ctx context.Context) (bool, error)
	// Get returns the profile called name, false when there is none.
	Get(name string) (*unstructured.Unstructured, bool)
	// ApplyStatus writes a profile's status with server-side apply.
	ApplyStatus(ctx context.Context, name string, st ProfileStatus) error
}

// Inventory writes the status of the ClusterProfiles of spokeforge's
// records from the hub's state. It runs beside the API: getparams never
// waits on it.
type Inventory struct {
	cfg   InventoryConfig
	src   Source
	hub   Hub
	argo  ArgoCDState
	store ProfileStore

	writes   *prometheus.CounterVec
	profiles *prometheus.GaugeVec

	// State of the reads, owned by the loop.
	conns    map[string]*ClusterConnection // by name and by server
	connsAt  time.Time
	connsErr error
	obs      map[string]*obState
	current  map[string]currentStatus // what each profile said, by name

	mu     sync.Mutex
	report InventoryReport
}

// currentStatus is what a profile's status said at resourceVersion rv.
type currentStatus struct {
	rv         string
	conditions []metav1.Condition
	status     []byte
}

type obState struct {
	view   *OnboardingView
	readAt time.Time // last successful read (not found included)
	tried  time.Time
	err    error
	health string // the spoke Application's health at the last read
}

// InventoryReport is what /api/v1/placements says of the inventory.
type InventoryReport struct {
	Namespace string `json:"namespace"`
	// Served is false while the hub has no ClusterProfile CRD.
	Served bool `json:"served"`
	// Profiles counts the records by profile state: current (status
	// written), missing (no profile yet: the app-of-apps creates it),
	// conflict (another cluster manager owns the profile).
	Profiles  map[string]int      `json:"profiles"`
	Conflicts []InventoryConflict `json:"conflicts"`
	LastCycle time.Time           `json:"lastCycle,omitzero"`
	Error     string              `json:"error,omitempty"`
}

// InventoryConflict is a profile named like a record that another cluster
// manager owns: spokeforge leaves it alone.
type InventoryConflict struct {
	Cluster        string `json:"cluster"`
	ClusterManager string `json:"clusterManager"`
}

// NewInventory builds the writer.
func NewInventory(cfg InventoryConfig, src Source, hub Hub, argo ArgoCDState, store ProfileStore) *Inventory {
	if cfg.Interval <= 0 {
		cfg.Interval = 15 * time.Second
	}
	if cfg.OnboardingRefresh <= 0 {
		cfg.OnboardingRefresh = time.Minute
	}
	if cfg.Staleness <= 0 {
		cfg.Staleness = 5 * time.Minute
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 8
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	inv := &Inventory{cfg: cfg, src: src, hub: hub, argo: argo, store: store, obs: map[string]*obState{}, current: map[string]currentStatus{}}
	inv.report = InventoryReport{Namespace: cfg.Namespace, Profiles: map[string]int{}, Conflicts: []InventoryConflict{}}
	inv.writes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "spokeforge_generator_inventory_writes_total",
		Help: "ClusterProfile status writes (server-side apply) by result.",
	}, []string{"result"})
	inv.profiles = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "spokeforge_generator_inventory_profiles",
		Help: "Records by ClusterProfile state at the last cycle: current, missing, conflict (another cluster manager owns the profile).",
	}, []string{"state"})
	return inv
}

func (inv *Inventory) collectors() []prometheus.Collector {
	return []prometheus.Collector{inv.writes, inv.profiles}
}

// Report is the inventory's state at its last cycle. A cycle replaces the
// report's map and slice, never changes them, so a copy of it may be shared.
func (inv *Inventory) Report() InventoryReport {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	return inv.report
}

// Run writes every profile's status each Interval until ctx ends.
func (inv *Inventory) Run(ctx context.Context) {
	t := time.NewTicker(inv.cfg.Interval)
	defer t.Stop()
	for {
		if err := inv.Cycle(ctx); err != nil && ctx.Err() == nil {
			inv.cfg.Log.Warn("inventory cycle failed", "error", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Cycle reads what is due and writes every status that changed.
func (inv *Inventory) Cycle(ctx context.Context) error {
	err := inv.cycle(ctx)
	inv.mu.Lock()
	inv.report.LastCycle = inv.cfg.Now().UTC()
	inv.report.Error = ""
	if err != nil {
		inv.report.Error = err.Error()
	}
	inv.mu.Unlock()
	return err
}

func (inv *Inventory) cycle(ctx context.Context) error {
	served, err := inv.store.Served(ctx)
	inv.mu.Lock()
	inv.report.Served = served
	inv.mu.Unlock()
	if err != nil || !served {
		return err
	}
	snap, err := inv.src.Snapshot()
	if err != nil {
		return fmt.Errorf("no repo snapshot: %w", err)
	}
	if inv.hub != nil {
		if err := inv.hub.Ready(); err != nil {
			// The profiles keep their status: nothing can be written
			// while the hub API is down, and the staleness turns the
			// conditions Unknown once reads fail for that long.
			return fmt.Errorf("hub not ready: %w", err)
		}
	}
	now := inv.cfg.Now()
	inv.readConnections(ctx, now)

	type job struct {
		cluster, app string
		st           *obState
	}
	var due []job
	seen := make(map[string]bool, len(snap.Repo.Clusters))
	for _, e := range snap.Repo.Clusters {
		name := e.Cluster.Metadata.Name
		seen[name] = true
		if p, ok := inv.store.Get(name); !ok || profileManager(p) != ClusterManagerName {
			continue // nothing to write: skip the read too
		}
		st := inv.obs[name]
		if st == nil {
			st = &obState{}
			inv.obs[name] = st
		}
		app := names.SpokeApplication(name)
		health := ""
		if inv.hub != nil {
			a, ok := inv.hub.Application(app)
			if !ok {
				// No spoke Application, so no Onboarding through it: argocd-server
				// would answer 403 for the missing app, as for a denied one.
				st.view, st.readAt, st.tried, st.err, st.health = nil, now, now, nil, ""
				continue
			}
			health = a.Health
		}
		if cc := inv.connection(e.Cluster); cc != nil && cc.Status == "Failed" {
			// argocd-server would try the spoke and time out: the last read
			// stands until it is stale.
			continue
		}
		if now.Sub(st.tried) >= inv.cfg.OnboardingRefresh || health != st.health {
			st.health = health
			due = append(due, job{name, app, st})
		}
	}
	for name := range inv.obs {
		if !seen[name] {
			delete(inv.obs, name)
			delete(inv.current, name)
		}
	}
	work := make(chan job)
	var wg sync.WaitGroup
	for range min(inv.cfg.Workers, len(due)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
				v, err := inv.argo.Onboarding(rctx, j.app, j.cluster)
				cancel()
				j.st.tried = inv.cfg.Now()
				switch {
				case errors.Is(err, ErrNotFound):
					j.st.view, j.st.readAt, j.st.err = nil, j.st.tried, nil
				case err != nil:
					j.st.err = err // the last view stands until it is stale
				default:
					j.st.view, j.st.readAt, j.st.err = v, j.st.tried, nil
				}
			}
		}()
	}
	for _, j := range due {
		work <- j
	}
	close(work)
	wg.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}

	now = inv.cfg.Now()
	counts := map[string]int{"current": 0, "missing": 0, "conflict": 0}
	conflicts := []InventoryConflict{}
	var errs []error
	for _, e := range snap.Repo.Clusters {
		c := e.Cluster
		p, ok := inv.store.Get(c.Metadata.Name)
		if !ok {
			counts["missing"]++
			continue
		}
		if m := profileManager(p); m != ClusterManagerName {
			counts["conflict"]++
			conflicts = append(conflicts, InventoryConflict{Cluster: c.Metadata.Name, ClusterManager: m})
			continue
		}
		// What the profile says is parsed once per resourceVersion.
		cur, ok := inv.current[c.Metadata.Name]
		if !ok || cur.rv != p.GetResourceVersion() {
			cur = currentStatus{rv: p.GetResourceVersion(), conditions: profileConditions(p), status: statusJSON(p)}
			inv.current[c.Metadata.Name] = cur
		}
		ob := inv.obs[c.Metadata.Name]
		if ob == nil { // the profile appeared after the reads: nothing read yet
			ob = &obState{}
		}
		in := ProfileInputs{Now: now, Staleness: inv.cfg.Staleness, Cluster: c,
			Connection: inv.connection(c), ConnectionsReadAt: inv.connsAt, ConnectionsErr: inv.connsErr,
			Onboarding: ob.view, OnboardingReadAt: ob.readAt, OnboardingErr: ob.err, Previous: cur.conditions}
		want := ComputeProfileStatus(in)
		wantJSON, err := json.Marshal(want)
		if err != nil {
			return err
		}
		if string(cur.status) != string(wantJSON) {
			if err := inv.store.ApplyStatus(ctx, c.Metadata.Name, want); err != nil {
				inv.writes.WithLabelValues("error").Inc()
				errs = append(errs, fmt.Errorf("ClusterProfile %s/%s: %w", inv.cfg.Namespace, c.Metadata.Name, err))
				continue
			}
			inv.writes.WithLabelValues("ok").Inc()
		}
		counts["current"]++
	}
	sort.Slice(conflicts, func(i, j int) bool { return conflicts[i].Cluster < conflicts[j].Cluster })
	for k, v := range counts {
		inv.profiles.WithLabelValues(k).Set(float64(v))
	}
	inv.mu.Lock()
	inv.report.Profiles, inv.report.Conflicts = counts, conflicts
	inv.mu.Unlock()
	return errors.Join(errs...)
}

func (inv *Inventory) readConnections(ctx context.Context, now time.Time) {
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	list, err := inv.argo.Clusters(rctx)
	if err != nil {
		inv.connsErr = err
		return
	}
	inv.conns = make(map[string]*ClusterConnection, 2*len(list))
	for i := range list {
		c := &list[i]
		inv.conns["name:"+c.Name] = c
		inv.conns["server:"+c.Server] = c
	}
	inv.connsAt, inv.connsErr = now, nil
}

// connection finds the record's cluster in Argo CD's list: the hub itself
// by Argo CD's in-cluster server, any other by name (its cluster Secret's
// name is the record's).
func (inv *Inventory) connection(c *v1alpha1.Cluster) *ClusterConnection {
	if c.Spec.Connection.InCluster {
		return inv.conns["server:"+names.InClusterServer]
	}
	return inv.conns["name:"+c.Metadata.Name]
}

func profileManager(p *unstructured.Unstructured) string {
	m, _, _ := unstructured.NestedString(p.Object, "spec", "clusterManager", "name")
	return m
}

func profileConditions(p *unstructured.Unstructured) []metav1.Condition {
	raw, ok, _ := unstructured.NestedFieldNoCopy(p.Object, "status", "conditions")
	if !ok {
		return nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil
	}
	var cs []metav1.Condition
	if json.Unmarshal(b, &cs) != nil {
		return nil
	}
	return cs
}

// statusJSON is the profile's status as spokeforge would encode it (fields
// of the status spokeforge does not write are left out), nil if unreadable.
func statusJSON(p *unstructured.Unstructured) []byte {
	raw, ok, _ := unstructured.NestedFieldNoCopy(p.Object, "status")
	if !ok {
		return nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil
	}
	var have ProfileStatus
	if json.Unmarshal(b, &have) != nil {
		return nil
	}
	b, err = json.Marshal(have)
	if err != nil {
		return nil
	}
	return b
}

// KubeProfiles is a ProfileStore on the hub's API: an informer on the
// inventory namespace's profiles, started once the CRD is served.
type KubeProfiles struct {
	dc   dynamic.Interface
	ns   string
	once sync.Once
	inf  cache.SharedIndexInformer
	stop context.Context
}

// NewKubeProfiles reads and writes the profiles of namespace; ctx bounds the informer.
func NewKubeProfiles(ctx context.Context, dc dynamic.Interface, namespace string) *KubeProfiles {
	return &KubeProfiles{dc: dc, ns: namespace, stop: ctx}
}

// Served implements ProfileStore: true once the informer has synced.
func (k *KubeProfiles) Served(ctx context.Context) (bool, error) {
	if k.inf != nil {
		return k.inf.HasSynced(), nil
	}
	_, err := k.dc.Resource(ClusterProfilesResource).Namespace(k.ns).List(ctx, metav1.ListOptions{Limit: 1})
	if apierrors.IsNotFound(err) {
		return false, nil // no CRD (yet): checked again next cycle
	}
	if err != nil {
		return false, fmt.Errorf("listing ClusterProfiles: %w", err)
	}
	k.once.Do(func() {
		f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(k.dc, 0, k.ns, nil)
		k.inf = f.ForResource(ClusterProfilesResource).Informer()
		_ = k.inf.SetTransform(stripProfile) // before Run: it cannot fail
		go k.inf.Run(k.stop.Done())
	})
	return cache.WaitForCacheSync(ctx.Done(), k.inf.HasSynced), nil
}

// stripProfile keeps what the inventory reads of a profile: its name and
// version, its cluster manager and its status. Managed fields and Argo CD's
// last-applied annotation would double what 10,000 profiles hold.
func stripProfile(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	out := identityOf(u)
	if m := profileManager(u); m != "" {
		_ = unstructured.SetNestedField(out.Object, m, "spec", "clusterManager", "name")
	}
	if st, ok := u.Object["status"]; ok {
		out.Object["status"] = st
	}
	return out, nil
}

// Get implements ProfileStore.
func (k *KubeProfiles) Get(name string) (*unstructured.Unstructured, bool) {
	if k.inf == nil {
		return nil, false
	}
	obj, ok, err := k.inf.GetStore().GetByKey(k.ns + "/" + name)
	if err != nil || !ok {
		return nil, false
	}
	u, ok := obj.(*unstructured.Unstructured)
	return u, ok
}

// ApplyStatus implements ProfileStore. Force: the status fields spokeforge
// writes are its own on profiles whose cluster manager it is.
func (k *KubeProfiles) ApplyStatus(ctx context.Context, name string, st ProfileStatus) error {
	body, err := json.Marshal(map[string]any{
		"apiVersion": ClusterProfilesResource.GroupVersion().String(),
		"kind":       "ClusterProfile",
		"metadata":   map[string]any{"name": name, "namespace": k.ns},
		"status":     st,
	})
	if err != nil {
		return err
	}
	force := true
	_, err = k.dc.Resource(ClusterProfilesResource).Namespace(k.ns).Patch(ctx, name, types.ApplyPatchType, body,
		metav1.PatchOptions{FieldManager: InventoryFieldManager, Force: &force}, "status")
	return err
}
