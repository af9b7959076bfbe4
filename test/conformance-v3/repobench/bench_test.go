//go:build e2e && bench

// Package repobench times the real argocd-repo-server on the e2e hub (TestBenchRepoServer). It
// lives in the Argo CD v3 module because it calls the repo-server through Argo CD's own gRPC
// client: the main module imports no Argo CD.
package repobench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/argoproj/argo-cd/v3/reposerver/apiclient"
	"github.com/argoproj/argo-cd/v3/util/io/files"
	"github.com/argoproj/argo-cd/v3/util/tgzstream"
	utiltls "github.com/argoproj/argo-cd/v3/util/tls"

	"github.com/spokeforge/spokeforge/test/e2e"
)

// TestMain kills the hub's processes after the test, and on SIGINT/SIGTERM, as the e2e suite's does.
func TestMain(m *testing.M) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		<-sig
		e2e.KillAll()
		os.Exit(130)
	}()
	code := m.Run()
	e2e.KillAll()
	os.Exit(code)
}

// TestBenchRepoServer times the real argocd-repo-server generating the example GPU spoke's
// manifests: through the spokeforge CMP sidecar (repo-server → cmp-server → spokeforge render),
// beside a plain directory-of-YAML source with the same objects and, when make bench has built
// them (test/bench/build-tools.sh), helm and kustomize sources with the same objects; and the
// CMP again with spokeforge built with -tags cmponly (render only). It calls
// the repo-server's GenerateManifest gRPC directly with NoCache, so every call regenerates
// (Argo CD caches manifests in Redis per revision), round-robin over the sources.
//
// Skipped unless SPOKEFORGE_E2E_BENCH is set; SPOKEFORGE_E2E_BENCH_ROUNDS (default 20);
// SPOKEFORGE_E2E_BENCH_DISCOVER=1 runs the cmp-server with cmp/plugin.yaml plus a discover
// rule; SPOKEFORGE_E2E_BENCH_OUT=FILE also writes the table to FILE.
//
//	cd test/conformance-v3 && SPOKEFORGE_E2E_BENCH=1 GOTOOLCHAIN=go1.27.3 go test -tags e2e,bench -count=1 -run TestBenchRepoServer -v ./repobench/
func TestBenchRepoServer(t *testing.T) {
	if os.Getenv("SPOKEFORGE_E2E_BENCH") == "" {
		t.Skip("set SPOKEFORGE_E2E_BENCH=1 to run the repo-server benchmark")
	}
	rounds := 20
	if v := os.Getenv("SPOKEFORGE_E2E_BENCH_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SPOKEFORGE_E2E_BENCH_ROUNDS=%q: want a positive integer", v)
		}
		rounds = n
	}
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	opts := e2e.Options{RepoRoot: root}
	if os.Getenv("SPOKEFORGE_E2E_BENCH_DISCOVER") != "" {
		// cmp/plugin.yaml plus a discover rule: Argo CD then calls MatchRepository (the
		// repository streamed to the sidecar once more) before every GenerateManifest.
		dir := t.TempDir()
		b, err := os.ReadFile(filepath.Join(root, "cmp", "plugin.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		cfg := strings.Replace(string(b), "\n  parameters:\n", "\n  discover:\n    fileName: cluster.yaml\n  parameters:\n", 1)
		if cfg == string(b) || strings.Contains(string(b), "\n  discover:") {
			t.Fatal("cannot add a discover rule to cmp/plugin.yaml")
		}
		if err := os.WriteFile(filepath.Join(dir, "plugin.yaml"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		opts.PluginConfigDir = dir
		t.Log("plugin.yaml with a discover rule (fileName: cluster.yaml)")
	}
	h := e2e.StartHub(t, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	files := map[string]string{}
	add := func(repoDir, src string, keep func(string) bool) {
		err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(src, p)
			if keep != nil && !keep(rel) {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			files[repoDir+"/"+filepath.ToSlash(rel)] = string(b)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	add("clusters/gpu-east-1", filepath.Join(root, "examples/gitops/clusters/gpu-east-1"), nil)
	kust := filepath.Join(root, "test/bench/testdata/spoke-kustomize")
	add("plain", kust, func(rel string) bool { return rel != "kustomization.yaml" })
	add("kustomize", kust, nil)
	add("chart", filepath.Join(root, "test/bench/testdata/spoke-chart"), nil)
	repo, err := h.NewGitRepo("bench", files)
	if err != nil {
		t.Fatal(err)
	}
	sha, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}

	// The cmp-server runs spokeforge from its PATH on each call: the harness's build, and a
	// -tags cmponly build of the same code, swapped in (a symlink renamed over the name)
	// before each call of the source that names it.
	full := h.Spokeforge + ".full"
	cmpOnly := h.Spokeforge + ".cmponly"
	if err := os.Rename(h.Spokeforge, full); err != nil {
		t.Fatal(err)
	}
	build := exec.CommandContext(ctx, "go", "build", "-tags", "cmponly", "-o", cmpOnly, ".")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags cmponly: %v\n%s", err, out)
	}
	use := func(bin string) {
		tmp := h.Spokeforge + ".link"
		_ = os.Remove(tmp)
		if err := os.Symlink(bin, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, h.Spokeforge); err != nil {
			t.Fatal(err)
		}
	}
	use(full)

	type source struct {
		name string
		src  v1alpha1.ApplicationSource
		bin  string // the spokeforge binary to put in place first, if any
	}
	plugin := v1alpha1.ApplicationSource{Path: "clusters/gpu-east-1", Plugin: &v1alpha1.ApplicationSourcePlugin{Name: "spokeforge"}}
	sources := []source{
		{"spokeforge CMP", plugin, full},
		{"spokeforge CMP, cmponly build", plugin, cmpOnly},
		{"directory of YAML", v1alpha1.ApplicationSource{Path: "plain", Directory: &v1alpha1.ApplicationSourceDirectory{}}, ""},
	}
	// helm and kustomize sources run the binaries the repo-server finds on its PATH: the
	// ones make bench built, linked into the hub's PATH folder.
	benchBin := filepath.Join(filepath.Dir(h.BinDir), "..", "spokeforge-bench", "bin")
	if d := os.Getenv("SPOKEFORGE_BENCH_BIN"); d != "" {
		benchBin = d
	}
	// Their type is named in the source: left to detection, the repo-server would also ask the
	// CMP's discover rule (MatchRepository, a tarball of the repository to the sidecar) first.
	for _, tool := range []struct {
		bin, name string
		src       v1alpha1.ApplicationSource
	}{
		{"helm", "helm chart", v1alpha1.ApplicationSource{Path: "chart", Helm: &v1alpha1.ApplicationSourceHelm{}}},
		{"kustomize", "kustomize (static files)", v1alpha1.ApplicationSource{Path: "kustomize", Kustomize: &v1alpha1.ApplicationSourceKustomize{}}},
	} {
		p := filepath.Join(benchBin, tool.bin)
		if _, err := os.Stat(p); err != nil {
			t.Logf("%s not in %s (run test/bench/build-tools.sh): no %s source", tool.bin, benchBin, tool.name)
			continue
		}
		if err := os.Symlink(p, filepath.Join(h.PathDir, tool.bin)); err != nil {
			t.Fatal(err)
		}
		sources = append(sources, source{tool.name, tool.src, ""})
	}

	closer, client, err := apiclient.NewRepoServerClientset(h.RepoServerAddr, 120, utiltls.Configuration{DisableTLS: true}).NewRepoServerClient()
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	request := func(s source, noCache bool) *apiclient.ManifestRequest {
		src := s.src
		src.RepoURL = repo.URL
		src.TargetRevision = sha
		return &apiclient.ManifestRequest{
			Repo:               &v1alpha1.Repository{Repo: repo.URL},
			Revision:           sha,
			NoCache:            noCache,
			AppName:            "bench",
			Namespace:          "default",
			ApplicationSource:  &src,
			KubeVersion:        "1.31.0",
			ApiVersions:        []string{"v1", "apps/v1", "external-secrets.io/v1", "cert-manager.io/v1"},
			TrackingMethod:     "annotation",
			ProjectName:        "default",
			ProjectSourceRepos: []string{"*"},
			KustomizeOptions:   &v1alpha1.KustomizeOptions{},
			HelmOptions:        &v1alpha1.HelmOptions{},
			EnabledSourceTypes: map[string]bool{"helm": true, "kustomize": true, "directory": true, "plugin": true},
		}
	}
	generate := func(s source, noCache bool) ([]string, time.Duration, error) {
		if s.bin != "" {
			use(s.bin)
		}
		start := time.Now()
		resp, err := client.GenerateManifest(ctx, request(s, noCache))
		d := time.Since(start)
		if err != nil {
			return nil, d, fmt.Errorf("%s: %w", s.name, err)
		}
		return resp.Manifests, d, nil
	}

	// Warm up (clones the repository into the repo-server) and check every source generates
	// the same objects as the CMP.
	want, _, err := generate(sources[0], true)
	if err != nil {
		t.Fatal(err)
	}
	wantSet := canonical(t, want)
	for _, s := range sources[1:] {
		got, _, err := generate(s, true)
		if err != nil {
			t.Fatal(err)
		}
		if g := canonical(t, got); strings.Join(g, "\n") != strings.Join(wantSet, "\n") {
			t.Fatalf("%s generates %d objects that differ from the spokeforge CMP's %d", s.name, len(g), len(wantSet))
		}
	}
	t.Logf("every source generates the same %d objects", len(wantSet))

	times := map[string][]time.Duration{}
	// Where a CMP call's time goes, from the servers' own logs of each call: the repo-server's
	// and the cmp-server's gRPC times and the cmp-server's timing of the command.
	parts := map[string]map[string][]time.Duration{}
	repoLog, cmpLog := newLogTail(h.LogDir, "argocd-repo-server"), newLogTail(h.LogDir, "argocd-cmp-server")
	for r := 0; r < rounds; r++ {
		for i := range sources {
			s := sources[(i+r)%len(sources)]
			repoLog.skip(t)
			cmpLog.skip(t)
			_, d, err := generate(s, true)
			if err != nil {
				t.Fatal(err)
			}
			times[s.name] = append(times[s.name], d)
			if s.bin == "" {
				continue
			}
			if parts[s.name] == nil {
				parts[s.name] = map[string][]time.Duration{}
			}
			rl, cl := repoLog.read(t), cmpLog.read(t)
			for name, v := range map[string]time.Duration{
				"repo-server": grpcTime(t, rl), "cmp-server": grpcTime(t, cl), "command": commandTime(t, cl),
			} {
				parts[s.name][name] = append(parts[s.name][name], v)
			}
		}
	}
	// One cached call each: what a refresh costs when the revision did not change.
	cached := map[string]time.Duration{}
	for _, s := range sources {
		if _, _, err := generate(s, false); err != nil { // fills the cache
			t.Fatal(err)
		}
		_, d, err := generate(s, false)
		if err != nil {
			t.Fatal(err)
		}
		cached[s.name] = d
	}

	var b strings.Builder
	fmt.Fprintf(&b, "repo-server GenerateManifest (NoCache), %d rounds round-robin, ms; ratio = median / spokeforge CMP median\n\n", rounds)
	b.WriteString("| source | median | p10–p90 | min–max | ratio | cached call |\n|---|---:|---:|---:|---:|---:|\n")
	base := quantileMs(times[sources[0].name], .5)
	for _, s := range sources {
		ts := times[s.name]
		fmt.Fprintf(&b, "| %s | %.1f | %.1f–%.1f | %.1f–%.1f | %.2f× | %.1f |\n", s.name, quantileMs(ts, .5), quantileMs(ts, .1), quantileMs(ts, .9),
			quantileMs(ts, 0), quantileMs(ts, 1), quantileMs(ts, .5)/base, float64(cached[s.name])/float64(time.Millisecond))
	}
	b.WriteString("\nWhere a CMP call's time goes (medians, ms): the call as the client sees it; the repo-server's\n" +
		"GenerateManifest; in it the cmp-server's stream (the repository tarred and gzipped by the repo-server,\n" +
		"streamed, unpacked, the command run, the manifests sent back); in that the command (spokeforge render,\n" +
		"process start to exit, timed by the cmp-server)\n\n")
	b.WriteString("| source | call | repo-server | cmp-server stream | command | repo-server outside the stream | stream outside the command |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range sources {
		p := parts[s.name]
		if p == nil {
			continue
		}
		med := func(ds []time.Duration) float64 { return quantileMs(ds, .5) }
		fmt.Fprintf(&b, "| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |\n", s.name, med(times[s.name]), med(p["repo-server"]), med(p["cmp-server"]),
			med(p["command"]), med(p["repo-server"])-med(p["cmp-server"]), med(p["cmp-server"])-med(p["command"]))
	}
	tarMs, untarMs, size := tarCost(t, files, 20)
	fmt.Fprintf(&b, "\nArgo CD's tarball of this repository without .git (%d files, %.1f KB gzipped), in process with its own\n"+
		"util/tgzstream and util/io/files, median of 20: tar+gzip %.2f ms, untar %.2f ms\n", len(files), float64(size)/1024, tarMs, untarMs)
	t.Log("\n" + b.String())
	if out := os.Getenv("SPOKEFORGE_E2E_BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// canonical returns the manifests (JSON objects) re-encoded with sorted keys, sorted.
func canonical(t *testing.T, manifests []string) []string {
	t.Helper()
	out := make([]string, 0, len(manifests))
	for _, m := range manifests {
		var v any
		if err := json.Unmarshal([]byte(m), &v); err != nil {
			t.Fatalf("manifest is not JSON: %v", err)
		}
		b, _ := json.Marshal(v)
		out = append(out, string(b))
	}
	sort.Strings(out)
	return out
}

func quantileMs(ds []time.Duration, q float64) float64 {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	pos := q * float64(len(s)-1)
	lo := int(pos)
	hi := lo
	if hi+1 < len(s) {
		hi++
	}
	v := float64(s[lo]) + (float64(s[hi])-float64(s[lo]))*(pos-float64(lo))
	return v / float64(time.Millisecond)
}

// logTail reads what a hub process logged since the last skip.
type logTail struct {
	path string
	off  int64
}

func newLogTail(dir, name string) *logTail { return &logTail{path: filepath.Join(dir, name+".log")} }

func (l *logTail) skip(t *testing.T) {
	fi, err := os.Stat(l.path)
	if err != nil {
		t.Fatal(err)
	}
	l.off = fi.Size()
}

func (l *logTail) read(t *testing.T) string {
	f, err := os.Open(l.path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.NewSectionReader(f, l.off, math.MaxInt64-l.off))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var (
	grpcTimeRE    = regexp.MustCompile(`grpc\.method=GenerateManifest\b.*grpc\.time_ms=([0-9.]+)`)
	commandTimeRE = regexp.MustCompile(`(?m)\sduration=([0-9.]+[a-zµ]+)(?:\s|$)`) // a field, not the command's output logged in msg
)

// grpcTime is the server-side time of the GenerateManifest call logged in log.
func grpcTime(t *testing.T, log string) time.Duration {
	m := grpcTimeRE.FindAllStringSubmatch(log, -1)
	if len(m) != 1 {
		t.Fatalf("want one finished GenerateManifest call in the log, got %d:\n%s", len(m), log)
	}
	ms, err := strconv.ParseFloat(m[0][1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.Duration(ms * float64(time.Millisecond))
}

// commandTime is the plugin command's run time the cmp-server logged.
func commandTime(t *testing.T, log string) time.Duration {
	m := commandTimeRE.FindAllStringSubmatch(log, -1)
	if len(m) != 1 {
		t.Fatalf("want one command duration in the cmp-server log, got %d:\n%s", len(m), log)
	}
	d, err := time.ParseDuration(m[0][1])
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// tarCost times Argo CD's own tar+gzip of the repository files (what the repo-server sends
// the CMP, .git excluded) and its untar, in process: medians over n runs, and the size.
func tarCost(t *testing.T, repoFiles map[string]string, n int) (tarMs, untarMs float64, size int64) {
	src := t.TempDir()
	for name, content := range repoFiles {
		p := filepath.Join(src, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var tars, untars []time.Duration
	for i := 0; i < n; i++ {
		start := time.Now()
		f, _, _, err := tgzstream.CompressFiles(src, nil, []string{".git/*"})
		if err != nil {
			t.Fatal(err)
		}
		tars = append(tars, time.Since(start))
		fi, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		size = fi.Size()
		dest := t.TempDir()
		start = time.Now()
		if err := files.Untgz(dest, f, math.MaxInt64, false); err != nil {
			t.Fatal(err)
		}
		untars = append(untars, time.Since(start))
		tgzstream.CloseAndDelete(f)
	}
	return quantileMs(tars, .5), quantileMs(untars, .5), size
}
