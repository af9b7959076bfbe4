package manifests_test

import (
	"os/exec"
	"strings"
	"testing"
)

// boundedStatusJS builds, in node, statuses made to explode the Contracts tab (too large for a
// command-line argument): `hostile.entries`, 500,000 list entries (conditions, boundaries,
// evidence of one boundary, declared boundaries, messages of backticks); `hostile.strings`, a
// 10 MB string in every field the tab reads; `hostile.deep`, lists and objects nested 100,000
// deep where the tab expects lists, strings and numbers (JSON.stringify of it overflows the stack).
const boundedStatusJS = `
const MB10 = 10 * 1000 * 1000;
const big = (unit) => unit.repeat(Math.ceil(MB10 / unit.length));
const nest = (depth, make) => { let v = 'x'; for (let i = 0; i < depth; i++) v = make(v); return v; };
const hostile = {
  entries: (() => {
    const n = 100000;
    const conditions = [], evidence = [], boundaries = [{name: 'Identity', evidence, evidenceOmitted: 5}], declared = [];
    for (let i = 0; i < n; i++) {
      conditions.push({type: i ? 'C' + i : 'Identity', status: 'False', reason: 'R' + i, message: '` + "`a`" + `'.repeat(10)});
      evidence.push({check: 'check ' + i, result: 'Failed', detail: 'detail ` + "`" + `' + i + '` + "`" + `'});
      boundaries.push({name: 'B' + i, evidence: [{check: 'c', result: 'Passed'}]});
      declared.push(i ? 'B' + i : 'Identity');
    }
    const ff = {type: 'Identity', status: 'False', message: '` + "`a` " + `'.repeat(n)};
    conditions[0] = ff;
    return {metadata: {name: 'gpu-east-1'}, spec: {boundaries: declared},
      status: {firstFailedBoundary: 'Identity', checkedAt: '2026-12-01T10:00:00Z', conditions, boundaries}};
  })(),
  strings: (() => {
    const s = big('x'), code = big('` + "`y`" + `');
    return {metadata: {name: s, generation: s}, spec: {boundaries: [s, 'Identity']},
      status: {firstFailedBoundary: s, checkedAt: s, observedGeneration: s,
        connected: {kubernetesVersion: s, nodeCount: s, checkedAt: s},
        conditions: [{type: s, status: 'False', reason: s, message: code + 'cert-manager retries at 2026-12-01T11:00:00Z', lastTransitionTime: s},
          {type: 'Identity', status: 'False', reason: s, message: code}, {type: 'Ready', status: 'False', message: s}],
        boundaries: [{name: s, nextRetryTime: s, evidenceOmitted: s, evidence: [{check: s, result: s, detail: code}]},
          {name: 'Identity', evidence: [{check: s, result: 'Failed', detail: s}]}]}};
  })(),
  deep: {metadata: {name: nest(100000, (v) => ({name: v}))}, spec: {boundaries: nest(100000, (v) => [v])},
    status: nest(100000, (v) => ({status: v, conditions: [v]}))},
  deepFields: {metadata: {name: 'gpu-east-1'}, spec: {boundaries: [nest(100000, (v) => [v]), 'Identity']},
    status: {firstFailedBoundary: nest(100000, (v) => [v]), conditions: nest(100000, (v) => [v]),
      boundaries: [{name: 'Identity', evidence: nest(100000, (v) => [v])}], connected: nest(100000, (v) => ({connected: v}))}},
};
`

// TestUIExtensionBoundedStatus renders the Contracts tab of the hostile statuses of
// boundedStatusJS under the React 19 stand-in, counting every element the extension creates, and
// the app view of one of them read through Argo CD's API with other Onboardings listed first. What
// is rendered stays small and quick whatever the status holds: a few hundred elements, well
// under 256 KiB of text, what was left out counted; the numbers are logged (docs/security.md
// quotes them).
func TestUIExtensionBoundedStatus(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed (Debian package nodejs)")
	}
	type result struct {
		MS       float64
		ReadMS   float64 // the app view's read through the API: the answer parsed twice
		Elements int
		Chars    int
		Text     string // the first and last 4,000 characters
		Threw    string
	}
	var got map[string]result
	runHarness(t, node, react19UI(4).prelude+`
const createElement = window.React.createElement;
let elements = 0;
window.React.createElement = function (...args) { elements++; return createElement.apply(this, args); };
require(process.argv[2]);
`+boundedStatusJS+`
const cut = (s) => s.length > 8000 ? s.slice(0, 4000) + ' … ' + s.slice(-4000) : s;
const measure = (f) => {
  elements = 0;
  const start = process.hrtime.bigint();
  try {
    const text = f();
    return {ms: Number(process.hrtime.bigint() - start) / 1e6, elements, chars: text.length, text: cut(text)};
  } catch (e) {
    return {threw: String(e && e.stack || e)};
  }
};
(async () => {
  const out = {};
  for (const [name, resource] of Object.entries(hostile)) out['tab: ' + name] = measure(() => ui.tab(resource));
  // The app view of spoke-gpu-east-1 with other Onboardings listed first, each all holding; its
  // own read through the API: 20,000 entries in each list and a 2 MB message (an answer just
  // under the view's 8 MiB), then the 500,000 entries (an answer of 37 MB, not parsed).
  const base = 'http://hub.example/argo/api/v1/applications/spoke-gpu-east-1/resource?appNamespace=argocd&namespace=';
  const q = '&version=v1alpha1&kind=Onboarding&group=spokeforge.io';
  const answer = (resource) => ({status: 200, body: JSON.stringify({manifest: JSON.stringify(resource)})});
  const holds = answer({metadata: {name: 'decoy'}, status: {checkedAt: '2026-12-01T10:00:00Z',
    conditions: [{type: 'Ready', status: 'True', message: 'all onboarding contracts hold'}]}});
  const ref = (namespace, name) => ({group: 'spokeforge.io', version: 'v1alpha1', kind: 'Onboarding', namespace, name});
  const app = {metadata: {name: 'spoke-gpu-east-1', namespace: 'argocd'},
    status: {resources: [ref('', 'decoy'), ref('spokeforge-system', 'gpu-east-1'), ref('', 'gpu-east-1')]}};
  const e = hostile.entries;
  const lists = {metadata: e.metadata, spec: {boundaries: e.spec.boundaries.slice(0, 20000)},
    status: Object.assign({}, e.status, {conditions: e.status.conditions.slice(0, 20000).concat([{type: 'Ready', status: 'False', message: 'm'.repeat(2e6)}]),
      boundaries: [{name: 'Identity', evidence: e.status.boundaries[0].evidence.slice(0, 20000)}].concat(e.status.boundaries.slice(1, 20000))})};
  for (const [name, own] of [['app view: decoys first, 20,000 entries', lists], ['app view: decoys first, 500,000 entries', e]]) {
    ui.routes = {
      [base + '&resourceName=decoy' + q]: holds,
      [base + 'spokeforge-system&resourceName=gpu-east-1' + q]: holds,
      [base + '&resourceName=gpu-east-1' + q]: answer(own),
    };
    ui.requests = [];
    ui.timers.clear();
    const root = ui.mount(ui.appViews[0].component, {application: app, tree: {nodes: []}});
    const start = process.hrtime.bigint();
    root.render();
    await ui.settle();
    const readMS = Number(process.hrtime.bigint() - start) / 1e6;
    out[name] = measure(() => root.render());
    out[name].readMS = readMS;
    out[name].text += '\nREQUESTS ' + ui.requests.join('\n');
    root.unmount();
  }
  console.log(JSON.stringify(out));
})();
`, nil, &got)
	if len(got) != 6 {
		t.Fatalf("got %d results, want 6", len(got))
	}
	const maxElements, maxChars = 2000, 256 << 10
	const ownGET = "GET http://hub.example/argo/api/v1/applications/spoke-gpu-east-1/resource?appNamespace=argocd&namespace=&resourceName=gpu-east-1&version=v1alpha1&kind=Onboarding&group=spokeforge.io same-origin"
	for name, r := range got {
		if r.Threw != "" {
			t.Errorf("%s: threw %s", name, r.Threw)
			continue
		}
		t.Logf("%s: %.1f ms, %d elements, %d characters of text", name, r.MS, r.Elements, r.Chars)
		if r.ReadMS > 0 {
			t.Logf("%s: read and parsed in %.1f ms", name, r.ReadMS)
		}
		if r.Elements > maxElements || r.Chars > maxChars {
			t.Errorf("%s: %d elements and %d characters, want at most %d and %d", name, r.Elements, r.Chars, maxElements, maxChars)
		}
		// Far over what a few hundred elements take; a generous bound for a loaded machine.
		if r.MS > 2000 {
			t.Errorf("%s: rendered in %.0f ms", name, r.MS)
		}
		if !strings.Contains(r.Text, "BoundaryStateReasonEvidenceSince") && !strings.Contains(r.Text, "Cannot read") {
			t.Errorf("%s: neither the ladder nor a cannot-read line:\n%s", name, r.Text)
		}
		for _, bad := range []string{"[object ", "undefined", "NaN"} {
			if strings.Contains(r.Text, bad) {
				t.Errorf("%s: shows %q:\n%s", name, bad, r.Text)
			}
		}
	}
	for name, wants := range map[string][]string{
		"tab: entries": {"status.conditions lists 100000 entries: 99744 more not shown.", "status.boundaries lists 100001 entries: 99745 more not shown.",
			"spec.boundaries lists 100000 entries: 99984 more not shown.", "First failed boundary: Identity",
			"check 15: detail 15and 99989 more not shown"},
		"tab: strings":    {"Onboarding xxxxxxxx", "… (10000000 characters)", "… (10000002 characters)", "First failed boundary: xxxxxxxx"},
		"tab: deep":       {"Onboarding ?", "IdentityNot checked yet", "Connected: not read yet"},
		"tab: deepFields": {"Onboarding gpu-east-1", "IdentityNot checked yet", "Connected: not read yet"},
		"app view: decoys first, 20,000 entries": {"Onboarding managed by Application spoke-gpu-east-1, read ", "Onboarding gpu-east-1",
			"First failed boundary: Identity", "status.conditions lists 20001 entries: 19745 more not shown.", "REQUESTS " + ownGET},
		"app view: decoys first, 500,000 entries": {"Cannot read the Onboarding: Argo CD's answer is ", "characters long, more than the view reads.",
			"REQUESTS " + ownGET},
	} {
		for _, w := range wants {
			if !strings.Contains(got[name].Text, w) {
				t.Errorf("%s: lacks %q:\n%s", name, w, got[name].Text)
			}
		}
	}
	for _, name := range []string{"app view: decoys first, 20,000 entries", "app view: decoys first, 500,000 entries"} {
		if r := got[name]; strings.Contains(r.Text, "all onboarding contracts hold") || strings.Count(r.Text, "GET ") != 1 {
			t.Errorf("%s: the app view read a decoy:\n%s", name, r.Text)
		}
	}
}

// TestUIExtensionTabSaysADecoyIsNotTheSpokes opens the Contracts tab of Onboardings on the page of
// the spoke Application spoke-gpu-east-1 (as the React 19 stand-in does): its own Onboarding,
// gpu-east-1, cluster-scoped, reads as it is; any other Onboarding there (an overlay's, which
// render refuses, or one created on the spoke) says first that it is not the spoke's.
func TestUIExtensionTabSaysADecoyIsNotTheSpokes(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed (Debian package nodejs)")
	}
	holds := map[string]any{"checkedAt": "2026-12-01T10:00:00Z", "conditions": []any{map[string]any{"type": "Ready", "status": "True", "message": "all onboarding contracts hold"}}}
	onboarding := func(namespace, name string) map[string]any {
		return map[string]any{"metadata": map[string]any{"namespace": namespace, "name": name}, "status": holds}
	}
	got := runTabs(t, node, react19UI(4), map[string]any{
		"own":        onboarding("", "gpu-east-1"),
		"other name": onboarding("", "a-decoy"),
		"namespaced": onboarding("spokeforge-system", "gpu-east-1"),
		"prefixed":   onboarding("", "spoke-gpu-east-1"),
	})
	const warning = "This is not the Onboarding spokeforge renders for Application spoke-gpu-east-1 (that one is gpu-east-1, cluster-scoped): something else added it, and its status says nothing about the spoke."
	for name, tab := range got {
		if name == "registered" {
			continue
		}
		if !strings.Contains(tab, "all onboarding contracts hold") {
			t.Errorf("%s: %s", name, tab)
		}
		if shown := strings.Contains(tab, warning); shown != (name != "own") {
			t.Errorf("%s: warning shown %v:\n%s", name, shown, tab)
		}
	}
}
