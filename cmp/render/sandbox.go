package render

import (
	"errors"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// The second guard: krusty cannot reach the network or start a process,
// whatever a kustomization says, even with the check in overlay.go off.
//
// kustomize v0.20.1 exports no seam for this: krusty.Kustomizer.Run builds
// its file loader itself (api/internal/loader), which fetches a path that
// parses as an http(s) URL with a zero http.Client (so through
// http.DefaultTransport) and clones a resource or component that parses as
// a git URL by running `git` found on $PATH (api/internal/git); helm and
// exec/container KRM functions run only when the plugin config enables
// them. The target and loader packages are internal, so a loader of ours
// cannot be handed in. What spokeforge controls instead:
//
//   - the options: plugins builtin-only, helm off, KRM exec/network off;
//   - the filesystem: in memory, holding only the overlay directory;
//   - the network: http.DefaultTransport's Proxy hook, which net/http calls
//     in the requesting goroutine before dialling, refuses every request
//     made while a build runs or from kustomize's code (its frames on the
//     stack). The transport stays an *http.Transport (libraries assert
//     that type); Proxy is wrapped once, at init, before any request;
//   - processes: $PATH is empty while a build runs, so `git` (and `helm`)
//     are not found and nothing is started. spokeforge itself starts no
//     process, so emptying $PATH for the build's duration costs nothing.
//
// A build refuses to start unless both are in place (sandboxReady).

// errNetworkRefused is what kustomize gets instead of a response.
var errNetworkRefused = errors.New("spokeforge: network access is refused while an overlay is built")

var (
	sandboxMu      sync.Mutex
	sandboxDepth   int    // builds running
	sandboxPATH    string // $PATH saved while builds run
	sandboxHadPATH bool
	sandboxBusy    atomic.Bool

	// networkRefusals counts refused requests (tests read it).
	networkRefusals atomic.Int64

	guardedTransport *http.Transport
	guardProxy       func(*http.Request) (*url.URL, error)
)

func init() {
	t, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return // sandboxReady refuses every build
	}
	next := t.Proxy
	guardProxy = func(r *http.Request) (*url.URL, error) {
		if sandboxBusy.Load() || kustomizeOnStack() {
			networkRefusals.Add(1)
			return nil, errNetworkRefused
		}
		if next == nil {
			return nil, nil
		}
		return next(r)
	}
	t.Proxy = guardProxy
	guardedTransport = t
}

// kustomizeOnStack: the calling goroutine runs kustomize code.
func kustomizeOnStack() bool {
	pcs := make([]uintptr, 128)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		f, more := frames.Next()
		if strings.HasPrefix(f.Function, "sigs.k8s.io/kustomize/") {
			return true
		}
		if !more {
			return false
		}
	}
}

// sandboxReady: the network guard is still what net/http uses.
func sandboxReady() error {
	t, ok := http.DefaultTransport.(*http.Transport)
	if !ok || guardedTransport == nil || t != guardedTransport || t.Proxy == nil ||
		reflect.ValueOf(t.Proxy).Pointer() != reflect.ValueOf(guardProxy).Pointer() {
		return errors.New("spokeforge: http.DefaultTransport was replaced, so kustomize's network access cannot be refused: not building the overlay")
	}
	return nil
}

// sandboxOptions are krusty's defaults with every way to run code off.
func sandboxOptions() *krusty.Options {
	o := krusty.MakeDefaultOptions() // load restrictions root-only, plugins builtin-only
	o.PluginConfig.HelmConfig.Enabled = false
	o.PluginConfig.HelmConfig.Command = ""
	o.PluginConfig.FnpLoadingOptions.EnableExec = false
	o.PluginConfig.FnpLoadingOptions.Network = false
	o.PluginConfig.FnpLoadingOptions.Mounts = nil
	return o
}

// sandboxedBuild runs krusty over fs at dir with the network refused and
// no program findable.
func sandboxedBuild(fs filesys.FileSystem, dir string) (resmap.ResMap, error) {
	if err := sandboxReady(); err != nil {
		return nil, err
	}
	enterSandbox()
	defer leaveSandbox()
	return krusty.MakeKustomizer(sandboxOptions()).Run(fs, dir)
}

func enterSandbox() {
	sandboxMu.Lock()
	defer sandboxMu.Unlock()
	if sandboxDepth == 0 {
		sandboxPATH, sandboxHadPATH = os.LookupEnv("PATH")
		os.Setenv("PATH", "")
		sandboxBusy.Store(true)
	}
	sandboxDepth++
}

func leaveSandbox() {
	sandboxMu.Lock()
	defer sandboxMu.Unlock()
	sandboxDepth--
	if sandboxDepth == 0 {
		sandboxBusy.Store(false)
		if sandboxHadPATH {
			os.Setenv("PATH", sandboxPATH)
		} else {
			os.Unsetenv("PATH")
		}
	}
}
