package generator

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// conditionReason is metav1.Condition's reason pattern.
var conditionReason = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

// fakeArgo answers as argocd-server would, from fixed state.
type fakeArgo struct {
	mu       sync.Mutex
	clusters []ClusterConnection
	listErr  error
	obs      map[string]*OnboardingView // by app
	obErr    error
	reads    int
}

func (f *fakeArgo) Clusters(context.Context) ([]ClusterConnection, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]ClusterConnection(nil), f.clusters...), f.listErr
}

func (f *fakeArgo) Onboarding(_ context.Context, app, _ string) (*OnboardingView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	if f.obErr != nil {
		return nil, f.obErr
	}
	ob, ok := f.obs[app]
	if !ok {
		return nil, ErrNotFound
	}
	return ob, nil
}

// fakeProfiles is a ProfileStore over a map, shared by replicas as the hub is.
type fakeProfiles struct {
	mu      sync.Mutex
	served  bool
	objs    map[string]*unstructured.Unstructured
	applies int
	rv      int
	failOn  string
}

func (f *fakeProfiles) Served(context.Context) (bool, error) { return f.served, nil }

func (f *fakeProfiles) Get(name string) (*unstructured.Unstructured, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	u, ok := f.objs[name]
	return u, ok // as an informer's store: shared, never changed by the caller
}

func (f *fakeProfiles) ApplyStatus(_ context.Context, name string, st ProfileStatus) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if name == f.failOn {
		return errors.New("the server rejected the patch")
	}
	b, _ := json.Marshal(st)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	u := f.objs[name].DeepCopy()
	u.Object["status"] = m
	f.rv++
	u.SetResourceVersion(strconv.Itoa(f.rv))
	f.objs[name] = u
	f.applies++
	return nil
}

func (f *fakeProfiles) add(name, manager string) {
	f.objs[name] = &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ClusterProfile",
		"metadata": map[string]any{"name": name, "namespace": "argocd"},
		"spec":     map[string]any{"displayName": name, "clusterManager": map[string]any{"name": manager}},
	}}
}

func (f *fakeProfiles) condition(t *testing.T, name, typ string) (status, reason, message string) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range profileConditions(f.objs[name]) {
		if c.Type == typ {
			return string(c.Status), c.Reason, c.Message
		}
	}
	return "", "", ""
}

type inventoryFixture struct {
	now      time.Time
	argo     *fakeArgo
	profiles *fakeProfiles
	hub      *fakeHub
	inv      *Inventory
}

func newInventoryFixture(t *testing.T) *inventoryFixture {
	f := &inventoryFixture{now: profileNow, hub: registeredHub(),
		argo: &fakeArgo{obs: map[string]*OnboardingView{}, clusters: []ClusterConnection{
			{Name: "gpu-east-1", Server: "https://10.20.0.10:6443", Status: "Successful", AttemptedAt: profileNow},
			{Name: "gpu-west-2", Server: "https://10.30.0.10:6443", Status: "Successful", AttemptedAt: profileNow},
			{Name: "in-cluster", Server: "https://kubernetes.default.svc", Status: "Successful", AttemptedAt: profileNow},
		}},
		profiles: &fakeProfiles{served: true, objs: map[string]*unstructured.Unstructured{}}}
	f.inv = f.replica(t)
	return f
}

func (f *inventoryFixture) replica(t *testing.T) *Inventory {
	src := &staticSource{snap: mustSnapshot(t, exampleFS(t, nil), "c1")}
	return NewInventory(InventoryConfig{Namespace: "argocd", Staleness: 5 * time.Minute, OnboardingRefresh: time.Minute, Now: func() time.Time { return f.now }},
		src, f.hub, f.argo, f.profiles)
}

func (f *inventoryFixture) cycle(t *testing.T, inv *Inventory) {
	t.Helper()
	if err := inv.Cycle(context.Background()); err != nil {
		t.Fatalf("Cycle: %v", err)
	}
}

func TestInventoryFollowsOnboarding(t *testing.T) {
	f := newInventoryFixture(t)
	f.profiles.add("gpu-east-1", ClusterManagerName)
	f.cycle(t, f.inv)
	if s, r, _ := f.profiles.condition(t, "gpu-east-1", ConditionContractsHold); s != "False" || r != "NotOnboarded" {
		t.Fatalf("before the Onboarding: ContractsHold %s/%s, want False/NotOnboarded", s, r)
	}
	if s, r, _ := f.profiles.condition(t, "gpu-east-1", ConditionControlPlaneHealthy); s != "True" {
		t.Fatalf("ControlPlaneHealthy %s/%s, want True", s, r)
	}

	// The agent reports every boundary holding; the spoke Application turns Healthy: read at once.
	f.argo.obs["spoke-gpu-east-1"] = holdingOnboarding(f.now)
	f.hub.apps["spoke-gpu-east-1"] = App{Health: HealthHealthy}
	f.now = f.now.Add(15 * time.Second)
	f.hub.apps["spoke-gpu-east-1"] = App{Health: "Progressing"}
	f.cycle(t, f.inv)
	if s, r, _ := f.profiles.condition(t, "gpu-east-1", ConditionContractsHold); s != "True" || r != "AllBoundariesHold" {
		t.Fatalf("after the agent's check: ContractsHold %s/%s, want True/AllBoundariesHold", s, r)
	}
	applies := f.profiles.applies

	// Nothing changed: no write.
	f.now = f.now.Add(15 * time.Second)
	f.cycle(t, f.inv)
	if f.profiles.applies != applies {
		t.Fatalf("an unchanged status was written again")
	}

	// A boundary fails: the next read (refresh, or the health change) says so.
	f.argo.obs["spoke-gpu-east-1"] = failingOnboarding(f.now, "Certificates", "Certificate inference/inference-serving: Issuing: the issuer is not ready")
	f.hub.apps["spoke-gpu-east-1"] = App{Health: "Degraded"}
	f.now = f.now.Add(15 * time.Second)
	f.cycle(t, f.inv)
	s, r, m := f.profiles.condition(t, "gpu-east-1", ConditionContractsHold)
	if s != "False" || r != "Certificates" || !strings.HasPrefix(m, "Certificates: Certificate inference/inference-serving") {
		t.Fatalf("after the failure: ContractsHold %s/%s %q, want False/Certificates with the boundary's message", s, r, m)
	}

	// argocd-server stops answering: the last read stands until the staleness, then Unknown.
	f.argo.obErr = errors.New("argocd-server: connection refused")
	f.argo.listErr = errors.New("argocd-server: connection refused")
	for range 4 {
		f.now = f.now.Add(time.Minute)
		f.cycle(t, f.inv)
	}
	if s, _, _ := f.profiles.condition(t, "gpu-east-1", ConditionContractsHold); s != "False" {
		t.Fatalf("4 min without a read: ContractsHold %s, want the last read (False) to stand", s)
	}
	f.now = f.now.Add(2 * time.Minute)
	f.cycle(t, f.inv)
	for _, typ := range []string{ConditionContractsHold, ConditionControlPlaneHealthy} {
		if s, r, m := f.profiles.condition(t, "gpu-east-1", typ); s != "Unknown" || r != "StateUnreadable" || !strings.Contains(m, "connection refused") {
			t.Errorf("past the staleness: %s %s/%s %q, want Unknown/StateUnreadable with the read's error", typ, s, r, m)
		}
	}
}

func TestInventoryOneWriter(t *testing.T) {
	f := newInventoryFixture(t)
	f.profiles.add("gpu-east-1", ClusterManagerName)
	f.profiles.add("gpu-west-2", "open-cluster-management")
	f.argo.obs["spoke-gpu-east-1"] = holdingOnboarding(f.now)
	f.argo.obs["spoke-gpu-west-2"] = holdingOnboarding(f.now)
	f.cycle(t, f.inv)
	if _, ok := f.profiles.objs["gpu-west-2"].Object["status"]; ok {
		t.Fatal("spokeforge wrote the status of a profile another cluster manager owns")
	}
	rep := f.inv.Report()
	want := InventoryReport{Namespace: "argocd", Served: true, Profiles: map[string]int{"current": 1, "conflict": 1, "missing": 1},
		Conflicts: []InventoryConflict{{Cluster: "gpu-west-2", ClusterManager: "open-cluster-management"}}, LastCycle: f.now}
	if got, _ := json.Marshal(rep); string(got) != string(must(json.Marshal(want))) {
		t.Fatalf("report = %s\nwant     %s", got, must(json.Marshal(want)))
	}
	if f.argo.reads != 1 {
		t.Errorf("%d Onboarding reads, want 1: a profile spokeforge does not write is not read for", f.argo.reads)
	}

	// A second replica on the same hub state: the first write made the
	// status current, so it writes nothing.
	applies := f.profiles.applies
	f.cycle(t, f.replica(t))
	if f.profiles.applies != applies {
		t.Errorf("a second replica rewrote a status the first wrote: %d applies, want %d", f.profiles.applies, applies)
	}
}

// The hub's own record (connection.inCluster) is Argo CD's in-cluster; a
// record Argo CD does not list is not registered, whatever its server.
func TestInventoryConnectionOfRecord(t *testing.T) {
	f := newInventoryFixture(t)
	f.profiles.add("hub-local", ClusterManagerName)
	f.profiles.add("gpu-west-2", ClusterManagerName)
	f.argo.clusters = f.argo.clusters[:1]
	f.argo.clusters = append(f.argo.clusters, ClusterConnection{Name: "in-cluster", Server: "https://kubernetes.default.svc", Status: "Successful", AttemptedAt: f.now})
	f.cycle(t, f.inv)
	if s, r, _ := f.profiles.condition(t, "hub-local", ConditionControlPlaneHealthy); s != "True" {
		t.Errorf("hub-local: ControlPlaneHealthy %s/%s, want True from Argo CD's in-cluster", s, r)
	}
	if s, r, _ := f.profiles.condition(t, "gpu-west-2", ConditionControlPlaneHealthy); s != "False" || r != "ClusterNotRegistered" {
		t.Errorf("gpu-west-2: ControlPlaneHealthy %s/%s, want False/ClusterNotRegistered", s, r)
	}
}

// Without its spoke Application a cluster is not onboarded, and argocd-server is
// not asked (it answers 403 for a missing Application, as for a denied one).
func TestInventoryWithoutSpokeApplication(t *testing.T) {
	f := newInventoryFixture(t)
	f.profiles.add("gpu-east-1", ClusterManagerName)
	delete(f.hub.apps, "spoke-gpu-east-1")
	f.argo.obErr = errors.New("argocd-server: 403 Forbidden: permission denied")
	f.cycle(t, f.inv)
	if s, r, _ := f.profiles.condition(t, "gpu-east-1", ConditionContractsHold); s != "False" || r != "NotOnboarded" {
		t.Fatalf("ContractsHold %s/%s, want False/NotOnboarded", s, r)
	}
	if f.argo.reads != 0 {
		t.Fatalf("%d Onboarding reads for a missing spoke Application", f.argo.reads)
	}
}

// While Argo CD cannot reach a spoke its Onboarding is not asked for (argocd-server
// would time out on it); the last read stands until the staleness.
func TestInventorySpokeUnreachable(t *testing.T) {
	f := newInventoryFixture(t)
	f.profiles.add("gpu-east-1", ClusterManagerName)
	f.argo.obs["spoke-gpu-east-1"] = holdingOnboarding(f.now)
	f.cycle(t, f.inv)
	reads := f.argo.reads
	f.argo.clusters[0].Status, f.argo.clusters[0].Message = "Failed", "dial tcp 10.20.0.10:6443: i/o timeout"
	for range 4 {
		f.now = f.now.Add(time.Minute)
		f.argo.clusters[0].AttemptedAt = f.now
		f.cycle(t, f.inv)
	}
	if f.argo.reads != reads {
		t.Errorf("%d Onboarding reads of an unreachable spoke", f.argo.reads-reads)
	}
	if s, r, _ := f.profiles.condition(t, "gpu-east-1", ConditionControlPlaneHealthy); s != "False" || r != "ArgoCDConnectionFailed" {
		t.Errorf("ControlPlaneHealthy %s/%s, want False/ArgoCDConnectionFailed", s, r)
	}
	if s, _, _ := f.profiles.condition(t, "gpu-east-1", ConditionContractsHold); s != "True" {
		t.Errorf("4 min after the last read: ContractsHold %s, want the last read (True)", s)
	}
	f.now = f.now.Add(2 * time.Minute)
	f.argo.clusters[0].AttemptedAt = f.now
	f.cycle(t, f.inv)
	if s, r, _ := f.profiles.condition(t, "gpu-east-1", ConditionContractsHold); s != "Unknown" || r != "StateUnreadable" {
		t.Errorf("past the staleness: ContractsHold %s/%s, want Unknown/StateUnreadable", s, r)
	}
}

// appearing hides a profile from the first Get: it appears between the
// reads and the writes of a cycle.
type appearing struct {
	*fakeProfiles
	name string
	seen bool
}

func (a *appearing) Get(name string) (*unstructured.Unstructured, bool) {
	if name == a.name && !a.seen {
		a.seen = true
		return nil, false
	}
	return a.fakeProfiles.Get(name)
}

// A profile that appears between the reads and the writes of a cycle is written
// from what is known (nothing read yet), not skipped or crashed on.
func TestInventoryProfileAppearsMidCycle(t *testing.T) {
	f := newInventoryFixture(t)
	f.profiles.add("gpu-west-2", ClusterManagerName)
	src := &staticSource{snap: mustSnapshot(t, exampleFS(t, nil), "c1")}
	inv := NewInventory(InventoryConfig{Namespace: "argocd", Now: func() time.Time { return f.now }}, src, f.hub, f.argo,
		&appearing{fakeProfiles: f.profiles, name: "gpu-west-2"})
	f.cycle(t, inv)
	if s, r, _ := f.profiles.condition(t, "gpu-west-2", ConditionContractsHold); s != "Unknown" || r != "StateUnreadable" {
		t.Fatalf("the new profile: ContractsHold %s/%s, want Unknown/StateUnreadable (nothing read yet)", s, r)
	}
}

func TestInventoryIdleWithoutCRD(t *testing.T) {
	f := newInventoryFixture(t)
	f.profiles.served = false
	f.cycle(t, f.inv)
	if f.argo.reads != 0 || f.inv.Report().Served {
		t.Fatalf("without the CRD: %d reads, served %v; want none and false", f.argo.reads, f.inv.Report().Served)
	}
}

func TestInventoryWriteErrorIsReported(t *testing.T) {
	f := newInventoryFixture(t)
	f.profiles.add("gpu-east-1", ClusterManagerName)
	f.profiles.failOn = "gpu-east-1"
	err := f.inv.Cycle(context.Background())
	if err == nil || !strings.Contains(err.Error(), "ClusterProfile argocd/gpu-east-1") {
		t.Fatalf("Cycle = %v, want the profile named", err)
	}
	if rep := f.inv.Report(); !strings.Contains(rep.Error, "gpu-east-1") {
		t.Errorf("report error %q", rep.Error)
	}
}

func TestInventoryHubNotReady(t *testing.T) {
	f := newInventoryFixture(t)
	f.profiles.add("gpu-east-1", ClusterManagerName)
	f.hub.err = errors.New("hub API server: connection refused")
	if err := f.inv.Cycle(context.Background()); err == nil {
		t.Fatal("a cycle on an unready hub succeeded")
	}
	if f.profiles.applies != 0 || f.argo.reads != 0 {
		t.Fatalf("wrote %d, read %d on an unready hub", f.profiles.applies, f.argo.reads)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func TestArgoCDAPI(t *testing.T) {
	const token = "argocd-account-token-0123456789"
	ob := `{"apiVersion":"spokeforge.io/v1alpha1","kind":"Onboarding","metadata":{"name":"gpu-east-1","generation":2},
"status":{"observedGeneration":2,"firstFailedBoundary":"Queues","checkedAt":"2026-12-07T11:59:00Z",
"connected":{"kubernetesVersion":"v1.31.4","nodeCount":3,"checkedAt":"2026-12-07T11:59:00Z"},
"conditions":[{"type":"Queues","status":"False","message":"sqs: no queue"},{"type":"Ready","status":"False"}]}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"code":16,"message":"invalid session"}`))
			return
		}
		switch {
		case r.URL.Path == "/api/v1/clusters":
			_, _ = w.Write([]byte(`{"items":[{"name":"gpu-east-1","server":"https://10.20.0.10:6443","info":{"connectionState":{"status":"Successful","message":"","attemptedAt":"2026-12-07T11:59:50Z"},"serverVersion":"1.31","apiVersions":["v1"]}}]}`))
		case r.URL.Path == "/api/v1/applications/spoke-gpu-east-1/resource":
			q := r.URL.Query()
			// The cluster's own Onboarding by name and (empty) namespace: never whichever is listed first.
			if q.Get("kind") != "Onboarding" || q.Get("group") != "spokeforge.io" || q.Get("resourceName") != "gpu-east-1" || !q.Has("namespace") || q.Get("namespace") != "" {
				t.Errorf("resource query %s", r.URL.RawQuery)
			}
			b, _ := json.Marshal(map[string]string{"manifest": ob})
			_, _ = w.Write(b)
		case r.URL.Path == "/api/v1/applications/spoke-gpu-west-2/resource":
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"code":5,"message":"spokeforge.io Onboarding gpu-west-2 not found as part of application spoke-gpu-west-2"}`))
		default:
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"code":7,"message":"permission denied"}`))
		}
	}))
	defer srv.Close()
	tokFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := NewArgoCDAPI(srv.URL, tokFile, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cs, err := a.Clusters(ctx)
	if err != nil || len(cs) != 1 || cs[0].Status != "Successful" || cs[0].AttemptedAt.IsZero() || cs[0].ServerVersion != "1.31" {
		t.Fatalf("Clusters = %+v, %v", cs, err)
	}
	v, err := a.Onboarding(ctx, "spoke-gpu-east-1", "gpu-east-1")
	if err != nil || v.FirstFailedBoundary != "Queues" || v.NodeCount != 3 || v.KubernetesVersion != "v1.31.4" || v.Conditions["Queues"].Message != "sqs: no queue" || v.Generation != 2 {
		t.Fatalf("Onboarding = %+v, %v", v, err)
	}
	if _, err := a.Onboarding(ctx, "spoke-gpu-west-2", "gpu-west-2"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing Onboarding: %v, want ErrNotFound", err)
	}
	_, err = a.Onboarding(ctx, "other", "x")
	if err == nil || !strings.Contains(err.Error(), "permission denied") || strings.Contains(err.Error(), token) {
		t.Fatalf("forbidden: %v", err)
	}
	if err := os.WriteFile(tokFile, []byte("a-wrong-token-of-some-length"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = a.Clusters(ctx)
	if err == nil || strings.Contains(err.Error(), "a-wrong-token") {
		t.Fatalf("wrong token: %v (must fail without repeating the token)", err)
	}

	for _, bad := range []string{"ftp://argocd", "https://user:secret@argocd", "argocd:443", ""} {
		if _, err := NewArgoCDAPI(bad, tokFile, ""); err == nil || strings.Contains(err.Error(), "secret") {
			t.Errorf("NewArgoCDAPI(%q) = %v", bad, err)
		}
	}
}

func FuzzParseOnboarding(f *testing.F) {
	f.Add([]byte(`{"metadata":{"generation":1},"status":{"checkedAt":"2026-12-07T11:59:00Z","connected":{"nodeCount":3},"conditions":[{"type":"Ready","status":"True"}]}}`))
	f.Add([]byte(`{"status":{"checkedAt":"yesterday"}}`))
	f.Add([]byte(`{"status":{"conditions":[{"type":"Ready"},{"type":"Ready"}]}}`))
	fuzzCluster := exampleCluster(f, "gpu-east-1")
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := ParseOnboarding(b)
		if err != nil {
			return
		}
		// Whatever the spoke wrote, the status computed from it is valid.
		in := ProfileInputs{Now: profileNow, Staleness: time.Hour, Cluster: fuzzCluster, Onboarding: v, OnboardingReadAt: profileNow, ConnectionsReadAt: profileNow}
		for _, c := range ComputeProfileStatus(in).Conditions {
			if !conditionReason.MatchString(c.Reason) || len([]rune(c.Message)) > MaxConditionMessage {
				t.Fatalf("condition %s: reason %q, %d-character message", c.Type, c.Reason, len([]rune(c.Message)))
			}
			if c.Status != "True" && c.Status != "False" && c.Status != "Unknown" {
				t.Fatalf("condition %s status %q", c.Type, c.Status)
			}
		}
	})
}

// argocd-server over TLS: its certificate's CA from --argocd-ca-file, nothing else trusted.
func TestArgoCDAPITLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"items":[]}`))
	}))
	defer srv.Close()
	dir := t.TempDir()
	tok, ca := filepath.Join(dir, "token"), filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(tok, []byte("argocd-account-token-0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := NewArgoCDAPI(srv.URL, tok, ca)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Clusters(context.Background()); err != nil {
		t.Fatalf("with the CA: %v", err)
	}
	a, err = NewArgoCDAPI(srv.URL, tok, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Clusters(context.Background()); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("without the CA: %v, want a certificate error", err)
	}
	if err := os.WriteFile(ca, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NewArgoCDAPI(srv.URL, tok, ca); err == nil {
		t.Fatal("a CA file without a certificate was accepted")
	}
}

func TestStripProfile(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ClusterProfile",
		"metadata": map[string]any{"name": "gpu-east-1", "namespace": "argocd", "resourceVersion": "7",
			"annotations":   map[string]any{"kubectl.kubernetes.io/last-applied-configuration": strings.Repeat("x", 4096)},
			"managedFields": []any{map[string]any{"manager": "argocd-controller"}}},
		"spec":   map[string]any{"displayName": "gpu-east-1", "clusterManager": map[string]any{"name": "spokeforge"}},
		"status": map[string]any{"conditions": []any{map[string]any{"type": "ControlPlaneHealthy", "status": "True"}}},
	}}
	got, err := stripProfile(u)
	if err != nil {
		t.Fatal(err)
	}
	s := got.(*unstructured.Unstructured)
	if s.GetName() != "gpu-east-1" || s.GetResourceVersion() != "7" || profileManager(s) != "spokeforge" || len(profileConditions(s)) != 1 {
		t.Fatalf("stripped profile lost what the inventory reads: %v", s.Object)
	}
	if s.GetAnnotations() != nil || s.GetManagedFields() != nil {
		t.Fatalf("stripped profile keeps %v", s.Object["metadata"])
	}
}
