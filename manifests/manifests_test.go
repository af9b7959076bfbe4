package manifests_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/spokeforge/spokeforge/cmp"
	"github.com/spokeforge/spokeforge/manifests"
)

func TestPluginCopyMatchesSource(t *testing.T) {
	got, err := os.ReadFile("cmp/plugin.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, cmp.PluginYAML) {
		t.Fatal("manifests/cmp/plugin.yaml differs from cmp/plugin.yaml: cp cmp/plugin.yaml manifests/cmp/")
	}
}

// TestCMPComponentBuilds applies the component to a minimal repo-server
// Deployment, as an Argo CD install overlay would, with kustomize itself.
func TestCMPComponentBuilds(t *testing.T) {
	fs := filesys.MakeFsOnDisk()
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	wd, _ := os.Getwd()
	rel, err := filepath.Rel(dir, filepath.Join(wd, "cmp"))
	must(err)
	must(os.WriteFile(dir+"/repo-server.yaml", []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: argocd-repo-server, namespace: argocd}
spec:
  selector: {matchLabels: {app: r}}
  template:
    metadata: {labels: {app: r}}
    spec:
      containers: [{name: argocd-repo-server, image: quay.io/argoproj/argocd:v2.14.21}]
      volumes: [{name: var-files, emptyDir: {}}, {name: plugins, emptyDir: {}}]
`), 0o644))
	must(os.WriteFile(dir+"/kustomization.yaml", []byte("resources: [repo-server.yaml]\ncomponents: ["+rel+"]\n"), 0o644))
	opts := krusty.MakeDefaultOptions()
	opts.LoadRestrictions = 0 // LoadRestrictionsNone: the component lives outside the temp overlay
	m, err := krusty.MakeKustomizer(opts).Run(fs, dir)
	must(err)
	out, err := m.AsYaml()
	must(err)
	for _, w := range []string{"name: spokeforge", "/var/run/argocd/argocd-cmp-server", "runAsUser: 999", "subPath: plugin.yaml", "kind: ConfigMap", "name: spokeforge-cmp-plugin", "mountPath: /tmp"} {
		if !strings.Contains(string(out), w) {
			t.Errorf("built overlay lacks %q", w)
		}
	}
}

// TestOnboardingCRDGenerated regenerates the CRD from internal/api/v1alpha1
// with controller-gen (pinned in hack/tools) and fails on any drift.
func TestOnboardingCRDGenerated(t *testing.T) {
	if testing.Short() {
		t.Skip("builds controller-gen")
	}
	out, err := exec.Command("../hack/controller-gen.sh", "crd:crdVersions=v1", "paths=./internal/api/v1alpha1/...", "output:crd:stdout").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("controller-gen: %v: %s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	got, err := os.ReadFile("crds/onboarding.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, out) {
		t.Fatal("manifests/crds/onboarding.yaml differs from what internal/api/v1alpha1 generates: run make generate")
	}
	if !bytes.Equal(got, manifests.OnboardingCRD) {
		t.Fatal("the embedded CRD is stale")
	}
}

// TestUIExtensionComponentBuilds applies the UI extension component to a minimal
// argocd-server Deployment, as an Argo CD install overlay would: the extension file lands, as a
// regular file (subPath), where argocd-server reads extensions, from the generated ConfigMap.
func TestUIExtensionComponentBuilds(t *testing.T) {
	dir := t.TempDir()
	wd, _ := os.Getwd()
	rel, err := filepath.Rel(dir, filepath.Join(wd, "ui-extension"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"server.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: argocd-server, namespace: argocd}
spec:
  selector: {matchLabels: {app: s}}
  template:
    metadata: {labels: {app: s}}
    spec:
      containers: [{name: argocd-server, image: quay.io/argoproj/argocd:v3.2.12, volumeMounts: [{name: tmp, mountPath: /tmp}]}]
      volumes: [{name: tmp, emptyDir: {}}]
`,
		"kustomization.yaml": "resources: [server.yaml]\ncomponents: [" + rel + "]\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opts := krusty.MakeDefaultOptions()
	opts.LoadRestrictions = 0 // LoadRestrictionsNone: the component lives outside the temp overlay
	m, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatal(err)
	}
	js, err := os.ReadFile("ui-extension/extension-spokeforge.js")
	if err != nil {
		t.Fatal(err)
	}
	var cmName string
	for _, r := range m.Resources() {
		if r.GetKind() != "ConfigMap" {
			continue
		}
		cmName = r.GetName()
		if data := r.GetDataMap()["extension-spokeforge.js"]; data != string(js) {
			t.Errorf("ConfigMap %s does not hold extension-spokeforge.js as it is", cmName)
		}
	}
	if !strings.HasPrefix(cmName, "spokeforge-ui-extension-") {
		t.Fatalf("no hashed spokeforge-ui-extension ConfigMap; got %q", cmName)
	}
	out, err := m.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	mounted := false
	for _, r := range m.Resources() {
		if r.GetKind() != "Deployment" {
			continue
		}
		d, err := r.Map()
		if err != nil {
			t.Fatal(err)
		}
		vols, _, _ := unstructured.NestedSlice(d, "spec", "template", "spec", "volumes")
		for _, v := range vols {
			name, _, _ := unstructured.NestedString(v.(map[string]any), "configMap", "name")
			mounted = mounted || name == cmName
		}
	}
	if !mounted {
		t.Errorf("argocd-server has no volume of the ConfigMap %s:\n%s", cmName, out)
	}
	for _, w := range []string{"mountPath: /tmp/extensions/spokeforge/extension-spokeforge.js", "subPath: extension-spokeforge.js", "mountPath: /tmp\n"} {
		if !strings.Contains(string(out), w) {
			t.Errorf("built overlay lacks %q:\n%s", w, out)
		}
	}
}

// TestUIExtensionRendersAnyStatus renders the Contracts tab with node and a stand-in
// React.createElement for Onboardings with missing, malformed and failing status: it never
// throws, an unwritten status reads "not checked yet", and a failing one leads with its first
// failed boundary, hint and next retry. status.boundaries (evidence, nextRetryTime) and
// spec.stabilization are shown when present and well-formed; without them (an older agent or
// render) the tab reads the conditions' messages as before. The real UI is driven by the e2e
// browser test.
func TestUIExtensionRendersAnyStatus(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed (Debian package nodejs)")
	}
	const harness = `
let tab;
global.window = {
  React: {createElement: (type, props, ...children) => typeof type === 'function' ? type({...props, children}) : {type, props, children}},
  extensionsAPI: {registerResourceExtension: (c, group, kind, title) => { tab = {c, group, kind, title}; }},
};
require(process.argv[2]);
const text = (n) => n == null || n === false ? '' : typeof n !== 'object' ? String(n) : Array.isArray(n) ? n.map(text).join('') : text(n.children);
const out = {registered: [tab.group, tab.kind, tab.title].join('/')};
for (const [name, resource] of Object.entries(JSON.parse(process.argv[3]))) out[name] = text(tab.c({resource}));
console.log(JSON.stringify(out));
`
	failing := func() []any {
		return []any{
			map[string]any{"type": "Identity", "status": "True", "reason": "Verified", "message": "caller arn:aws:sts::111122223333:assumed-role/eue1-workload/s is the derived role"},
			map[string]any{"type": "Certificates", "status": "False", "severity": "Error", "reason": "StaleCertificateRequest",
				"message": "CertificateRequest inference/x-1 failed (Failed: denied); fixing the cause does not retry it: cert-manager retries at 2026-12-01T11:00:00Z, or run `cmctl renew -n inference x` to retry now"},
			map[string]any{"type": "Queues", "status": "False", "severity": "Error", "reason": "StaleCertificateRequest", "message": "queue message"},
			map[string]any{"type": "Ready", "status": "False", "severity": "Error", "message": "the workload identity is valid, but the certificate inference/x is stuck"},
		}
	}
	cases := map[string]any{
		"no resource": nil,
		"no status":   map[string]any{"metadata": map[string]any{"name": "gpu-east-1"}, "spec": map[string]any{"cluster": "gpu-east-1"}},
		"malformed": map[string]any{"metadata": "x", "spec": map[string]any{"boundaries": []any{7, nil}},
			"status": map[string]any{"conditions": []any{nil, 5, "Ready", map[string]any{"type": 3}}, "connected": []any{}, "firstFailedBoundary": 9}},
		// An agent without status.boundaries, a render without spec.stabilization.
		"failing": map[string]any{"metadata": map[string]any{"name": "gpu-east-1"}, "status": map[string]any{
			"checkedAt": "2026-12-01T10:00:00Z", "firstFailedBoundary": "Certificates",
			"connected":  map[string]any{"kubernetesVersion": "v1.31.0", "nodeCount": 2, "checkedAt": "2026-12-01T10:00:00Z"},
			"conditions": failing()}},
		// The same with status.boundaries: the structured next retry wins over the message's.
		"structured": map[string]any{"metadata": map[string]any{"name": "gpu-east-1"}, "spec": map[string]any{"stabilization": true},
			"status": map[string]any{"checkedAt": "2026-12-01T10:00:00Z", "firstFailedBoundary": "Certificates", "conditions": failing(),
				"boundaries": []any{
					map[string]any{"name": "Identity", "evidence": []any{map[string]any{"check": "sts:GetCallerIdentity", "result": "Passed", "detail": "arn:aws:sts::111122223333:assumed-role/eue1-workload/s"}}},
					map[string]any{"name": "Certificates", "nextRetryTime": "2026-12-01T12:00:00Z", "evidenceOmitted": 3, "evidence": []any{
						map[string]any{"check": "Certificate spokeforge-system/workload-identity", "result": "Passed", "detail": "Ready, expires 2027-01-01T00:00:00Z"},
						map[string]any{"check": "Certificate inference/x", "result": "Failed", "detail": "CertificateRequest inference/x-1 denied; run `cmctl renew -n inference x`"},
					}},
					map[string]any{"name": "Queues", "nextRetryTime": "2026-12-01T13:00:00Z"},
				}}},
		// Broken boundaries and stabilization: each falls back to what the conditions say.
		"malformed structured": map[string]any{"spec": map[string]any{"stabilization": "yes"},
			"status": map[string]any{"firstFailedBoundary": "Certificates", "conditions": failing(),
				"boundaries": []any{nil, 5, "Identity", map[string]any{"name": 3},
					map[string]any{"name": "Certificates", "evidence": "x", "nextRetryTime": "soon", "evidenceOmitted": "many"},
					map[string]any{"name": "Identity", "evidence": []any{nil, 5, map[string]any{"check": 4}, map[string]any{"check": "sts:GetCallerIdentity", "result": 9, "detail": map[string]any{}}}},
					map[string]any{"name": "Queues", "evidence": []any{}, "nextRetryTime": 7},
				}}},
		"boundaries not a list": map[string]any{"status": map[string]any{"firstFailedBoundary": "Certificates", "conditions": failing(), "boundaries": map[string]any{"Certificates": 1}}},
	}
	got := runHarness(t, node, harness, cases)
	if got["registered"] != "spokeforge.io/Onboarding/Contracts" {
		t.Errorf("registered %q", got["registered"])
	}
	for name, wants := range map[string][]string{
		"no resource": {"Not checked yet", "IdentityNot checked yet", "WorkloadNot checked yet", "not read yet"},
		"no status":   {"gpu-east-1", "Not checked yet", "StorageNot checked yet"},
		"malformed":   {"Not checked yet", "QueuesNot checked yet"},
		"failing": {"First failed boundary: Certificates (StaleCertificateRequest)", "cmctl renew -n inference x",
			"Next automatic retry: ", "(2026-12-01T11:00:00Z)", "IdentityHoldsVerifiedcaller arn:aws:sts::111122223333", "CertificatesFailedStaleCertificateRequest",
			"SecretsNot checked yet", "Kubernetes v1.31.0, 2 nodes", "QueuesFailedStaleCertificateRequestqueue message"},
		"structured": {"Stabilization: workload Applications are delivered without automated sync",
			"First failed boundary: Certificates (StaleCertificateRequest)", "Next automatic retry: ", "(2026-12-01T12:00:00Z)",
			"IdentityHoldsVerifiedsts:GetCallerIdentity: arn:aws:sts::111122223333:assumed-role/eue1-workload/s",
			"Certificate spokeforge-system/workload-identity: Ready, expires", "Certificate inference/x: CertificateRequest inference/x-1 denied; run cmctl renew",
			"and 3 more", "queue messageNext automatic retry: ", "(2026-12-01T13:00:00Z)"},
		"malformed structured": {"(2026-12-01T11:00:00Z)", "CertificatesFailedStaleCertificateRequestCertificateRequest inference/x-1 failed",
			"IdentityHoldsVerified4sts:GetCallerIdentity", "QueuesFailedStaleCertificateRequestqueue message", "SecretsNot checked yet"},
		"boundaries not a list": {"(2026-12-01T11:00:00Z)", "CertificatesFailedStaleCertificateRequestCertificateRequest inference/x-1 failed"},
	} {
		for _, w := range wants {
			if !strings.Contains(got[name], w) {
				t.Errorf("%s: the tab lacks %q:\n%s", name, w, got[name])
			}
		}
	}
	for name, unwanted := range map[string][]string{
		"failing":              {"Stabilization", "more"},
		"structured":           {"(2026-12-01T11:00:00Z)"}, // the message's retry time, superseded
		"malformed structured": {"Stabilization", "more", "soon", "2001"},
	} {
		for _, w := range unwanted {
			if strings.Contains(got[name], w) {
				t.Errorf("%s: the tab shows %q:\n%s", name, w, got[name])
			}
		}
	}
}

// TestUIExtensionHostileStatus renders the Contracts tab with names of JavaScript prototype
// properties in every status field: as condition types, statuses, reasons, messages, boundary
// names, evidence keys and values, field names of the objects themselves (JSON.parse makes a
// "__proto__" key an own property, as it does in the browser), with strings and objects where
// numbers go and lists where objects go. The stand-in React throws where React would (a plain
// object as a child, a non-string style value, two siblings with one key), and the tab must
// render without throwing: the boundary ladder, or a clear "cannot read" line, and nothing
// read from a prototype (a function's source, "[object Object]").
func TestUIExtensionHostileStatus(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed (Debian package nodejs)")
	}
	const harness = `
let tab;
const isElement = (n) => n !== null && typeof n === 'object' && n.$$typeof === 'element';
const check = (children) => {
  const keys = new Set();
  for (const c of children) {
    if (Array.isArray(c)) {
      for (const k of c) {
        if (!isElement(k)) { check([k]); continue; }
        if (k.key == null) throw new Error('a child in a list without a key');
        if (keys.has(k.key)) throw new Error('two children with the key ' + JSON.stringify(k.key));
        keys.add(k.key);
      }
      continue;
    }
    if (c !== null && typeof c === 'object' && !isElement(c)) throw new Error('Objects are not valid as a React child: ' + Object.keys(c));
    if (typeof c === 'function' || typeof c === 'symbol') throw new Error('a ' + typeof c + ' as a React child');
  }
};
global.window = {
  React: {createElement: (type, props, ...children) => {
    check(children);
    const p = props || {};
    for (const [k, v] of Object.entries(p.style || {})) if (v !== undefined && typeof v !== 'string' && typeof v !== 'number') throw new Error('style ' + k + ' is a ' + typeof v);
    for (const k of ['className', 'title', 'data-boundary', 'data-state', 'data-result', 'data-source']) if (k in p && typeof p[k] !== 'string') throw new Error(k + ' is a ' + typeof p[k]);
    const key = p.key == null ? null : String(p.key);
    if (typeof type !== 'function') return {$$typeof: 'element', type, key, props: p, children};
    const el = type({...p, children}); // a component, rendered at once: its element keeps the key
    return isElement(el) && key !== null ? {...el, key} : el;
  }},
  extensionsAPI: {registerResourceExtension: (c) => { tab = c; }},
};
require(process.argv[2]);
const text = (n) => n == null || n === false ? '' : typeof n !== 'object' ? String(n) : Array.isArray(n) ? n.map(text).join('') : text(n.children);
const out = {};
for (const [name, resource] of Object.entries(JSON.parse(process.argv[3]))) {
  try { out[name] = text(tab({resource})); } catch (e) { out[name] = 'THREW: ' + e.message; }
}
console.log(JSON.stringify(out));
`
	words := []string{"constructor", "__proto__", "toString", "valueOf", "hasOwnProperty", "prototype", "__defineGetter__",
		"__lookupGetter__", "isPrototypeOf", "propertyIsEnumerable", "toLocaleString", "length", "then", "Ready", "holds"}
	cases := map[string]any{}
	for _, w := range words {
		// An object with w as its only key, and one with w beside real fields.
		named := func(v any) map[string]any { return map[string]any{w: v} }
		evidence := []any{
			map[string]any{"check": w, "result": w, "detail": w, w: w},
			map[string]any{"check": "c", "result": "Passed", "detail": named("x")},
			named(map[string]any{"check": "x"}), w, nil, []any{w},
		}
		cond := func(typ string) map[string]any {
			return map[string]any{"type": typ, "status": w, "severity": w, "reason": w, "message": w, "lastTransitionTime": w, w: named(w)}
		}
		allFields := map[string]any{
			"metadata": map[string]any{"name": w, "generation": named(1), w: w},
			"spec":     map[string]any{"boundaries": []any{w, "Identity", w, named(w)}, "stabilization": w, w: w},
			"status": map[string]any{
				"checkedAt": w, "firstFailedBoundary": w, "observedGeneration": w, w: named(w),
				"connected": map[string]any{"kubernetesVersion": w, "nodeCount": w, "checkedAt": w, w: w},
				"conditions": []any{cond(w), cond("Identity"), cond("Ready"), map[string]any{"type": w, "status": "False"},
					map[string]any{w: map[string]any{"type": "Ready", "status": "True", "message": "from a key"}}, named("True"), w},
				"boundaries": []any{
					map[string]any{"name": w, "evidence": evidence, "evidenceOmitted": w, "nextRetryTime": w, w: w},
					map[string]any{"name": "Identity", "evidence": evidence, "evidenceOmitted": named(1), "nextRetryTime": named(w)},
					named(map[string]any{"name": "Identity"}),
				},
			},
		}
		cases[w+": in every field"] = allFields
		// A boundary named w that fails and is the first to, with the condition of its type.
		cases[w+": failed boundary"] = map[string]any{
			"metadata": map[string]any{"name": "gpu-east-1", "generation": "3"},
			"spec":     map[string]any{"boundaries": []any{"Identity", w}},
			"status": map[string]any{"firstFailedBoundary": w, "observedGeneration": "2", "checkedAt": "2026-12-01T10:00:00Z",
				"conditions": []any{
					map[string]any{"type": "Identity", "status": "True", "reason": w},
					map[string]any{"type": w, "status": "False", "reason": w, "message": w + " failed: cert-manager retries at 2026-12-01T11:00:00Z"},
					map[string]any{"type": "Ready", "status": "False", "message": w},
				},
				"boundaries": []any{map[string]any{"name": w, "evidence": []any{map[string]any{"check": w, "result": w, "detail": w}}, "evidenceOmitted": "2"}},
			}}
		// Lists where objects go and objects where lists go, keyed by w.
		cases[w+": conditions a map"] = map[string]any{"status": map[string]any{"conditions": named(map[string]any{"type": "Ready", "status": "True"}),
			"boundaries": named([]any{w}), "connected": []any{w}, "firstFailedBoundary": []any{w}}}
		cases[w+": status a list"] = map[string]any{"metadata": []any{w}, "spec": []any{w}, "status": []any{named(w), w}}
		cases[w+": status a string"] = map[string]any{"metadata": w, "spec": w, "status": w}
		cases[w+": resource keyed by w"] = named(map[string]any{"status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}})
	}
	got := runHarness(t, node, harness, cases)
	if len(got) != len(cases) {
		t.Fatalf("rendered %d cases, want %d", len(got), len(cases))
	}
	for name, tab := range got {
		if strings.HasPrefix(tab, "THREW: ") {
			t.Errorf("%s: %s", name, tab)
			continue
		}
		if !strings.Contains(tab, "BoundaryStateReasonEvidenceSince") && !strings.Contains(tab, "Cannot read") {
			t.Errorf("%s: neither the ladder nor a cannot-read line:\n%s", name, tab)
		}
		for _, bad := range []string{"[native code]", "[object ", "function ", "undefined", "NaN", "from a key"} {
			if strings.Contains(tab, bad) {
				t.Errorf("%s: the tab shows %q, read from a prototype or a wrong type:\n%s", name, bad, tab)
			}
		}
	}
	for _, w := range words {
		// The boundary named w is a row of its own, failed, with its evidence and reason.
		if tab := got[w+": failed boundary"]; !strings.Contains(tab, "First failed boundary: "+w+" ("+w+")") ||
			!strings.Contains(tab, w+"Failed"+w+w+": "+w+"and 2 more") || !strings.Contains(tab, "Next automatic retry: ") ||
			!strings.Contains(tab, "Checked against generation 2 of the spec; the current one is 3.") {
			t.Errorf("%s: failed boundary not shown as itself:\n%s", w, tab)
		}
		if tab := got[w+": in every field"]; !strings.Contains(tab, "Onboarding "+w) || !strings.Contains(tab, "IdentityNot checked") {
			t.Errorf("%s: in every field:\n%s", w, tab)
		}
		for _, c := range []string{w + ": status a list", w + ": status a string"} {
			if !strings.Contains(got[c], "Cannot read this status: status is not an object.") {
				t.Errorf("%s: no cannot-read line:\n%s", c, got[c])
			}
		}
		if !strings.Contains(got[w+": conditions a map"], "Cannot read this status: status.conditions is not a list.") {
			t.Errorf("%s: conditions a map: no cannot-read line:\n%s", w, got[w+": conditions a map"])
		}
	}
}

// runHarness runs the node harness on the extension with each case's live
// object and returns what it printed for each case.
func runHarness(t *testing.T, node, harness string, cases map[string]any) map[string]string {
	t.Helper()
	in, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "harness.js")
	if err := os.WriteFile(script, []byte(harness), 0o644); err != nil {
		t.Fatal(err)
	}
	ext, err := filepath.Abs("ui-extension/extension-spokeforge.js")
	if err != nil {
		t.Fatal(err)
	}
	b, err := exec.Command(node, script, ext, string(in)).CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, b)
	}
	var got map[string]string
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return got
}
