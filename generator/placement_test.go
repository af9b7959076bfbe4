package generator

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func decisions(t *testing.T, s *Snapshot, h Hub, f Filter) map[string]Decision {
	t.Helper()
	p := Place(s, h)
	ds := p.Decisions(f, true)
	_, sets := p.Answer(f)
	out := map[string]Decision{}
	placed := 0
	for _, d := range ds {
		out[d.Zone] = d
		if d.Outcome == Placed {
			placed++
		}
	}
	if placed != sets {
		t.Fatalf("%d placed decisions but %d parameter sets", placed, sets)
	}
	return out
}

// answerSets decodes a Placement's answer for f.
func answerSets(t *testing.T, p *Placement, f Filter) []map[string]any {
	t.Helper()
	b, _ := p.Answer(f)
	var r Response
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r.Output.Parameters
}

func TestPlacementRules(t *testing.T) {
	snap := mustSnapshot(t, exampleFS(t, nil), "c1")
	tests := []struct {
		name   string
		hub    func() *fakeHub
		zone   string
		want   Outcome
		reason string
	}{
		{"no cluster runs on the management cluster", func() *fakeHub { return &fakeHub{} }, "checkout-rc", Placed, "management cluster"},
		{"not on the org's allowlist", registeredHub, "checkout-west", Rejected, "not on org acme's clusterAllowlist"},
		{"registered", registeredHub, "checkout-prod", Placed, "is registered"},
		{"no cluster Secret", func() *fakeHub { h := registeredHub(); delete(h.secrets, "gpu-east-1"); return h }, "checkout-prod", Waiting, "no Argo CD cluster Secret names gpu-east-1"},
		{"no spoke Application", func() *fakeHub { h := registeredHub(); delete(h.apps, "spoke-gpu-east-1"); return h }, "checkout-prod", Waiting, "Application spoke-gpu-east-1 does not exist"},
		{"spoke Application Progressing", func() *fakeHub {
			h := registeredHub()
			h.apps["spoke-gpu-east-1"] = App{Health: "Progressing"}
			return h
		}, "checkout-prod", Waiting, "is Progressing, not Healthy"},
		{"spoke Application without health", func() *fakeHub {
			h := registeredHub()
			h.apps["spoke-gpu-east-1"] = App{}
			return h
		}, "checkout-prod", Waiting, "is unknown, not Healthy"},
		{"other org's zone on its own allowlisted cluster", registeredHub, "trainer-staging", Placed, "is registered"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := decisions(t, snap, tt.hub(), Filter{})[tt.zone]
			if d.Outcome != tt.want || !strings.Contains(d.Reason, tt.reason) {
				t.Fatalf("%s: got %s (%s), want %s containing %q", tt.zone, d.Outcome, d.Reason, tt.want, tt.reason)
			}
		})
	}
}

func TestPlacementInClusterNeedsNoSecret(t *testing.T) {
	snap := mustSnapshot(t, exampleFS(t, map[string]string{"products/acme/checkout.yaml": `apiVersion: spokeforge.io/v1alpha1
kind: Product
metadata: {name: checkout}
spec:
  delivery:
    zones:
      - {name: checkout-local, environment: release, cluster: hub-local, namespace: checkout-rc}
`}), "c1")
	h := &fakeHub{apps: map[string]App{}}
	if d := decisions(t, snap, h, Filter{})["checkout-local"]; d.Outcome != Waiting || !strings.Contains(d.Reason, "spoke-hub-local") {
		t.Fatalf("without spoke-hub-local: %+v", d)
	}
	h.apps["spoke-hub-local"] = App{Health: HealthHealthy}
	pl := Place(snap, h)
	ds, sets := pl.Decisions(Filter{Org: "acme"}, true), answerSets(t, pl, Filter{Org: "acme"})
	if len(ds) != 1 || ds[0].Outcome != Placed || len(sets) != 1 {
		t.Fatalf("with a Healthy spoke-hub-local and no Secret: %+v", ds)
	}
	if d := sets[0]["destination"].(map[string]any); d["server"] != "https://kubernetes.default.svc" || d["name"] != "" {
		t.Fatalf("inCluster destination = %v", d)
	}
}

func TestPlacementUnknownClusterIsAZoneRejection(t *testing.T) {
	// gpu-west-2's record is deleted but globex still lists it and trainer-staging still uses it:
	// the repo stays usable and only that zone is rejected.
	snap, errs := LoadSnapshot(exampleFS(t, map[string]string{"clusters/gpu-west-2/cluster.yaml": ""}), "c2", testSource)
	if len(errs) > 0 {
		t.Fatalf("LoadSnapshot: %v", errs)
	}
	ds := decisions(t, snap, registeredHub(), Filter{})
	if d := ds["trainer-staging"]; d.Outcome != Rejected || !strings.Contains(d.Reason, "not known: no clusters/gpu-west-2/cluster.yaml") {
		t.Fatalf("trainer-staging: %+v", d)
	}
	if d := ds["checkout-prod"]; d.Outcome != Placed {
		t.Fatalf("checkout-prod: %+v", d)
	}
	// Any other finding still rejects the whole snapshot.
	_, errs = LoadSnapshot(exampleFS(t, map[string]string{"orgs/globex.yaml": "apiVersion: spokeforge.io/v1alpha1\nkind: Organization\nmetadata: {name: globex}\nspec: {clusterAllowlist: [gpu-west-2], extra: 1}\n"}), "c3", testSource)
	if len(errs) == 0 {
		t.Fatal("an unknown field was accepted")
	}
}

// TestPlacementSticky: a placed zone stays placed while its cluster is
// unready because its Application exists on the hub (the controller made it
// from the placement); nothing is remembered in the process.
func TestPlacementSticky(t *testing.T) {
	fsys := exampleFS(t, nil)
	snap := mustSnapshot(t, fsys, "c1")
	h := registeredHub()
	if d := decisions(t, snap, h, Filter{})["checkout-prod"]; d.Outcome != Placed || d.Sticky {
		t.Fatalf("registered: %+v", d)
	}
	// The ApplicationSet controller creates the zone's Application.
	h.apps["product-checkout-prod"] = App{Destination: Destination{Name: "gpu-east-1"}}
	// The spoke goes Degraded and its Secret is briefly gone: the zone stays.
	h.apps["spoke-gpu-east-1"] = App{Health: "Degraded"}
	delete(h.secrets, "gpu-east-1")
	if d := decisions(t, snap, h, Filter{})["checkout-prod"]; d.Outcome != Placed || !d.Sticky || !strings.Contains(d.Reason, "kept while") {
		t.Fatalf("briefly unready: %+v", d)
	}
	// A new commit that changes nothing about the zone keeps it too.
	snap2 := mustSnapshot(t, fsys, "c2")
	if d := decisions(t, snap2, h, Filter{})["checkout-prod"]; d.Outcome != Placed || !d.Sticky {
		t.Fatalf("unrelated commit: %+v", d)
	}
	// Git withdraws it: acme no longer allowlists gpu-east-1, whatever the hub holds.
	noAllow := exampleFS(t, map[string]string{"orgs/acme.yaml": "apiVersion: spokeforge.io/v1alpha1\nkind: Organization\nmetadata: {name: acme}\nspec: {clusterAllowlist: [hub-local], hubNamespaces: [checkout-rc]}\n",
		"clusters/gpu-east-1/cluster.yaml": withoutWorkloads(t, string(exampleFS(t, nil)["clusters/gpu-east-1/cluster.yaml"].Data))})
	snap3 := mustSnapshot(t, noAllow, "c3")
	if d := decisions(t, snap3, h, Filter{})["checkout-prod"]; d.Outcome != Rejected {
		t.Fatalf("allowlist entry removed: %+v", d)
	}
	// The controller deleted the Application; back on the allowlist while the
	// cluster is still unready, the zone waits.
	delete(h.apps, "product-checkout-prod")
	snap4 := mustSnapshot(t, fsys, "c4")
	if d := decisions(t, snap4, h, Filter{})["checkout-prod"]; d.Outcome != Waiting {
		t.Fatalf("re-allowed, cluster unready: %+v", d)
	}
}

func TestPlacementStickyAcrossRestart(t *testing.T) {
	snap := mustSnapshot(t, exampleFS(t, nil), "c1")
	h := registeredHub()
	delete(h.secrets, "gpu-east-1")
	h.apps["product-checkout-prod"] = App{Destination: Destination{Name: "gpu-east-1"}, Health: HealthHealthy}
	if d := decisions(t, snap, h, Filter{})["checkout-prod"]; d.Outcome != Placed || !d.Sticky {
		t.Fatalf("existing zone Application, fresh process: %+v", d)
	}
	// The existing Application points elsewhere (the zone moved in git): no stickiness.
	h.apps["product-checkout-prod"] = App{Destination: Destination{Name: "gpu-west-2"}}
	if d := decisions(t, snap, h, Filter{})["checkout-prod"]; d.Outcome != Waiting {
		t.Fatalf("existing Application with another destination: %+v", d)
	}
}

func TestZoneFilters(t *testing.T) {
	snap := mustSnapshot(t, exampleFS(t, nil), "c1")
	tests := []struct {
		f    Filter
		want string
	}{
		{Filter{}, "checkout-prod,checkout-rc,checkout-west,trainer-staging"},
		{Filter{Org: "acme"}, "checkout-prod,checkout-rc,checkout-west"},
		{Filter{Org: "globex"}, "trainer-staging"},
		{Filter{Product: "checkout", Environment: "release"}, "checkout-prod,checkout-west"},
		{Filter{Environment: "pre-release"}, "checkout-rc,trainer-staging"},
		{Filter{Org: "nobody"}, ""},
	}
	for _, tt := range tests {
		ds := Place(snap, registeredHub()).Decisions(tt.f, false)
		var got []string
		for _, d := range ds {
			got = append(got, d.Zone)
		}
		if g := strings.Join(got, ","); g != tt.want {
			t.Errorf("%+v: zones %s, want %s", tt.f, g, tt.want)
		}
	}
}

// TestPlacementOrder: when computations overlap, the one that finishes last
// may have the older inputs; it replaces neither the served Placement nor
// the recorded decisions (gauges, logs) of newer ones.
func TestPlacementOrder(t *testing.T) {
	old := mustSnapshot(t, exampleFS(t, nil), "old")
	cur := mustSnapshot(t, exampleFS(t, nil), "new")
	hub := registeredHub()
	pOld := Place(old, hub)
	hub.version = 1
	pOldLaterHub := Place(old, hub)
	pNew := Place(cur, hub)
	for _, tc := range []struct {
		name string
		p, q *Placement
		want bool
	}{
		{"anything after nothing", pOld, nil, true},
		{"later snapshot", pNew, pOldLaterHub, true},
		{"earlier snapshot", pOldLaterHub, pNew, false},
		{"same snapshot, later hub", pOldLaterHub, pOld, true},
		{"same snapshot, earlier hub", pOld, pOldLaterHub, false},
		{"same inputs", pNew, pNew, true},
	} {
		if got := tc.p.newer(tc.q); got != tc.want {
			t.Errorf("%s: newer = %v, want %v", tc.name, got, tc.want)
		}
	}

	// The hub withdraws gpu-east-1 for the newer placement only: its zones wait there.
	withdrawn := registeredHub()
	withdrawn.version = 2
	delete(withdrawn.secrets, "gpu-east-1")
	pWithdrawn := Place(cur, withdrawn)
	srv := benchServer(t, &staticSource{snap: cur}, withdrawn)
	srv.record(pWithdrawn)
	want := map[string]Outcome{}
	for z, o := range srv.last {
		want[z] = o
	}
	srv.record(pOld) // finished last, computed from older inputs
	if !reflect.DeepEqual(srv.last, want) || srv.recorded != pWithdrawn {
		t.Fatalf("an older placement recorded over a newer one:\n got %v\nwant %v", srv.last, want)
	}
	waiting := 0
	for _, o := range want {
		if o != Placed {
			waiting++
		}
	}
	if waiting == 0 {
		t.Fatal("the test's newer placement changed no decision; it proves nothing")
	}
}
