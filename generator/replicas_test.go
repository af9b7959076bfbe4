package generator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/spokeforge/spokeforge/internal/repo"
)

// TestIncrementalSnapshotEqualsFull: a Loader fed commit after commit makes
// the same snapshot as a full load of each (parameter sets, answers, indexes)
// and the same findings for an invalid one; a cluster record change that
// moves the destination of another file's zone re-encodes that zone.
func TestIncrementalSnapshotEqualsFull(t *testing.T) {
	hubLocal := string(exampleFS(t, nil)["clusters/hub-local/cluster.yaml"].Data)
	steps := []struct {
		name  string
		edits map[string]string
	}{
		{"first", nil},
		{"unchanged", nil},
		{"allowlist", map[string]string{"orgs/globex.yaml": "apiVersion: spokeforge.io/v1alpha1\nkind: Organization\nmetadata: {name: globex}\nspec: {clusterAllowlist: [gpu-west-2, gpu-east-1]}\n"}},
		{"invalid", map[string]string{"orgs/globex.yaml": badOrg}},
		{"hostile bytes", map[string]string{"products/acme/checkout.yaml": "\xff\xfe\x00kind: [Product"}},
		{"fixed, a zone on hub-local", map[string]string{"orgs/globex.yaml": "", "products/globex/trainer.yaml": "",
			"products/acme/checkout.yaml": string(exampleFS(t, nil)["products/acme/checkout.yaml"].Data) + "      - {name: checkout-local, environment: release, cluster: hub-local}\n"}},
		{"inCluster turned off moves a zone", map[string]string{"clusters/hub-local/cluster.yaml": strings.Replace(hubLocal, "inCluster: true", "server: https://hub.example.invalid:6443\n    credentials: {type: bearerToken}", 1)}},
		{"cluster removed", map[string]string{"clusters/gpu-west-2/cluster.yaml": ""}},
	}
	if !strings.Contains(hubLocal, "inCluster: true") {
		t.Fatal("hub-local is no longer inCluster; fix the test")
	}
	files := map[string][]byte{}
	for p, f := range exampleFS(t, nil) {
		files[p] = f.Data
	}
	l := NewLoader(testSource)
	for i, st := range steps {
		for p, c := range st.edits {
			if c == "" {
				delete(files, p)
			} else {
				files[p] = []byte(c)
			}
		}
		commit := fmt.Sprint("c", i)
		full, fullErrs := LoadSnapshot(repo.NewMemFS(copyFiles(files)), commit, testSource)
		inc, incErrs := l.Load(repo.NewMemFS(copyFiles(files)), commit)
		if !reflect.DeepEqual(incErrs, fullErrs) {
			t.Fatalf("%s: findings differ:\n got %v\nwant %v", st.name, incErrs, fullErrs)
		}
		if (full == nil) != (inc == nil) {
			t.Fatalf("%s: full %v, incremental %v", st.name, full != nil, inc != nil)
		}
		if full == nil {
			continue
		}
		inc.LoadedAt = full.LoadedAt
		if !reflect.DeepEqual(inc, full) {
			t.Fatalf("%s: the incremental snapshot differs from the full load", st.name)
		}
		for _, z := range inc.zones {
			if z.Zone == "checkout-local" && (z.dest != inc.destination("hub-local") || !strings.Contains(string(z.set), fmt.Sprintf(`"destination":{"name":%q`, z.dest.Name))) {
				t.Fatalf("%s: the zone on hub-local has destination %+v, its set %s", st.name, z.dest, z.set)
			}
		}
	}
}

// TestCurrentConfirmsHead: with ConfirmHead an answer comes from the commit
// the revision names at the time of the request, loaded on the spot; an
// invalid head leaves the last good snapshot; an unreachable repo is an error.
func TestCurrentConfirmsHead(t *testing.T) {
	g := newGitRepo(t)
	src, err := NewGitSource(GitConfig{Repo: "file://" + g.dir, ConfirmHead: true, App: testSource})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	steps := []struct {
		name   string
		edits  map[string]string
		served func(head, prev string) string // "" wants an error
	}{
		{"first call loads", nil, func(head, _ string) string { return head }},
		{"a new commit is loaded by the next call", map[string]string{"orgs/globex.yaml": "apiVersion: spokeforge.io/v1alpha1\nkind: Organization\nmetadata: {name: globex}\nspec: {clusterAllowlist: []}\n"}, func(head, _ string) string { return head }},
		{"an invalid head keeps the last good", map[string]string{"orgs/globex.yaml": badOrg}, func(_, prev string) string { return prev }},
	}
	prev := ""
	for _, st := range steps {
		head := prev
		if st.edits != nil || prev == "" {
			if st.edits != nil {
				head = g.commit(t, st.name, st.edits)
			} else {
				h, _ := g.r.Head()
				head = h.Hash().String()
			}
		}
		snap, err := src.Current(ctx)
		if err != nil || snap.Commit != st.served(head, prev) {
			t.Fatalf("%s: %v %v", st.name, snap, err)
		}
		prev = snap.Commit
	}
	src.cfg.Repo = "file://" + g.dir + ".gone"
	if _, err := src.Current(ctx); err == nil || !strings.Contains(err.Error(), "cannot confirm the repo head") {
		t.Fatalf("unreachable repo: %v", err)
	}
}

// TestHeadMoveSharesOneRefresh: requests that all see the head move wait on
// one refresh; none lists the remote again after it has loaded the commit
// (each refresh counts in spokeforge_generator_repo_loads_total).
func TestHeadMoveSharesOneRefresh(t *testing.T) {
	g := newGitRepo(t)
	src, err := NewGitSource(GitConfig{Repo: "file://" + g.dir, ConfirmHead: true, App: testSource})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := src.Current(ctx); err != nil {
		t.Fatal(err)
	}
	refreshes := func() map[string]float64 {
		out := map[string]float64{}
		for _, r := range []string{"loaded", "unchanged", "invalid", "fetch_error"} {
			m := &dto.Metric{}
			if err := src.loads.WithLabelValues(r).Write(m); err != nil {
				t.Fatal(err)
			}
			out[r] = m.GetCounter().GetValue()
		}
		return out
	}
	for round := 1; round <= 3; round++ {
		head := g.commit(t, fmt.Sprintf("round %d", round), map[string]string{"orgs/globex.yaml": fmt.Sprintf(
			"apiVersion: spokeforge.io/v1alpha1\nkind: Organization\nmetadata: {name: globex}\nspec: {clusterAllowlist: [c%d]}\n", round)})
		before := refreshes()
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for i := 0; i < 16; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				snap, err := src.Current(ctx)
				if err == nil && snap.Commit != head {
					err = fmt.Errorf("served %s, want %s", snap.Commit[:8], head[:8])
				}
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		after := refreshes()
		if after["loaded"]-before["loaded"] != 1 || after["unchanged"] != before["unchanged"] || after["fetch_error"] != before["fetch_error"] {
			t.Fatalf("round %d: 16 requests after one head move refreshed %v, want one load and nothing else", round, after)
		}
	}
}

// TestSharedRefreshErrors: a request that shared a head check takes the
// error of a refresh that began after it, unless that refresh failed only
// because its own caller went away: then it refreshes itself.
func TestSharedRefreshErrors(t *testing.T) {
	g := newGitRepo(t)
	src, err := NewGitSource(GitConfig{Repo: "file://" + g.dir, ConfirmHead: true, App: testSource})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	h, _ := g.r.Head()
	head := h.Hash().String()
	src.refreshed.headSeq, src.refreshed.err = 5, errors.New("listing the remote: connection refused")
	if err := src.refreshSince(ctx, head, 5); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("a shared failed refresh: %v", err)
	}
	if err := src.refreshSince(ctx, head, 6); err != nil || !src.loaded(head) {
		t.Fatalf("a refresh older than the check is not shared: %v, loaded %v", err, src.loaded(head))
	}
	head = g.commit(t, "next", map[string]string{"orgs/globex.yaml": "apiVersion: spokeforge.io/v1alpha1\nkind: Organization\nmetadata: {name: globex}\nspec: {clusterAllowlist: []}\n"})
	src.refreshed.headSeq, src.refreshed.err = 9, fmt.Errorf("fetching: %w", context.Canceled)
	if err := src.refreshSince(ctx, head, 9); err != nil || !src.loaded(head) {
		t.Fatalf("a refresh whose caller went away is not shared: %v, loaded %v", err, src.loaded(head))
	}
}

// TestTwoReplicas asks two generators over the same repo and hub, each
// with its own fetch schedule, while commits add zones and allowlist
// entries: answers made from the same commit are byte-identical, and no
// answer is shorter than one given before it (a lagging replica answers an
// error or catches up, never an older, shorter list).
func TestTwoReplicas(t *testing.T) {
	g := newGitRepo(t)
	hub := registeredHub()
	var replicas []*Server
	for i := 0; i < 2; i++ {
		src, err := NewGitSource(GitConfig{Repo: g.dir, ConfirmHead: true, App: testSource})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := src.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
		replicas = append(replicas, benchServer(t, src, hub))
	}
	// Only one replica's own fetch loop runs, and often: the other lags
	// unless answering makes it catch up.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go replicas[0].src.(*GitSource).Run(ctx, 5*time.Millisecond)

	type answer struct {
		commit string
		body   string
		n      int
	}
	var mu sync.Mutex
	byCommit := map[string]map[string]string{} // kind -> commit -> body
	errs, ok := 0, 0
	ask := func(srv *Server, kind string, floor *int) error {
		req := httptest.NewRequest(http.MethodPost, "/api/v1/getparams.execute", strings.NewReader(`{"input":{"parameters":{"kind":"`+kind+`"}}}`))
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		mu.Lock()
		defer mu.Unlock()
		if w.Code != 200 {
			errs++
			return nil
		}
		ok++
		var r Response
		if err := json.Unmarshal(w.Body.Bytes(), &r); err != nil {
			return err
		}
		a := answer{w.Header().Get(CommitHeader), w.Body.String(), len(r.Output.Parameters)}
		if a.n < *floor {
			return fmt.Errorf("%s answer from %s has %d sets after one with %d", kind, a.commit[:8], a.n, *floor)
		}
		*floor = a.n
		if byCommit[kind] == nil {
			byCommit[kind] = map[string]string{}
		}
		if prev, seen := byCommit[kind][a.commit]; seen && prev != a.body {
			return fmt.Errorf("%s answers from commit %s differ between replicas", kind, a.commit[:8])
		}
		byCommit[kind][a.commit] = a.body
		return nil
	}
	product := func(n int) string {
		var b strings.Builder
		b.WriteString("apiVersion: spokeforge.io/v1alpha1\nkind: Product\nmetadata: {name: batch}\nspec:\n  delivery:\n    zones:\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "      - {name: batch-%02d, environment: release, cluster: gpu-east-1}\n", i)
		}
		return b.String()
	}
	floors := map[string]*int{KindZones: new(int), KindClusters: new(int)}
	for c := 1; c <= 8; c++ {
		edits := map[string]string{"products/acme/batch.yaml": product(c)}
		if c%3 == 0 {
			name := fmt.Sprintf("extra-%d", c)
			rec := strings.ReplaceAll(string(exampleFS(t, nil)["clusters/gpu-east-1/cluster.yaml"].Data), "gpu-east-1", name)
			rec = withoutWorkloads(t, strings.ReplaceAll(rec, "eue1", fmt.Sprintf("ex%02d", c)))
			edits["clusters/"+name+"/cluster.yaml"] = rec
		}
		g.commit(t, fmt.Sprint("commit ", c), edits)
		// Between commits both replicas are asked in turn, from two
		// goroutines each, as a Service spreads an ApplicationSet's calls.
		var wg sync.WaitGroup
		failures := make(chan error, 64)
		for w := 0; w < 2; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 6; i++ {
					for _, kind := range []string{KindZones, KindClusters} {
						// One sequence of calls per kind: a floor is what this
						// caller was already told.
						if err := ask(replicas[(i+w)%2], kind, floors[kind]); err != nil {
							failures <- err
						}
					}
				}
			}()
		}
		wg.Wait()
		close(failures)
		for err := range failures {
			t.Error(err)
		}
	}
	if len(byCommit[KindZones]) < 8 {
		t.Errorf("answers came from %d commits; the test did not see the commits go by", len(byCommit[KindZones]))
	}
	t.Logf("%d answers, %d errors, %d commits answered", ok, errs, len(byCommit[KindZones]))
	if st := replicas[1].src.Status(); st.HeadError != "" {
		t.Errorf("a commit of the test is invalid: %s", st.HeadError)
	}
}
