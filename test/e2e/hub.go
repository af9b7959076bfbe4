//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Versions and module paths the harness builds on.
const (
	CertManagerModule  = "github.com/cert-manager/cert-manager@v1.19.4"
	ExternalSecretsMod = "github.com/external-secrets/external-secrets@v0.16.2"
	NFDModule          = "sigs.k8s.io/node-feature-discovery@v0.17.3"
	// ClusterInventoryModule holds the ClusterProfile CRD (multicluster.x-k8s.io/v1alpha1).
	ClusterInventoryModule = "sigs.k8s.io/cluster-inventory-api@v0.1.0"
	ArgoCDNamespace        = "argocd"
	SpokeClusterName       = "spoke"
	installHint            = "run hack/e2e/install.sh"
	// HealthPatch is the argocd-cm patch with spokeforge's Lua health checks, repo-relative.
	HealthPatch         = "manifests/argocd-cm/argocd-cm-health-patch.yaml"
	argoCDAuthToken     = "x" // argocd-server runs with --disable-auth: any token goes
	defaultStartTimeout = 3 * time.Minute
	// reconciliationTimeout is argocd-cm timeout.reconciliation (default 3m): how often
	// Argo CD looks for new commits without a webhook.
	reconciliationTimeout = "10s"
)

// DefaultArgoCDVersion is the Argo CD release a hub runs when ARGOCD_VERSION is unset.
const DefaultArgoCDVersion = "v3.6.2"

// argoCDModules maps each Argo CD release the suite runs on (ARGOCD_VERSION) to its Go
// module; hack/e2e/install.sh builds each into the binary cache as argocd-<version>.
var argoCDModules = map[string]string{
	"v3.6.2": "github.com/argoproj/argo-cd/v3@v3.6.2",
	"v3.4.7": "github.com/argoproj/argo-cd/v3@v3.4.7",
}

// downloadToolchain is the Go that downloads modules: Argo CD v3.6.2 needs Go 1.27, and
// go mod download refuses a module that names a newer Go than its own.
const downloadToolchain = "go1.27.3"

// ArgoCDVersion is the Argo CD release the hubs of this test process run: $ARGOCD_VERSION,
// default DefaultArgoCDVersion.
func ArgoCDVersion() (string, error) {
	v := os.Getenv("ARGOCD_VERSION")
	if v == "" {
		return DefaultArgoCDVersion, nil
	}
	if _, ok := argoCDModules[v]; !ok {
		known := make([]string, 0, len(argoCDModules))
		for k := range argoCDModules {
			known = append(known, k)
		}
		sort.Strings(known)
		return "", fmt.Errorf("ARGOCD_VERSION=%s: the suite runs on %s", v, strings.Join(known, ", "))
	}
	return v, nil
}

// argoCDAtLeast reports whether release v ("v3.6.2") is major.minor or newer.
func argoCDAtLeast(v string, major, minor int) bool {
	var ma, mi int
	if _, err := fmt.Sscanf(v, "v%d.%d", &ma, &mi); err != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

// Options configure a Hub.
type Options struct {
	// BinDir holds kube-apiserver and argocd; default $SPOKEFORGE_E2E_BIN or
	// "$(go env GOCACHE)/../spokeforge-e2e/bin".
	BinDir string
	// RepoRoot is the spokeforge checkout; default the folder two levels above the test.
	RepoRoot string
	// PluginConfigDir holds the CMP plugin.yaml read by argocd-cmp-server; default
	// RepoRoot/cmp when RepoRoot/cmp/plugin.yaml exists, else a placeholder plugin.
	PluginConfigDir string
	// SpokeforgeOptional: when building the spokeforge binary fails, log and go on without it
	// (the cmp-server then has no spokeforge on its PATH).
	SpokeforgeOptional bool
	// SkipSpokeCRDs skips the cert-manager, External Secrets and NFD CRDs on the spoke.
	SkipSpokeCRDs bool
	// NoHealthChecks leaves spokeforge's Lua health checks out of argocd-cm: Argo CD's own
	// apply (an Application, for one, is then Healthy as soon as it exists).
	NoHealthChecks bool
	// CountPluginBytes puts a counting proxy between repo-server and cmp-server (PluginBytes).
	CountPluginBytes bool
	// AppResync is the controller's --app-resync period: how often it compares every app
	// with git, standing in for a git webhook; default 10s (Argo CD's default is 3m).
	AppResync time.Duration
	// RepoErrorGrace is the controller's --repo-error-grace-period-seconds: how long after
	// the last good comparison a failing render is ignored (the app keeps its last state);
	// default 15s (Argo CD's default is 3m).
	RepoErrorGrace time.Duration
}

// Hub is a running Argo CD hub with a registered spoke cluster.
type Hub struct {
	// Dir is the work folder; LogDir (Dir/logs) holds one log per process.
	Dir    string
	LogDir string
	BinDir string // the binary cache
	// ArgoCDVersion is the Argo CD release running (ArgoCDVersion()).
	ArgoCDVersion string
	// argoCDDir is that release's Go module in the module cache: its scripts, CRDs and
	// install manifests.
	argoCDDir string
	// PathDir is put first on the PATH of the Argo CD processes: the argocd-* symlinks and
	// spokeforge.
	PathDir string

	Hub   *Cluster // the API server Argo CD runs against
	Spoke *Cluster // the API server registered as the Argo CD cluster "spoke"

	EtcdURL        string
	RedisAddr      string
	RepoServerAddr string
	ServerAddr     string // argocd-server (plaintext, auth disabled)
	PluginSockDir  string // ARGOCD_PLUGINSOCKFILEPATH of repo-server and cmp-server
	Spokeforge     string // path of the spokeforge binary, "" when not built
	FakeAWS        string // path of the test/e2e/fakeaws binary, built with spokeforge

	Processes map[string]*Process

	// PluginBytes counts the bytes the repo-server sent the cmp-server (Options.CountPluginBytes):
	// the tarballs and their metadata, in gRPC frames.
	PluginBytes atomic.Int64

	opts Options
	// sidecarEnv: the spokeforge container's env in manifests/cmp, read once at start.
	sidecarEnv []string
	// hubESO answers for the hub's ExternalSecrets once a test registers a spoke.
	hubESO     *StandInControllers
	hubESOErr  error
	hubESOOnce sync.Once
	mu         sync.Mutex
	procs      []*Process
	stoppers   []func() // run first by Stop, for what runs in this process (a fake AWS account)
	stopOnce   sync.Once
	keep       bool
}

// onStop runs f when the hub stops, before its processes end.
func (h *Hub) onStop(f func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stoppers = append(h.stoppers, f)
}

// DefaultBinDir is the binary cache used by hack/e2e/install.sh.
func DefaultBinDir() (string, error) {
	if d := os.Getenv("SPOKEFORGE_E2E_BIN"); d != "" {
		return filepath.Abs(d)
	}
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOCACHE: %w", err)
	}
	return filepath.Clean(filepath.Join(strings.TrimSpace(string(out)), "..", "spokeforge-e2e", "bin")), nil
}

// ModuleDir returns the folder of MODULE@VERSION in the module cache (go mod download -json).
func ModuleDir(modVersion string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", modVersion)
	cmd.Dir = os.TempDir() // outside any module: go.mod and go.sum stay untouched
	// Argo CD v3.6's go.mod names Go 1.27: this go command only reads files from the zip.
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN="+downloadToolchain)
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	_ = json.Unmarshal(out, &info)
	if err != nil || info.Dir == "" {
		return "", fmt.Errorf("go mod download -json %s: %v %s", modVersion, err, info.Error)
	}
	return info.Dir, nil
}

// StartHub starts a hub for t and stops it at the end of t. On failure it prints the log
// folder and the tail of every log.
func StartHub(t testing.TB, opts Options) *Hub {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	started := time.Now()
	h, err := Start(ctx, opts)
	if h != nil {
		t.Cleanup(func() {
			if t.Failed() {
				h.keep = true
				t.Logf("e2e logs in %s\n%s", h.LogDir, logSummary(h.LogDir, 25))
			}
			h.Stop()
		})
	}
	if err != nil {
		t.Fatalf("start hub: %v", err)
	}
	t.Logf("hub up in %s (Argo CD %s): hub %s, spoke %s, argocd-server %s, logs %s", time.Since(started).Round(time.Second), h.ArgoCDVersion, h.Hub.URL, h.Spoke.URL, h.ServerAddr, h.LogDir)
	return h
}

// Start starts etcd, the two API servers, Redis and Argo CD. On error the returned Hub (if not
// nil) still needs Stop.
func Start(ctx context.Context, opts Options) (*Hub, error) {
	for _, dep := range []struct{ bin, pkg string }{{"etcd", "etcd-server"}, {"redis-server", "redis-server"}, {"git", "git"}} {
		if _, err := exec.LookPath(dep.bin); err != nil {
			return nil, fmt.Errorf("%s not found on PATH: Debian package %s is missing; %s", dep.bin, dep.pkg, installHint)
		}
	}
	if opts.BinDir == "" {
		d, err := DefaultBinDir()
		if err != nil {
			return nil, err
		}
		opts.BinDir = d
	}
	version, err := ArgoCDVersion()
	if err != nil {
		return nil, err
	}
	for _, b := range []string{"kube-apiserver", "argocd-" + version} {
		if _, err := os.Stat(filepath.Join(opts.BinDir, b)); err != nil {
			return nil, fmt.Errorf("%s missing in %s: %s", b, opts.BinDir, installHint)
		}
	}
	if opts.RepoRoot == "" {
		d, err := filepath.Abs(filepath.Join("..", ".."))
		if err != nil {
			return nil, err
		}
		opts.RepoRoot = d
	}
	if opts.AppResync == 0 {
		opts.AppResync = 10 * time.Second
	}
	if opts.RepoErrorGrace == 0 {
		opts.RepoErrorGrace = 15 * time.Second
	}
	dir, err := os.MkdirTemp("", "spokeforge-e2e-")
	if err != nil {
		return nil, err
	}
	h := &Hub{
		Dir:           dir,
		LogDir:        filepath.Join(dir, "logs"),
		BinDir:        opts.BinDir,
		ArgoCDVersion: version,
		PathDir:       filepath.Join(dir, "bin"),
		Processes:     map[string]*Process{},
		opts:          opts,
		keep:          os.Getenv("SPOKEFORGE_E2E_KEEP") != "",
	}
	registry.Lock()
	registry.dirs[dir] = struct{}{}
	registry.Unlock()
	for _, d := range []string{h.LogDir, h.PathDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return h, err
		}
	}
	if err := h.start(ctx); err != nil {
		return h, err
	}
	return h, nil
}

func (h *Hub) bin(name string) string { return filepath.Join(h.BinDir, name) }

func (h *Hub) run(spec procSpec) (*Process, error) {
	p, err := start(h.LogDir, spec)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.procs = append(h.procs, p)
	h.Processes[p.Name] = p
	h.mu.Unlock()
	return p, nil
}

// Kill ends the component name at once (SIGKILL to its process group), as a crash would.
func (h *Hub) Kill(name string) error {
	h.mu.Lock()
	p := h.Processes[name]
	h.mu.Unlock()
	if p == nil {
		return fmt.Errorf("no component %q", name)
	}
	p.stop(0)
	return nil
}

// Restart starts the component name again with the same command line and environment (after
// Kill, or ending it first) and waits until ready answers.
func (h *Hub) Restart(ctx context.Context, name string, ready func(context.Context) error) error {
	h.mu.Lock()
	old := h.Processes[name]
	h.mu.Unlock()
	if old == nil {
		return fmt.Errorf("no component %q", name)
	}
	old.stop(5 * time.Second)
	p, err := h.run(old.spec)
	if err != nil {
		return err
	}
	return waitFor(ctx, p, "ready after restart", defaultStartTimeout, ready)
}

// Stop kills every process of the hub (process groups; etcd last) and removes the
// work folder unless it is kept (failure or SPOKEFORGE_E2E_KEEP).
func (h *Hub) Stop() {
	h.stopOnce.Do(func() {
		h.mu.Lock()
		procs, stoppers := h.procs, h.stoppers
		h.procs, h.stoppers = nil, nil
		h.mu.Unlock()
		for _, f := range stoppers {
			f()
		}
		// Everything but etcd in parallel, then etcd (the API servers need it to shut down).
		stopAll := func(ps []*Process) {
			var wg sync.WaitGroup
			for _, p := range ps {
				wg.Add(1)
				go func(p *Process) {
					defer wg.Done()
					p.stop(5 * time.Second)
					registry.Lock()
					delete(registry.procs, p)
					registry.Unlock()
				}(p)
			}
			wg.Wait()
		}
		var first, last []*Process
		for _, p := range procs {
			if p.Name == "etcd" {
				last = append(last, p)
			} else {
				first = append(first, p)
			}
		}
		stopAll(first)
		stopAll(last)
		registry.Lock()
		delete(registry.dirs, h.Dir)
		registry.Unlock()
		if !h.keep {
			_ = os.RemoveAll(h.Dir)
		}
	})
}

func (h *Hub) start(ctx context.Context) error {
	portNames := []string{"etcd", "etcd peer", "kube-apiserver-hub", "kube-apiserver-spoke", "redis",
		"argocd-repo-server", "argocd-repo-server metrics", "argocd-application-controller metrics",
		"argocd-server", "argocd-server metrics", "argocd-applicationset-controller metrics",
		"argocd-applicationset-controller probe", "argocd-applicationset-controller webhook"}
	ports, err := hubPorts(portNames, h.LogDir)
	if err != nil {
		return err
	}
	etcdPort, etcdPeer, hubPort, spokePort, redisPort := ports[0], ports[1], ports[2], ports[3], ports[4]
	repoPort, repoMetrics, ctrlMetrics, serverPort, serverMetrics := ports[5], ports[6], ports[7], ports[8], ports[9]
	appsetMetrics, appsetProbe, appsetWebhook := ports[10], ports[11], ports[12]

	// Links and binaries on the PATH of the Argo CD processes.
	for _, name := range []string{"argocd", "argocd-server", "argocd-repo-server", "argocd-application-controller",
		"argocd-applicationset-controller", "argocd-cmp-server", "argocd-git-ask-pass", "argocd-k8s-auth"} {
		if err := os.Symlink(h.bin("argocd-"+h.ArgoCDVersion), filepath.Join(h.PathDir, name)); err != nil {
			return err
		}
	}
	// The scripts the release's image puts in /usr/local/bin (its Dockerfile): from v3.5 the
	// repo-server runs git-verify-wrapper.sh on every revision, signatures configured or not.
	argo, err := ModuleDir(argoCDModules[h.ArgoCDVersion])
	if err != nil {
		return err
	}
	h.argoCDDir = argo
	for _, name := range []string{"git-verify-wrapper.sh", "gpg-wrapper.sh"} {
		script, err := os.ReadFile(filepath.Join(h.argoCDDir, "hack", name))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(h.PathDir, name), script, 0o755); err != nil {
			return err
		}
	}
	buildDone := make(chan error, 1)
	go func() { buildDone <- h.linkSpokeforge() }()

	// etcd
	h.EtcdURL = fmt.Sprintf("http://127.0.0.1:%d", etcdPort)
	peer := fmt.Sprintf("http://127.0.0.1:%d", etcdPeer)
	etcd, err := h.run(procSpec{name: "etcd", path: "etcd", args: []string{
		"--name=e2e", "--data-dir=" + filepath.Join(h.Dir, "etcd"),
		"--listen-client-urls=" + h.EtcdURL, "--advertise-client-urls=" + h.EtcdURL,
		"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=e2e=" + peer, "--initial-cluster-state=new",
		"--listen-metrics-urls=", "--log-level=warn", "--logger=zap",
		"--quota-backend-bytes=4294967296",
	}})
	if err != nil {
		return err
	}
	if err := waitFor(ctx, etcd, "/health", time.Minute, httpOK(h.EtcdURL+"/health")); err != nil {
		return err
	}

	// Redis: no persistence, loopback only.
	h.RedisAddr = fmt.Sprintf("127.0.0.1:%d", redisPort)
	redis, err := h.run(procSpec{name: "redis", path: "redis-server", args: []string{
		"--port", fmt.Sprint(redisPort), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", h.Dir, "--daemonize", "no",
	}})
	if err != nil {
		return err
	}

	// The two API servers, in parallel (each takes ~10-20s to become ready).
	h.Hub = &Cluster{Name: "hub", dir: filepath.Join(h.Dir, "hub"), port: hubPort, etcdURL: h.EtcdURL, etcdPrefx: "/hub"}
	h.Spoke = &Cluster{Name: "spoke", dir: filepath.Join(h.Dir, "spoke"), port: spokePort, etcdURL: h.EtcdURL, etcdPrefx: "/spoke"}
	errs := make(chan error, 2)
	for _, c := range []*Cluster{h.Hub, h.Spoke} {
		go func(c *Cluster) { errs <- h.startAPIServer(ctx, c) }(c)
	}
	if err := errors.Join(<-errs, <-errs); err != nil {
		return err
	}
	if err := waitFor(ctx, redis, "PING", 30*time.Second, redisPing(h.RedisAddr)); err != nil {
		return err
	}

	// Spoke CRDs in the background while the hub gets Argo CD.
	spokeDone := make(chan error, 1)
	go func() { spokeDone <- h.setupSpoke(ctx, h.Spoke) }()
	if err := h.setupHub(ctx); err != nil {
		return err
	}
	if err := <-buildDone; err != nil {
		return err
	}

	// Argo CD components.
	h.PluginSockDir = filepath.Join(h.Dir, "plugins")
	if err := os.MkdirAll(h.PluginSockDir, 0o755); err != nil {
		return err
	}
	home := filepath.Join(h.Dir, "home")
	tmp := filepath.Join(h.Dir, "tmp")
	for _, d := range []string{home, tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	common := []string{
		"KUBECONFIG=" + h.Hub.Kubeconfig,
		"PATH=" + h.PathDir + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + home,
		"TMPDIR=" + tmp,
		"ARGOCD_GPG_ENABLED=false",
		// Out of a pod there is no in-cluster config: Argo CD then reaches
		// https://kubernetes.default.svc through KUBECONFIG (the hub).
		"ARGOCD_FAKE_IN_CLUSTER=true",
		"ARGOCD_PLUGINSOCKFILEPATH=" + h.PluginSockDir,
		"ARGOCD_LOG_FORMAT_ENABLE_FULL_TIMESTAMP=true",
		// As Argo CD's install sets it from argocd-cm timeout.reconciliation: the repo-server
		// caches a branch's resolved revision for this long.
		"ARGOCD_RECONCILIATION_TIMEOUT=" + reconciliationTimeout,
	}
	link := func(name string) string { return filepath.Join(h.PathDir, name) }

	cmpDir, err := h.pluginConfigDir()
	if err != nil {
		return err
	}
	cmpWork := filepath.Join(h.Dir, "cmp-work")
	if err := os.MkdirAll(cmpWork, 0o755); err != nil {
		return err
	}
	// With CountPluginBytes the cmp-server listens in a folder of its own and a counting proxy
	// takes its socket's name where the repo-server looks.
	cmpSockDir := h.PluginSockDir
	if h.opts.CountPluginBytes {
		cmpSockDir = filepath.Join(h.Dir, "plugins-behind-proxy")
		if err := os.MkdirAll(cmpSockDir, 0o755); err != nil {
			return err
		}
	}
	if h.sidecarEnv, err = sidecarEnv(h.opts.RepoRoot); err != nil {
		return err
	}
	cmpEnv := append(append(slices.Clone(common), h.sidecarEnv...), "ARGOCD_CMP_WORKDIR="+cmpWork, "ARGOCD_PLUGINSOCKFILEPATH="+cmpSockDir)
	cmp, err := h.run(procSpec{name: "argocd-cmp-server", path: link("argocd-cmp-server"),
		args: []string{"--config-dir-path", cmpDir, "--loglevel", "debug"},
		env:  cmpEnv, dir: cmpWork})
	if err != nil {
		return err
	}
	var cmpSocks []string
	if err := waitFor(ctx, cmp, "plugin socket in "+cmpSockDir, time.Minute, func(context.Context) error {
		cmpSocks, _ = filepath.Glob(filepath.Join(cmpSockDir, "*.sock"))
		if len(cmpSocks) == 0 {
			return errors.New("no *.sock yet")
		}
		return nil
	}); err != nil {
		return err
	}
	if h.opts.CountPluginBytes {
		for _, sock := range cmpSocks {
			stop, err := countingProxy(filepath.Join(h.PluginSockDir, filepath.Base(sock)), sock, &h.PluginBytes)
			if err != nil {
				return err
			}
			h.onStop(stop)
		}
	}

	h.RepoServerAddr = fmt.Sprintf("127.0.0.1:%d", repoPort)
	repoArgs := []string{
		"--address", "127.0.0.1", "--port", fmt.Sprint(repoPort),
		"--metrics-address", "127.0.0.1", "--metrics-port", fmt.Sprint(repoMetrics),
		"--disable-tls", "--redis", h.RedisAddr, "--loglevel", "debug",
	}
	if argoCDAtLeast(h.ArgoCDVersion, 3, 5) {
		// v3.5 added mTLS to the repo-server, with a client CA path set by default, which
		// --disable-tls refuses: plaintext on loopback, as before, needs it empty.
		repoArgs = append(repoArgs, "--client-ca-path=")
	}
	// The plugin settings manifests/cmp installs into argocd-cmd-params-cm, as Argo CD's
	// repo-server Deployment maps them to its environment.
	params, err := repoServerPluginParams(h.opts.RepoRoot)
	if err != nil {
		return err
	}
	repo, err := h.run(procSpec{name: "argocd-repo-server", path: link("argocd-repo-server"), args: repoArgs,
		env: append(common, params...)})
	if err != nil {
		return err
	}

	ctrl, err := h.run(procSpec{name: "argocd-application-controller", path: link("argocd-application-controller"), args: []string{
		"--namespace", ArgoCDNamespace, "--kubeconfig", h.Hub.Kubeconfig,
		"--repo-server", h.RepoServerAddr, "--repo-server-plaintext",
		"--redis", h.RedisAddr, "--metrics-port", fmt.Sprint(ctrlMetrics),
		"--app-resync", fmt.Sprint(int(h.opts.AppResync.Seconds())),
		"--repo-error-grace-period-seconds", fmt.Sprint(int(h.opts.RepoErrorGrace.Seconds())),
		"--status-processors", "5", "--operation-processors", "5", "--loglevel", "debug",
	}, env: common})
	if err != nil {
		return err
	}

	h.ServerAddr = fmt.Sprintf("127.0.0.1:%d", serverPort)
	server, err := h.run(procSpec{name: "argocd-server", path: link("argocd-server"), args: []string{
		"--namespace", ArgoCDNamespace, "--kubeconfig", h.Hub.Kubeconfig,
		"--insecure", "--disable-auth",
		"--address", "127.0.0.1", "--port", fmt.Sprint(serverPort),
		"--metrics-address", "127.0.0.1", "--metrics-port", fmt.Sprint(serverMetrics),
		"--repo-server", h.RepoServerAddr, "--repo-server-plaintext",
		"--redis", h.RedisAddr, "--dex-server", "", "--staticassets", filepath.Join(h.Dir, "static"),
		"--loglevel", "debug",
	}, env: common})
	if err != nil {
		return err
	}

	appset, err := h.run(procSpec{name: "argocd-applicationset-controller", path: link("argocd-applicationset-controller"), args: []string{
		"--namespace", ArgoCDNamespace, "--kubeconfig", h.Hub.Kubeconfig,
		"--argocd-repo-server", h.RepoServerAddr, "--repo-server-plaintext",
		"--metrics-addr", fmt.Sprintf("127.0.0.1:%d", appsetMetrics),
		"--probe-addr", fmt.Sprintf("127.0.0.1:%d", appsetProbe),
		"--webhook-addr", fmt.Sprintf("127.0.0.1:%d", appsetWebhook),
		"--loglevel", "debug",
	}, env: common})
	if err != nil {
		return err
	}

	if err := waitFor(ctx, repo, "gRPC port "+h.RepoServerAddr, defaultStartTimeout, tcpCheck(h.RepoServerAddr)); err != nil {
		return err
	}
	if err := waitFor(ctx, ctrl, "/healthz on metrics port", defaultStartTimeout, httpOK(fmt.Sprintf("http://127.0.0.1:%d/healthz", ctrlMetrics))); err != nil {
		return err
	}
	if err := waitFor(ctx, server, "/healthz", defaultStartTimeout, httpOK("http://"+h.ServerAddr+"/healthz?full=true")); err != nil {
		return err
	}
	// The applicationset-controller registers no health checks: its probe port answers 404.
	if err := waitFor(ctx, appset, "/metrics", defaultStartTimeout, httpOK(fmt.Sprintf("http://127.0.0.1:%d/metrics", appsetMetrics))); err != nil {
		return err
	}
	if err := <-spokeDone; err != nil {
		return err
	}
	// The spoke, as Argo CD sees it: the cluster API answers once the controller connected.
	return h.waitClusterKnown(ctx)
}

// linkSpokeforge puts the spokeforge and fakeaws binaries into PathDir when RepoRoot/main.go
// exists: hard links to the build this process made of RepoRoot (sharedBuild), so a run
// that starts two dozen hubs builds them once instead of linking the cgo binary per hub.
func (h *Hub) linkSpokeforge() error {
	if _, err := os.Stat(filepath.Join(h.opts.RepoRoot, "main.go")); err != nil {
		return nil
	}
	b := sharedBuild(h.opts.RepoRoot)
	log := filepath.Join(h.LogDir, "build-spokeforge.log")
	_ = os.WriteFile(log, b.out, 0o644)
	if b.err != nil {
		if h.opts.SpokeforgeOptional {
			fmt.Fprintf(os.Stderr, "e2e: building spokeforge failed (going on without it): %v; log: %s\n", b.err, log)
			return nil
		}
		return fmt.Errorf("go build spokeforge in %s: %v; log: %s\n%s", h.opts.RepoRoot, b.err, log, b.out)
	}
	out := filepath.Join(h.PathDir, "spokeforge")
	fake := filepath.Join(h.PathDir, "fakeaws")
	for dst, src := range map[string]string{out: b.spokeforge, fake: b.fakeAWS} {
		if err := linkOrCopy(src, dst); err != nil {
			return err
		}
	}
	h.Spokeforge, h.FakeAWS = out, fake
	return nil
}

// builds holds this process's one build per repository root.
var builds = struct {
	sync.Mutex
	m map[string]*repoBuild
}{m: map[string]*repoBuild{}}

// repoBuild is a build of spokeforge and fakeaws, made once by the first hub that asks.
type repoBuild struct {
	once                sync.Once
	spokeforge, fakeAWS string
	out                 []byte
	err                 error
}

// sharedBuild builds RepoRoot's spokeforge and fakeaws into a folder that KillAll removes,
// once per process; later callers wait for that build. It runs outside any one hub's
// context, so a test that ends early cannot fail the build for the others.
func sharedBuild(root string) *repoBuild {
	builds.Lock()
	b, ok := builds.m[root]
	if !ok {
		b = &repoBuild{}
		builds.m[root] = b
	}
	builds.Unlock()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "spokeforge-e2e-build-")
		if err != nil {
			b.err = err
			return
		}
		registry.Lock()
		registry.dirs[dir] = struct{}{}
		registry.Unlock()
		b.spokeforge, b.fakeAWS = filepath.Join(dir, "spokeforge"), filepath.Join(dir, "fakeaws")
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "sh", "-c", `go build -o "$1" . && go build -o "$2" ./test/e2e/fakeaws`, "build", b.spokeforge, b.fakeAWS)
		cmd.Dir = root
		b.out, b.err = cmd.CombinedOutput()
	})
	return b
}

// linkOrCopy makes dst a hard link to src, or a copy where links cannot be made.
func linkOrCopy(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o755)
}

// pluginConfigDir returns the folder holding the plugin.yaml of the cmp-server.
func (h *Hub) pluginConfigDir() (string, error) {
	if h.opts.PluginConfigDir != "" {
		return h.opts.PluginConfigDir, nil
	}
	d := filepath.Join(h.opts.RepoRoot, "cmp")
	if _, err := os.Stat(filepath.Join(d, "plugin.yaml")); err == nil {
		return d, nil
	}
	d = filepath.Join(h.Dir, "cmp-config")
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", err
	}
	placeholder := `apiVersion: argoproj.io/v1alpha1
kind: ConfigManagementPlugin
metadata:
  name: placeholder
spec:
  generate:
    command: [sh, -c, "echo '{}'"]
  discover:
    fileName: never-there.yaml
`
	return d, os.WriteFile(filepath.Join(d, "plugin.yaml"), []byte(placeholder), 0o644)
}

// setupHub installs what Argo CD needs on the hub API server: its CRDs, the argocd namespace,
// argocd-cm, argocd-rbac-cm, argocd-secret, the default AppProject and the spoke's cluster
// Secret.
func (h *Hub) setupHub(ctx context.Context) error {
	argo := h.argoCDDir
	crds, _ := filepath.Glob(filepath.Join(argo, "manifests", "crds", "*-crd.yaml"))
	if len(crds) == 0 {
		return fmt.Errorf("no Argo CD CRDs in %s/manifests/crds", argo)
	}
	if err := h.Hub.ApplyFiles(ctx, crds...); err != nil {
		return err
	}
	if err := h.Hub.ensureNamespace(ctx, ArgoCDNamespace); err != nil {
		return err
	}
	cfg, err := h.Spoke.argoCDConfig()
	if err != nil {
		return err
	}
	// argocd-cm as the release's install manifest ships it (v3 ships defaults there:
	// ignoreResourceUpdates on /status, resource.exclusions), plus the suite's settings.
	cm, err := installedArgoCDConfigMap(argo)
	if err != nil {
		return err
	}
	cm["timeout.reconciliation"] = reconciliationTimeout
	data := map[string]any{}
	for k, v := range cm {
		data[k] = v
	}
	if _, err := h.Hub.ApplyObjects(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "argocd-cm", "namespace": ArgoCDNamespace,
			"labels": map[string]any{"app.kubernetes.io/name": "argocd-cm", "app.kubernetes.io/part-of": "argocd"}},
		"data": data,
	}}); err != nil {
		return err
	}
	_, err = h.Hub.Apply(ctx, fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: argocd-rbac-cm
  namespace: %[1]s
  labels: {app.kubernetes.io/name: argocd-rbac-cm, app.kubernetes.io/part-of: argocd}
data:
  policy.default: role:admin
---
apiVersion: v1
kind: Secret
metadata:
  name: argocd-secret
  namespace: %[1]s
  labels: {app.kubernetes.io/name: argocd-secret, app.kubernetes.io/part-of: argocd}
stringData:
  server.secretkey: %[2]s
---
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata:
  name: default
  namespace: %[1]s
spec:
  sourceRepos: ['*']
  destinations: [{server: '*', namespace: '*'}]
  clusterResourceWhitelist: [{group: '*', kind: '*'}]
---
apiVersion: v1
kind: Secret
metadata:
  name: %[3]s
  namespace: %[1]s
  labels: {argocd.argoproj.io/secret-type: cluster}
stringData:
  name: %[3]s
  server: %[4]s
  config: '%[5]s'
`, ArgoCDNamespace, randomToken(), SpokeClusterName, h.Spoke.URL, cfg))
	if err != nil {
		return err
	}
	// spokeforge's Lua health checks, as an install adds them (manifests/argocd-cm).
	if h.opts.NoHealthChecks {
		return nil
	}
	patch, err := os.ReadFile(filepath.Join(h.opts.RepoRoot, filepath.FromSlash(HealthPatch)))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return h.Hub.ApplyAs(ctx, "spokeforge-health", string(patch))
}

// installedArgoCDConfigMap returns the data of argocd-cm in the install manifests of the Argo
// CD module in dir (manifests/base/config/argocd-cm.yaml).
func installedArgoCDConfigMap(dir string) (map[string]string, error) {
	path := filepath.Join(dir, "manifests", "base", "config", "argocd-cm.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(b, &cm); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	return cm.Data, nil
}

// setupSpoke installs the CRDs of cert-manager, External Secrets and NFD on the spoke.
func (h *Hub) setupSpoke(ctx context.Context, c *Cluster) error {
	if h.opts.SkipSpokeCRDs {
		return nil
	}
	var files []string
	for _, src := range []struct{ mod, glob string }{
		{CertManagerModule, "deploy/crds/*.yaml"},
		{ExternalSecretsMod, "deploy/crds/bundle.yaml"},
		{NFDModule, "deployment/base/nfd-crds/nfd-api-crds.yaml"},
	} {
		d, err := ModuleDir(src.mod)
		if err != nil {
			return err
		}
		m, _ := filepath.Glob(filepath.Join(d, src.glob))
		if len(m) == 0 {
			return fmt.Errorf("spoke CRDs: nothing matches %s in %s", src.glob, d)
		}
		files = append(files, m...)
	}
	if err := c.ApplyFiles(ctx, files...); err != nil {
		return fmt.Errorf("spoke CRDs: %w", err)
	}
	return nil
}

// StartCluster starts one more spoke API server, name, beside the hub's (its own etcd prefix,
// the spoke CRDs installed), for a test or the demo that onboards a second cluster. Argo CD does
// not know it until a cluster Secret names its URL; it stops with the hub.
func (h *Hub) StartCluster(ctx context.Context, name string) (*Cluster, error) {
	if name == "" || name == h.Hub.Name || name == h.Spoke.Name {
		return nil, fmt.Errorf("cluster name %q is taken", name)
	}
	ports, err := hubPorts([]string{"kube-apiserver-" + name}, h.LogDir)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Name: name, dir: filepath.Join(h.Dir, name), port: ports[0], etcdURL: h.EtcdURL, etcdPrefx: "/" + name}
	if err := h.startAPIServer(ctx, c); err != nil {
		return nil, err
	}
	return c, h.setupSpoke(ctx, c)
}

// scoped is name for the hub's own spoke, and name-CLUSTER for any other: the processes and files
// of a second spoke's controllers stand beside the first one's.
func (h *Hub) scoped(c *Cluster, name string) string {
	if c == h.Spoke {
		return name
	}
	return name + "-" + c.Name
}

// waitClusterKnown waits until argocd-server lists the spoke cluster.
func (h *Hub) waitClusterKnown(ctx context.Context) error {
	return waitFor(ctx, h.Processes["argocd-server"], "cluster "+SpokeClusterName+" listed by argocd cluster list", time.Minute, func(ctx context.Context) error {
		out, err := h.ArgoCD(ctx, "cluster", "list", "-o", "server")
		if err != nil {
			return err
		}
		if !strings.Contains(out, h.Spoke.URL) {
			return fmt.Errorf("not listed: %s", out)
		}
		return nil
	})
}

// ArgoCD runs the real argocd CLI against argocd-server (plaintext, --auth-token x) and
// returns its combined output. Every call is appended to logs/argocd-cli.log.
func (h *Hub) ArgoCD(ctx context.Context, args ...string) (string, error) {
	full := append(append([]string{}, args...),
		"--server", h.ServerAddr, "--plaintext", "--auth-token", argoCDAuthToken,
		"--config", filepath.Join(h.Dir, "argocd-cli-config"))
	cmd := exec.CommandContext(ctx, filepath.Join(h.PathDir, "argocd"), full...)
	cmd.Env = append(os.Environ(), "HOME="+filepath.Join(h.Dir, "home"), "KUBECONFIG="+h.Hub.Kubeconfig)
	out, err := cmd.CombinedOutput()
	if f, ferr := os.OpenFile(filepath.Join(h.LogDir, "argocd-cli.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); ferr == nil {
		fmt.Fprintf(f, "$ argocd %s\n%s(err: %v)\n", strings.Join(full, " "), out, err)
		f.Close()
	}
	if err != nil {
		return string(out), fmt.Errorf("argocd %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// SyncApp syncs the Application name with the argocd CLI and waits until it is Synced and
// Healthy, each step within timeout.
func (h *Hub) SyncApp(ctx context.Context, name string, timeout time.Duration) error {
	secs := fmt.Sprint(int(timeout.Seconds()))
	if _, err := h.ArgoCD(ctx, "app", "sync", name, "--timeout", secs); err != nil {
		return err
	}
	_, err := h.ArgoCD(ctx, "app", "wait", name, "--sync", "--health", "--timeout", secs)
	return err
}

// httpOK succeeds when url answers 200.
func httpOK(url string) func(context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", url, resp.Status)
		}
		return nil
	}
}

// redisPing succeeds when Redis at addr answers PING.
func redisPing(addr string) func(context.Context) error {
	return func(ctx context.Context) error {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Write([]byte("PING\r\n")); err != nil {
			return err
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			return err
		}
		if !strings.HasPrefix(line, "+PONG") {
			return fmt.Errorf("redis answered %q", line)
		}
		return nil
	}
}

// repoServerPluginParams reads manifests/cmp/argocd-cmd-params-cm.yaml and returns its
// settings as the repo-server environment Argo CD's install derives from them
// (manifests/base/repo-server/argocd-repo-server-deployment.yaml).
func repoServerPluginParams(root string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(root, "manifests", "cmp", "argocd-cmd-params-cm.yaml"))
	if err != nil {
		return nil, err
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(b, &cm); err != nil {
		return nil, fmt.Errorf("manifests/cmp/argocd-cmd-params-cm.yaml: %v", err)
	}
	envOf := map[string]string{
		"reposerver.plugin.use.manifest.generate.paths": "ARGOCD_REPO_SERVER_PLUGIN_USE_MANIFEST_GENERATE_PATHS",
		"reposerver.plugin.tar.exclusions":              "ARGOCD_REPO_SERVER_PLUGIN_TAR_EXCLUSIONS",
	}
	var env []string
	for k, v := range cm.Data {
		e, ok := envOf[k]
		if !ok {
			return nil, fmt.Errorf("manifests/cmp/argocd-cmd-params-cm.yaml: the harness does not know %s", k)
		}
		env = append(env, e+"="+v)
	}
	sort.Strings(env)
	return env, nil
}

// sidecarEnv reads the env of the spokeforge container in
// manifests/cmp/repo-server-sidecar.yaml: the cmp-server runs with what the install gives the
// sidecar (the agent image among it).
func sidecarEnv(root string) ([]string, error) {
	const file = "manifests/cmp/repo-server-sidecar.yaml"
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
	if err != nil {
		return nil, err
	}
	var d struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Name string `json:"name"`
						Env  []struct {
							Name  string `json:"name"`
							Value string `json:"value"`
						} `json:"env"`
					} `json:"containers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name != "spokeforge" {
			continue
		}
		var env []string
		for _, e := range c.Env {
			env = append(env, e.Name+"="+e.Value)
		}
		return env, nil
	}
	return nil, fmt.Errorf("%s has no spokeforge container", file)
}

// countingProxy listens on the unix socket at listen and forwards every connection to target,
// adding the bytes the client sends to sent. stop closes the listener.
func countingProxy(listen, target string, sent *atomic.Int64) (stop func(), err error) {
	l, err := net.Listen("unix", listen)
	if err != nil {
		return nil, err
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				up, err := net.Dial("unix", target)
				if err != nil {
					return
				}
				defer up.Close()
				done := make(chan struct{})
				go func() {
					_, _ = io.Copy(countingWriter{up, sent}, c)
					if u, ok := up.(*net.UnixConn); ok {
						_ = u.CloseWrite()
					}
					close(done)
				}()
				_, _ = io.Copy(c, up)
				if u, ok := c.(*net.UnixConn); ok {
					_ = u.CloseWrite()
				}
				<-done
			}()
		}
	}()
	return func() { l.Close() }, nil
}

// countingWriter adds what it writes to n as it goes.
type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	k, err := c.w.Write(p)
	c.n.Add(int64(k))
	return k, err
}
