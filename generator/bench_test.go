package generator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spokeforge/spokeforge/internal/repo"
)

// synthRepo is a deterministic gitops repo: clusters records, clusters/50 orgs each
// allowlisting 50 clusters, and 5 zones per cluster (25 products of 10 zones per org). Of
// each product's zones one runs on the management cluster, one names a cluster outside the
// org's allowlist, the rest an allowlisted cluster.
func synthRepo(clusters int) *repo.MemFS { return repo.NewMemFS(synthFiles(clusters)) }

// synthFiles is synthRepo's files.
func synthFiles(clusters int) map[string][]byte {
	m := map[string][]byte{}
	for i := 0; i < clusters; i++ {
		m[fmt.Sprintf("clusters/c%05d/cluster.yaml", i)] = []byte(fmt.Sprintf(`apiVersion: spokeforge.io/v1alpha1
kind: Cluster
metadata:
  name: c%05d
  labels: {gpu: h100, rack: r%d}
spec:
  shortName: s%05d
  account: acme-ml
  accountID: "111122223333"
  environment: prod
  region: us-east-1
  zone: colo-%d
  provider: coreweave
  connection:
    server: https://c%05d.api.example.internal:6443
    credentials: {type: bearerToken}
  identity:
    trustAnchorArn: arn:aws:rolesanywhere:us-east-1:111122223333:trust-anchor/0c5d6a3e-1f2b-4c8d-9e0f-1a2b3c4d5e6f
    profileArn: arn:aws:rolesanywhere:us-east-1:111122223333:profile/7a8b9c0d-1e2f-4a5b-8c6d-7e8f9a0b1c2d
    issuer: {name: spokeforge-ca}
  network: {podCIDR: 10.100.0.0/16, serviceCIDR: 10.101.0.0/16, dnsServiceIP: 10.101.0.10}
  queues: [{purpose: jobs}]
  secrets: [{name: settings, namespace: platform}]
`, i, i%40, i, i%7, i))
	}
	orgs := clusters / 50
	for o := 0; o < orgs; o++ {
		var allow []string
		for c := o * 50; c < o*50+50; c++ {
			allow = append(allow, fmt.Sprintf("c%05d", c))
		}
		// Zone z0 of each product runs on the management cluster, in its own namespace.
		var hubNS []string
		for p := 0; p < 25; p++ {
			hubNS = append(hubNS, fmt.Sprintf("o%03d-p%02d-z0", o, p))
		}
		m[fmt.Sprintf("orgs/o%03d.yaml", o)] = []byte(fmt.Sprintf(
			"apiVersion: spokeforge.io/v1alpha1\nkind: Organization\nmetadata: {name: o%03d}\nspec:\n  clusterAllowlist: [%s]\n  hubNamespaces: [%s]\n",
			o, strings.Join(allow, ", "), strings.Join(hubNS, ", ")))
		for p := 0; p < 25; p++ {
			var b strings.Builder
			fmt.Fprintf(&b, "apiVersion: spokeforge.io/v1alpha1\nkind: Product\nmetadata: {name: p%02d}\nspec:\n  delivery:\n    zones:\n", p)
			for z := 0; z < 10; z++ {
				name := fmt.Sprintf("o%03d-p%02d-z%d", o, p, z)
				env := []string{"release", "pre-release"}[z%2]
				switch z {
				case 0:
					fmt.Fprintf(&b, "      - {name: %s, environment: %s}\n", name, env)
				case 1:
					fmt.Fprintf(&b, "      - {name: %s, environment: %s, cluster: c%05d}\n", name, env, ((o+1)%orgs)*50)
				default:
					fmt.Fprintf(&b, "      - {name: %s, environment: %s, cluster: c%05d}\n", name, env, o*50+(p*10+z)%50)
				}
			}
			m[fmt.Sprintf("products/o%03d/p%02d.yaml", o, p)] = []byte(b.String())
		}
	}
	return m
}

// synthHub registers 4 clusters in 5 (Secret and Healthy spoke Application).
func synthHub(clusters int) *fakeHub {
	h := &fakeHub{secrets: map[string]bool{}, apps: map[string]App{}}
	for i := 0; i < clusters; i++ {
		if i%5 == 4 {
			continue
		}
		c := fmt.Sprintf("c%05d", i)
		h.secrets[c] = true
		h.apps["spoke-"+c] = App{Health: HealthHealthy}
	}
	return h
}

var scales = []int{100, 1000, 10000}

type benchEnv struct {
	snap *Snapshot
	hub  *fakeHub
	srv  *Server
}

var (
	envMu sync.Mutex
	envs  = map[int]*benchEnv{}
)

// env loads the synthetic repo once per size; the server (and its token file) is per benchmark.
func env(b testing.TB, clusters int) *benchEnv {
	envMu.Lock()
	e, ok := envs[clusters]
	if !ok {
		e = &benchEnv{snap: mustSnapshot(b, synthRepo(clusters), "bench"), hub: synthHub(clusters)}
		envs[clusters] = e
	}
	envMu.Unlock()
	return &benchEnv{snap: e.snap, hub: e.hub, srv: benchServer(b, &staticSource{snap: e.snap}, e.hub)}
}

func benchServer(b testing.TB, src Source, hub Hub) *Server {
	dir := b.TempDir()
	tok := dir + "/token"
	if err := writeFile(tok, testToken); err != nil {
		b.Fatal(err)
	}
	srv, err := NewServer(Config{TokenFile: tok}, src, hub)
	if err != nil {
		b.Fatal(err)
	}
	return srv
}

func call(b testing.TB, srv *Server, kind string) int {
	req := httptest.NewRequest(http.MethodPost, "/api/v1/getparams.execute", strings.NewReader(`{"applicationSetName":"bench","input":{"parameters":{"kind":"`+kind+`"}}}`))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	w := &sink{h: http.Header{}}
	srv.ServeHTTP(w, req)
	if w.code != 200 {
		b.Fatalf("%s: %d %s", kind, w.code, w.head)
	}
	return w.n
}

// sink is an http.ResponseWriter that keeps the status, the body's size and
// its start: the benchmarks measure the handler, not a recorder copying
// 12 MB answers (a server writes them to its socket).
type sink struct {
	h    http.Header
	code int
	n    int
	head []byte
}

func (s *sink) Header() http.Header { return s.h }
func (s *sink) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
}
func (s *sink) Write(b []byte) (int, error) {
	s.WriteHeader(http.StatusOK)
	if len(s.head) < 200 {
		s.head = append(s.head, b[:min(len(b), 200-len(s.head))]...)
	}
	s.n += len(b)
	return len(b), nil
}

// benchCalls runs kind calls from 10 concurrent callers and reports p50/p99 latency.
func benchCalls(b *testing.B, clusters int, kind string) {
	atGeneratorGC(b)
	benchServe(b, env(b, clusters).srv, kind)
}

// atGeneratorGC runs the benchmark at the GC target the generator command
// sets (GCPercent), unless GOGC is in the environment, as the command does.
func atGeneratorGC(b *testing.B) {
	if os.Getenv("GOGC") == "" {
		old := debug.SetGCPercent(GCPercent)
		b.Cleanup(func() { debug.SetGCPercent(old) })
	}
}

// benchServe is benchCalls against srv.
func benchServe(b *testing.B, srv *Server, kind string) {
	size := call(b, srv, kind)
	var mu sync.Mutex
	lat := make([]time.Duration, 0, b.N)
	b.SetBytes(int64(size))
	b.ResetTimer()
	b.SetParallelism((10 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			t := time.Now()
			call(b, srv, kind)
			d := time.Since(t)
			mu.Lock()
			lat = append(lat, d)
			mu.Unlock()
		}
	})
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	if rss := procStatusMiB("VmHWM"); rss > 0 {
		b.ReportMetric(rss, "rss-MiB")
		b.ReportMetric(procStatusMiB("RssAnon"), "anon-MiB")
	}
}

// procStatusMiB reads a /proc/self/status figure: VmHWM is the peak resident
// set over the test binary's whole life (synthetic repo and snapshot loads
// included, and the binary's own pages), an upper bound of what a generator
// serving the same answers holds; RssAnon is the memory the data takes now.
// Run one size per process to read them.
func procStatusMiB(key string) float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, key+":"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb / 1024
		}
	}
	return 0
}

func BenchmarkZones(b *testing.B) {
	for _, n := range scales {
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) { benchCalls(b, n, KindZones) })
	}
}

func BenchmarkClusters(b *testing.B) {
	for _, n := range scales {
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) { benchCalls(b, n, KindClusters) })
	}
}

// BenchmarkSnapshotLoad: parse, validate and index a whole repo (what a new commit costs),
// and the heap the snapshot keeps.
func BenchmarkSnapshotLoad(b *testing.B) {
	for _, n := range scales {
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) {
			atGeneratorGC(b)
			fsys := synthRepo(n)
			var keep *Snapshot
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				keep = mustSnapshot(b, fsys, "bench")
			}
			b.StopTimer()
			runtime.GC()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(int64(after.HeapInuse)-int64(before.HeapInuse))/(1<<20), "heap-MB")
			runtime.KeepAlive(keep)
		})
	}
}

// BenchmarkIncrementalLoad: what a new commit costs a Loader that loaded the
// previous one, when one cluster record changed and when every record
// changed, beside a full load of the same commit timed in the same
// iteration (so the ratio holds on a busy machine). Iterations alternate
// between two commits; the files come with their git blob hashes, as a git
// tree's do.
func BenchmarkIncrementalLoad(b *testing.B) {
	for _, n := range scales {
		base := synthFiles(n)
		one := copyFiles(base)
		p := fmt.Sprintf("clusters/c%05d/cluster.yaml", n/2)
		one[p] = append(append([]byte(nil), one[p]...), "  # one record changed\n"...)
		all := map[string][]byte{}
		for k, v := range base {
			all[k] = append(append([]byte(nil), v...), "# every record changed\n"...)
		}
		for _, c := range []struct {
			name string
			next map[string][]byte
		}{{"one-changed", one}, {"all-changed", all}} {
			b.Run(fmt.Sprintf("clusters=%d/%s", n, c.name), func(b *testing.B) {
				atGeneratorGC(b)
				commits := []func() *repo.MemFS{blobFS(base), blobFS(c.next)}
				l := NewLoader(testSource)
				if _, errs := l.Load(commits[0](), "c0"); len(errs) > 0 {
					b.Fatal(errs)
				}
				var full, inc time.Duration
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					fsys := commits[(i+1)%2]
					t0 := time.Now()
					if _, errs := LoadSnapshot(fsys(), "c", testSource); len(errs) > 0 {
						b.Fatal(errs)
					}
					t1 := time.Now()
					if _, errs := l.Load(fsys(), "c"); len(errs) > 0 {
						b.Fatal(errs)
					}
					full, inc = full+t1.Sub(t0), inc+time.Since(t1)
				}
				b.StopTimer()
				reused, parsed := l.Reuse()
				b.ReportMetric(float64(full.Milliseconds())/float64(b.N), "full-ms")
				b.ReportMetric(float64(inc.Milliseconds())/float64(b.N), "incremental-ms")
				b.ReportMetric(100*float64(inc)/float64(full), "incremental-%")
				b.ReportMetric(float64(parsed), "parsed-files")
				b.ReportMetric(float64(reused), "reused-files")
			})
		}
	}
}

// blobFS makes, per call, the fs of a commit of files whose blob hashes are
// known up front, as a git tree's are.
func blobFS(files map[string][]byte) func() *repo.MemFS {
	blobs := map[string]repo.Blob{}
	for p, data := range files {
		h, _ := repo.NewMemFS(map[string][]byte{p: data}).Hash(p)
		blobs[p] = repo.Blob{Hash: h, Size: int64(len(data)), Read: func() ([]byte, error) { return append([]byte(nil), data...), nil }}
	}
	return func() *repo.MemFS { return repo.NewBlobFS(blobs) }
}

func copyFiles(m map[string][]byte) map[string][]byte {
	out := make(map[string][]byte, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// BenchmarkZonesHubChurn is BenchmarkZones at 10,000 clusters while the hub
// changes every 100 ms (a spoke Application's health flips), so answers are
// recomputed as they would be on a live hub.
func BenchmarkZonesHubChurn(b *testing.B) {
	atGeneratorGC(b)
	e := env(b, 10000)
	hub := &churnHub{fakeHub: synthHub(10000)}
	srv := benchServer(b, &staticSource{snap: e.snap}, hub)
	done := make(chan struct{})
	defer close(done)
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			case <-t.C:
				hub.flip(fmt.Sprintf("spoke-c%05d", i%10000))
			}
		}
	}()
	benchServe(b, srv, KindZones)
}

// churnHub is a fakeHub whose answers change while it is read.
type churnHub struct {
	mu sync.RWMutex
	*fakeHub
}

func (h *churnHub) flip(app string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	a := h.apps[app]
	if a.Health == HealthHealthy {
		a.Health = "Degraded"
	} else {
		a.Health = HealthHealthy
	}
	h.apps[app] = a
	h.version++
}
func (h *churnHub) Version() uint64 {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.version
}
func (h *churnHub) ClusterSecret(c string) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.secrets[c]
}
func (h *churnHub) Application(n string) (App, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	a, ok := h.apps[n]
	return a, ok
}

// BenchmarkPlace: what a hub change costs the next kind: zones request
// (every zone decided again and the answer encoded; answers are served from
// it until the snapshot or the hub changes again).
func BenchmarkPlace(b *testing.B) {
	for _, n := range scales {
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) {
			atGeneratorGC(b)
			e := env(b, n)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				Place(e.snap, e.hub)
			}
		})
	}
}

// BenchmarkFloorJSON is the floor: encoding/json encoding the same zones answer from
// ready-made parameter maps, with no HTTP, auth, decisions or lookups.
func BenchmarkFloorJSON(b *testing.B) {
	for _, n := range scales {
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) { floorJSON(b, n) })
	}
}

// floorJSON is BenchmarkFloorJSON for one size.
func floorJSON(b *testing.B, n int) {
	e := env(b, n)
	var r Response
	answer, _ := Place(e.snap, e.hub).Answer(Filter{})
	if err := json.Unmarshal(answer, &r); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := json.Marshal(r); err != nil {
			b.Fatal(err)
		}
	}
}
