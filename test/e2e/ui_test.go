//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// ContractsScreenshot is README's picture of the Contracts tab on a failing spoke, repo-relative.
const ContractsScreenshot = "docs/img/contracts-tab.png"

var updateScreenshot = flag.Bool("update-screenshot", false, "TestUIContracts writes "+ContractsScreenshot)

// TestUIContracts drives Argo CD's web UI in headless Chromium on the example spoke: the
// Application's health and the Onboarding node's message; the Onboarding's Contracts tab
// (manifests/ui-extension), "not checked yet" before the agent ran, then every boundary
// holding; a Certificate whose re-issuance the real cert-manager had denied (its Secret lost),
// seen without reloading the page as the app
// turning Degraded and the ladder leading with Certificates, its hint and next retry; the
// Certificate's retry hint and the reissue action in its actions menu, run from the UI; and
// the ladder recovering.
func TestUIContracts(t *testing.T) {
	parallel(t)
	h := StartHub(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	spoke, err := h.StartSpoke(ctx, filepath.Join(h.opts.RepoRoot, ExampleRepo, exampleSpokeDir), SpokeOptions{ApproveManually: true})
	if err != nil {
		t.Fatal(err)
	}
	files, err := RepoFiles(filepath.Join(h.opts.RepoRoot, ExampleRepo))
	if err != nil {
		t.Fatal(err)
	}
	repo, err := h.NewGitRepo("gitops", files)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Hub.Apply(ctx, SpokeApplication(exampleSpokeApp, repo.URL, exampleSpokeDir)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.ArgoCD(ctx, "app", "sync", exampleSpokeApp, "--timeout", "300"); err != nil {
		t.Fatal(err)
	}

	if err := h.InstallUIExtension(); err != nil {
		t.Fatal(err)
	}
	b := startBrowser(t, h)
	started := time.Now()
	if err := b.run(chromedp.Navigate("http://" + h.ServerAddr + "/applications/" + ArgoCDNamespace + "/" + exampleSpokeApp + "?view=tree")); err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, "the Onboarding node in the resource tree", time.Minute, exists(onboardingNode), eq("yes"))
	t.Logf("UI: application page with its resource tree in %s", time.Since(started).Round(time.Millisecond))

	// Before the agent ran: the tab says so, in every row.
	b.open(t, onboardingNode, exampleSpoke)
	b.click(t, contractsTab)
	l := b.waitLadder(t, "the ladder before the agent ran", time.Minute, func(l ladder) bool { return l.Unchecked && l.count("unchecked") == 7 })
	t.Logf("UI: Contracts tab before the agent ran: %s", l)

	// The agent writes the status; the open tab follows without a reload or reopening.
	agentStart := time.Now()
	if _, err := spoke.StartAgent(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	l = b.waitLadder(t, "every boundary holding", 3*time.Minute, func(l ladder) bool { return l.count("holds") == 7 && l.AllHold })
	t.Logf("UI: the open Contracts tab showed every boundary holding %s after the agent started: %s", time.Since(agentStart).Round(time.Millisecond), l)
	b.waitFor(t, "app health Healthy", 2*time.Minute, appHealth, contains("Healthy"))
	b.waitFor(t, "the Onboarding's health message", time.Minute, onboardingHealthTitle, contains("Healthy: all onboarding contracts hold"))
	if !strings.Contains(l.Connected, "Kubernetes v1.37.0, 2 nodes") {
		t.Errorf("Connected facts: %q", l.Connected)
	}

	// Break the certificates contract on the spoke: the inference certificate's Secret is lost,
	// and cert-manager's new CertificateRequest is denied by the approver, so the issuance
	// fails and is backed off.
	const ns, cert = "inference", "inference-serving"
	broken := time.Now()
	spoke.DenyNext(ns, cert, `[spokeforge-workload-identity: spec.dnsNames: Invalid value: "inference.example": not allowed]`)
	if err := h.Spoke.Client.CoreV1().Secrets(ns).Delete(ctx, cert+"-tls", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	l = b.waitLadder(t, "Certificates as the first failed boundary", 3*time.Minute, func(l ladder) bool {
		return l.First == "Certificates" && l.state("Certificates") == "failed"
	})
	t.Logf("UI: the open Contracts tab showed Certificates failed %s after the break (no reload): %s", time.Since(broken).Round(time.Millisecond), l)
	for _, w := range []string{"StaleCertificateRequest", "cmctl renew -n inference inference-serving"} {
		if !strings.Contains(l.Hint, w) {
			t.Errorf("the first failed boundary's hint lacks %q: %q", w, l.Hint)
		}
	}
	if !strings.Contains(l.Retry, "Next automatic retry: in ") || l.RetrySource != "status" {
		t.Errorf("no next retry in the future from the status's nextRetryTime: %q (from %q)", l.Retry, l.RetrySource)
	}
	if ev := strings.Join(l.Evidence["Certificates"], "\n"); !strings.Contains(ev, "Failed Certificate inference/inference-serving: CertificateRequest inference/inference-serving-") {
		t.Errorf("the Certificates row lacks the failed certificate's evidence item:\n%s", ev)
	}
	for _, boundary := range []string{"Identity", "Secrets"} {
		if l.state(boundary) != "holds" {
			t.Errorf("%s is %s, want holds", boundary, l.state(boundary))
		}
	}
	b.waitFor(t, "app health Degraded", 2*time.Minute, appHealth, contains("Degraded"))
	t.Logf("UI: app health Degraded %s after the break", time.Since(broken).Round(time.Millisecond))
	if *updateScreenshot {
		b.screenshot(t, filepath.Join(h.opts.RepoRoot, ContractsScreenshot))
	}

	if !strings.Contains(l.Hint, "kubectl delete certificaterequest -n inference inference-serving-") {
		t.Errorf("the hint for a denied request does not say to delete it: %q", l.Hint)
	}
	// As that hint says: cert-manager fails a re-trigger at once while the denied request remains.
	if n, err := deleteDeniedRequests(ctx, h.Spoke, ns, cert); err != nil || n != 1 {
		t.Fatalf("deleted %d denied CertificateRequests of %s/%s (%v), want 1", n, ns, cert, err)
	}

	// The Certificate's own node: the retry hint, and the reissue action in its actions menu.
	certNode := fmt.Sprintf(`.application-resource-tree__node[title^="Kind: Certificate\ANamespace: %s\AName: %s"]`, ns, cert)
	title := b.waitFor(t, "the Certificate's retry hint", 2*time.Minute, attr(certNode+healthIcon, "title"), contains("cmctl renew"))
	t.Logf("UI: Certificate node: %s", title)
	// An open actions menu keeps the items it opened with: if it opened before cert-manager's
	// Issuing=False landed, it never offers reissue; reopening the panel loads them again. The
	// panel re-renders as the app refreshes, which can close the menu between two evaluations,
	// so the item is found and clicked in one, and the confirmation must follow or it is retried.
	const clickReissue = `(() => {
	const item = [...document.querySelectorAll('.application-details__action-menu')].find(e => e.textContent.trim() === 'reissue');
	if (!item) return "";
	item.click();
	return "clicked";
})()`
	// The confirmation: a confirm popup (v2.14) or a prompt popup (v3); either is accepted.
	const confirm = `[qe-id="argo-popup-ok-button"], [qe-id="prompt-popup-ok-button"]`
	confirmed := false
	for attempt := 0; attempt < 6 && !confirmed; attempt++ {
		b.open(t, certNode, cert)
		b.click(t, `.resource-details__header .fa-ellipsis-v`)
		if _, clicked, _ := b.poll(10*time.Second, clickReissue, eq("clicked")); clicked {
			_, confirmed, _ = b.poll(10*time.Second, exists(confirm), eq("yes"))
		}
		if !confirmed {
			_ = b.run(chromedp.Evaluate(`document.querySelector('.sliding-panel__close') && document.querySelector('.sliding-panel__close').click(), ""`, nil))
			time.Sleep(time.Second)
		}
	}
	if !confirmed {
		t.Fatalf("UI: reissue was not offered and confirmed from the Certificate's actions menu in six openings of its panel; the menu last showed %q", b.eval(actionMenu))
	}
	b.click(t, confirm)
	reissued := time.Now()

	// Back on the Onboarding: the ladder recovers.
	b.open(t, onboardingNode, exampleSpoke)
	b.click(t, contractsTab)
	l = b.waitLadder(t, "every boundary holding again", 3*time.Minute, func(l ladder) bool { return l.count("holds") == 7 && l.AllHold })
	t.Logf("UI: every boundary holding %s after reissue was run from the UI: %s", time.Since(reissued).Round(time.Millisecond), l)
	if spoke.Denied() != 1 {
		t.Errorf("the approver denied %d CertificateRequests, want 1", spoke.Denied())
	}
	b.waitFor(t, "app health Healthy again", 2*time.Minute, appHealth, contains("Healthy"))

	// The app view (registerAppViewExtension): the same ladder on the spoke's app-of-apps,
	// registry-<cluster>, labelled with its cluster as the clusters ApplicationSet labels it,
	// which manages the spoke Application. Here it is a directory Application holding that
	// Application as it stands (the hub render's own app-of-apps runs in TestHostileRecord).
	const registryApp = "registry-" + exampleSpoke
	if err := repo.Commit("the spoke's app-of-apps", map[string]string{
		"hub-apps/" + exampleSpoke + "/spoke.yaml": SpokeApplication(exampleSpokeApp, repo.URL, exampleSpokeDir),
	}); err != nil {
		t.Fatal(err)
	}
	if err := applyAppOfApps(ctx, h, registryApp, repo.URL); err != nil {
		t.Fatal(err)
	}
	viewStart := time.Now()
	if err := b.run(chromedp.Navigate("http://" + h.ServerAddr + "/applications/" + ArgoCDNamespace + "/" + registryApp + "?view=Contracts")); err != nil {
		t.Fatal(err)
	}
	l = b.waitLadder(t, "the Contracts app view of "+registryApp, 2*time.Minute, func(l ladder) bool { return l.count("holds") == 7 && l.AllHold })
	t.Logf("UI: the Contracts app view of %s showed every boundary holding %s after navigating: %s", registryApp, time.Since(viewStart).Round(time.Millisecond), l)
	if !strings.Contains(l.Connected, "Kubernetes v1.37.0, 2 nodes") {
		t.Errorf("app view: Connected facts: %q", l.Connected)
	}

	checkDecoy(ctx, t, h, b, repo)

	if errs := b.extensionErrors(); len(errs) > 0 {
		t.Errorf("script errors from the extension: %s", strings.Join(errs, "\n"))
	}
	t.Logf("UI: browser test %s from the browser's start", time.Since(started).Round(time.Millisecond))
}

// checkDecoy puts a second Onboarding on the spoke, a-decoy, managed by an Application of its own
// (render refuses one added by the spoke's overlay; the spoke's admin can still create one), and
// writes it a status past every bound of the extension: 402 conditions, a 16 KiB reason, messages
// of 4 KiB backticks, a 4 KiB Kubernetes version. The spoke's own app view still shows gpu-east-1.
// Not checked here: the decoy's own Contracts tab (its warning and bounded ladder), whose resource
// panel did not open in this browser within a minute, for a small status as for a 1.5 MiB one;
// the tab's bounds (500,000 entries, 10 MB strings) and the warning are checked in node
// (manifests/uiext_bounds_test.go, TestUIExtensionAppView).
func checkDecoy(ctx context.Context, t *testing.T, h *Hub, b *browser, repo *GitRepo) {
	t.Helper()
	const decoyApp, decoy = "decoy-" + exampleSpoke, "a-decoy"
	if err := repo.Commit("a decoy Onboarding", map[string]string{
		"decoy/onboarding.yaml": "apiVersion: spokeforge.io/v1alpha1\nkind: Onboarding\nmetadata: {name: " + decoy + "}\nspec: {cluster: " + exampleSpoke + "}\n",
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Hub.Apply(ctx, fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: %s, namespace: %s}
spec:
  project: default
  source: {repoURL: %s, targetRevision: main, path: decoy}
  destination: {name: %s}
`, decoyApp, ArgoCDNamespace, repo.URL, SpokeClusterName)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.ArgoCD(ctx, "app", "sync", decoyApp, "--timeout", "120"); err != nil {
		t.Fatal(err)
	}
	conditions := make([]any, 0, 402)
	code := strings.Repeat("`a`", 4096/3)
	conditions = append(conditions,
		map[string]any{"type": "Identity", "status": "False", "reason": strings.Repeat("r", 16<<10), "message": code},
		map[string]any{"type": "Ready", "status": "True", "message": code})
	for i := range 400 {
		conditions = append(conditions, map[string]any{"type": fmt.Sprintf("T%d", i), "status": "False", "reason": "R", "message": "`x` `y`"})
	}
	status, err := json.Marshal(map[string]any{"status": map[string]any{"firstFailedBoundary": "Identity", "checkedAt": time.Now().UTC().Format(time.RFC3339),
		"connected": map[string]any{"kubernetesVersion": strings.Repeat("v", 4<<10), "nodeCount": 1}, "conditions": conditions}})
	if err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: "spokeforge.io", Version: "v1alpha1", Resource: "onboardings"}
	if _, err := h.Spoke.Dynamic.Resource(gvr).Patch(ctx, decoy, types.MergePatchType, status, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatalf("writing the decoy's status (%d bytes): %v", len(status), err)
	}

	// The spoke's app view reads its own Onboarding, not the decoy.
	if err := b.run(chromedp.Navigate("http://" + h.ServerAddr + "/applications/" + ArgoCDNamespace + "/" + exampleSpokeApp + "?view=Contracts")); err != nil {
		t.Fatal(err)
	}
	b.waitLadder(t, "the spoke's own ladder in its app view", 2*time.Minute, func(l ladder) bool { return l.count("holds") == 7 && l.AllHold })
	summary := b.eval(`((document.querySelector('.spokeforge-contracts__summary') || {}).textContent || "")`)
	if !strings.HasPrefix(summary, "Onboarding "+exampleSpoke+"last checked") {
		t.Errorf("the spoke's app view shows %q", summary)
	}
}

// CSS selectors (an attribute value spells a newline \A) and JS expressions for the page.
const (
	onboardingNode = `.application-resource-tree__node[title^="Kind: Onboarding\A"]`
	healthIcon     = ` [qe-id="utils-health-status-title"]`
	contractsTab   = `.tabs__nav-wrapper a:has(.fa-list-ol)`
	appHealth      = `(document.querySelector('.application-status-panel__item-value') || {}).textContent || ""`
	actionMenu     = `[...document.querySelectorAll('.application-details__action-menu')].map(e => e.textContent.trim()).join(",")`
	ladderJS       = `JSON.stringify((() => {
	const q = (s) => document.querySelector(s);
	const ff = q('.spokeforge-contracts__first-failed');
	return {
		open: !!q('.spokeforge-contracts'),
		rows: [...document.querySelectorAll('.spokeforge-contracts__boundary')].map(r => r.dataset.boundary + '=' + r.dataset.state),
		first: ff ? ff.dataset.boundary : '',
		hint: ff ? ff.textContent : '',
		retry: (q('.spokeforge-contracts__next-retry') || {}).textContent || '',
		retrySource: ((q('.spokeforge-contracts__next-retry') || {}).dataset || {}).source || '',
		evidence: Object.fromEntries([...document.querySelectorAll('.spokeforge-contracts__boundary')].map(r => [r.dataset.boundary,
			[...r.querySelectorAll('.spokeforge-contracts__evidence-item')].map(e => e.dataset.result + ' ' + e.textContent)])),
		allHold: !!q('.spokeforge-contracts__all-hold'),
		unchecked: !!q('.spokeforge-contracts__unchecked'),
		connected: (q('.spokeforge-contracts__connected') || {}).textContent || '',
	};
})())`
)

// ladder is what the Contracts tab shows.
type ladder struct {
	Open  bool
	Rows  []string // Boundary=state, in order
	First string
	Hint  string
	Retry string
	// RetrySource is "status" when the next retry came from status.boundaries[].nextRetryTime,
	// "message" when it was read from the condition message.
	RetrySource string
	// Evidence is each boundary's status.boundaries evidence as shown: "Result check: detail".
	Evidence  map[string][]string
	AllHold   bool
	Unchecked bool
	Connected string
}

func (l ladder) state(boundary string) string {
	for _, r := range l.Rows {
		if b, s, _ := strings.Cut(r, "="); b == boundary {
			return s
		}
	}
	return ""
}

func (l ladder) count(state string) int {
	n := 0
	for _, r := range l.Rows {
		if strings.HasSuffix(r, "="+state) {
			n++
		}
	}
	return n
}

func (l ladder) String() string {
	s := strings.Join(l.Rows, " ")
	if l.First != "" {
		s += "; first failed " + l.First
	}
	return s
}

var onboardingHealthTitle = attr(onboardingNode+healthIcon, "title")

// exists is a JS expression: "yes" when selector matches an element.
func exists(selector string) string {
	return `(document.querySelector(` + jsString(selector) + `) ? "yes" : "")`
}

// attr is a JS expression: the attribute name of the element selector matches, or "".
func attr(selector, name string) string {
	return `((document.querySelector(` + jsString(selector) + `) || {getAttribute: () => ""}).getAttribute(` + jsString(name) + `) || "")`
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func eq(want string) func(string) bool { return func(s string) bool { return s == want } }
func contains(want string) func(string) bool {
	return func(s string) bool { return strings.Contains(s, want) }
}

// browser is Debian's chromium, headless, driven through the DevTools protocol (chromedp).
// It records the page's console and exceptions; when the test fails it saves a screenshot and
// that log into the hub's log folder.
type browser struct {
	ctx     context.Context
	mu      sync.Mutex
	console []string
	errs    []string
}

func startBrowser(t *testing.T, h *Hub) *browser {
	t.Helper()
	exe, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium not found on PATH: Debian package chromium is missing; %s", installHint)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe),
		chromedp.UserDataDir(filepath.Join(h.Dir, "chromium")), chromedp.WindowSize(1600, 1000),
		// Root may not run Chromium's sandbox; /dev/shm is small in containers.
		chromedp.NoSandbox, chromedp.DisableGPU, chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-component-update", true))
	// Its own context, not the test's: it must outlive the test body for the failure screenshot.
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelCtx := chromedp.NewContext(actx)
	b := &browser{ctx: bctx}
	chromedp.ListenTarget(bctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			var args []string
			for _, a := range ev.Args {
				if a.Value != nil {
					args = append(args, string(a.Value))
				} else {
					args = append(args, a.Description)
				}
			}
			b.console = append(b.console, fmt.Sprintf("%s console.%s: %s", time.Now().Format(time.TimeOnly), ev.Type, strings.Join(args, " ")))
		case *cdplog.EventEntryAdded:
			b.console = append(b.console, fmt.Sprintf("%s %s %s: %s %s", time.Now().Format(time.TimeOnly), ev.Entry.Source, ev.Entry.Level, ev.Entry.Text, ev.Entry.URL))
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			line := fmt.Sprintf("%s exception at %s:%d: %s", time.Now().Format(time.TimeOnly), d.URL, d.LineNumber, msg)
			b.console = append(b.console, line)
			b.errs = append(b.errs, line)
		}
	})
	start := time.Now()
	// The first console line names the browser, and shows the console is recorded.
	if err := chromedp.Run(bctx, runtime.Enable(), cdplog.Enable(), chromedp.Evaluate(`console.info(navigator.userAgent)`, nil)); err != nil {
		cancelCtx()
		cancelAlloc()
		t.Fatalf("start chromium: %v", err)
	}
	t.Logf("chromium started in %s", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			b.screenshot(t, filepath.Join(h.LogDir, "ui-failure.png"))
			b.mu.Lock()
			log := strings.Join(b.console, "\n") + "\n"
			b.mu.Unlock()
			if err := os.WriteFile(filepath.Join(h.LogDir, "browser-console.log"), []byte(log), 0o644); err == nil {
				t.Logf("browser: screenshot and console log in %s (ui-failure.png, browser-console.log)", h.LogDir)
			}
		}
		cancelCtx()
		cancelAlloc()
	})
	return b
}

func (b *browser) run(actions ...chromedp.Action) error { return chromedp.Run(b.ctx, actions...) }

// eval is the JS expression expr's value now, or the error that kept it from being read.
func (b *browser) eval(expr string) string {
	var v string
	if err := b.run(chromedp.Evaluate(expr, &v)); err != nil {
		return err.Error()
	}
	return v
}

// waitFor evaluates the JS expression expr (a string) until ok accepts it, and returns it.
func (b *browser) waitFor(t *testing.T, what string, timeout time.Duration, expr string, ok func(string) bool) string {
	t.Helper()
	last, found, err := b.poll(timeout, expr, ok)
	if !found {
		t.Fatalf("UI: no %s within %s; last %q (%v)", what, timeout, last, err)
	}
	return last
}

// poll evaluates expr until ok accepts it or timeout passes; found says which.
func (b *browser) poll(timeout time.Duration, expr string, ok func(string) bool) (last string, found bool, err error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if err = b.run(chromedp.Evaluate(expr, &last)); err == nil && ok(last) {
			return last, true, nil
		}
		time.Sleep(250 * time.Millisecond)
	}
	return last, false, err
}

func (b *browser) waitLadder(t *testing.T, what string, timeout time.Duration, ok func(ladder) bool) ladder {
	t.Helper()
	var l ladder
	b.waitFor(t, what, timeout, ladderJS, func(s string) bool {
		l = ladder{}
		return json.Unmarshal([]byte(s), &l) == nil && l.Open && ok(l)
	})
	return l
}

// click clicks, with the mouse, the element selector matches, once there.
func (b *browser) click(t *testing.T, selector string) {
	t.Helper()
	b.waitFor(t, selector, time.Minute, exists(selector), eq("yes"))
	if err := b.run(chromedp.Click(selector, chromedp.ByQuery)); err != nil {
		t.Fatalf("click %s: %v", selector, err)
	}
}

// open opens the resource panel of the tree node selector matches, whose resource is name:
// it closes an open panel first (it covers the tree) and clicks again when a click landed
// while a panel was still sliding away.
func (b *browser) open(t *testing.T, selector, name string) {
	t.Helper()
	header := `((document.querySelector('.resource-details__header h1') || {}).textContent || "")`
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		var shown string
		if err := b.run(chromedp.Evaluate(header, &shown)); err == nil && shown == name {
			return
		}
		if err := b.run(chromedp.Evaluate(`document.querySelector('.sliding-panel__close') && document.querySelector('.sliding-panel__close').click(), ""`, &shown)); err != nil {
			t.Fatal(err)
		}
		b.click(t, selector)
		for i := 0; i < 12 && shown != name; i++ {
			time.Sleep(250 * time.Millisecond)
			_ = b.run(chromedp.Evaluate(header, &shown))
		}
	}
	t.Fatalf("UI: the resource panel of %s did not open within a minute", name)
}

// screenshot saves the browser window as PNG.
func (b *browser) screenshot(t *testing.T, path string) {
	var png []byte
	if err := b.run(chromedp.FullScreenshot(&png, 100)); err != nil {
		t.Logf("screenshot: %v", err)
		return
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
		err = os.WriteFile(path, png, 0o644)
	}
	t.Logf("screenshot %s (%d bytes)", path, len(png))
}

// extensionErrors are the exceptions thrown in extensions.js.
func (b *browser) extensionErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, e := range b.errs {
		if strings.Contains(e, "extensions.js") {
			out = append(out, e)
		}
	}
	return out
}
