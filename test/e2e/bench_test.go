//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/argo-cd/v2/reposerver/apiclient"
)

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
//	SPOKEFORGE_E2E_BENCH=1 go test -tags e2e -count=1 -run TestBenchRepoServer -v ./test/e2e/
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
	var opts Options
	if os.Getenv("SPOKEFORGE_E2E_BENCH_DISCOVER") != "" {
		// cmp/plugin.yaml plus a discover rule: Argo CD then calls MatchRepository (the
		// repository streamed to the sidecar once more) before every GenerateManifest.
		dir := t.TempDir()
		b, err := os.ReadFile(filepath.Join("..", "..", "cmp", "plugin.yaml"))
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
	h := StartHub(t, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	root := filepath.Join("..", "..")
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

	closer, client, err := apiclient.NewRepoServerClientset(h.RepoServerAddr, 120, apiclient.TLSConfiguration{DisableTLS: true}).NewRepoServerClient()
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
	for r := 0; r < rounds; r++ {
		for i := range sources {
			s := sources[(i+r)%len(sources)]
			_, d, err := generate(s, true)
			if err != nil {
				t.Fatal(err)
			}
			times[s.name] = append(times[s.name], d)
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
