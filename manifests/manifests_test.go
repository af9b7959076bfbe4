package manifests_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
---
apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-cmd-params-cm, namespace: argocd}
`), 0o644))
	must(os.WriteFile(dir+"/kustomization.yaml", []byte("resources: [repo-server.yaml]\ncomponents: ["+rel+"]\n"), 0o644))
	opts := krusty.MakeDefaultOptions()
	opts.LoadRestrictions = 0 // LoadRestrictionsNone: the component lives outside the temp overlay
	m, err := krusty.MakeKustomizer(opts).Run(fs, dir)
	must(err)
	out, err := m.AsYaml()
	must(err)
	for _, w := range []string{"name: spokeforge", "/var/run/argocd/argocd-cmp-server", "runAsUser: 999", "subPath: plugin.yaml", "kind: ConfigMap", "name: spokeforge-cmp-plugin", "mountPath: /tmp",
		"reposerver.plugin.use.manifest.generate.paths: \"true\"", "reposerver.plugin.tar.exclusions: .git/*"} {
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

// TestUIExtensionRendersAnyStatus renders the Contracts tab with node, under each shape of
// Argo CD's UI globals (uiShape), for Onboardings with missing, malformed and failing status: it
// never throws, an unwritten status reads "not checked yet", and a failing one leads with its
// first failed boundary, hint and next retry. status.boundaries (evidence, nextRetryTime) and
// spec.stabilization are shown when present and well-formed; without them (an older agent or
// render) the tab reads the conditions' messages as before. Each shape gets what it can hold:
// the tab everywhere, the app view only with registerAppViewExtension's shouldDisplay. The real
// UI is driven by the e2e browser test.
func TestUIExtensionRendersAnyStatus(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed (Debian package nodejs)")
	}
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
	for _, shape := range []uiShape{legacyUI(false), react19UI(4), react19UI(3)} {
		t.Run(shape.name, func(t *testing.T) { checkAnyStatus(t, shape, runTabs(t, node, shape, cases)) })
	}
}

func checkAnyStatus(t *testing.T, shape uiShape, got map[string]string) {
	if got["registered"] != shape.registered {
		t.Errorf("registered %q, want %q", got["registered"], shape.registered)
	}
	for name, tab := range got {
		if strings.HasPrefix(tab, "THREW: ") {
			t.Errorf("%s: %s", name, tab)
		}
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
// numbers go and lists where objects go. Both stand-in Reacts (today's strict one, and React 19)
// throw where React would (a plain object as a child, a non-string style value, two siblings with
// one key), and the tab must render without throwing: the boundary ladder, or a clear "cannot
// read" line, and nothing read from a prototype (a function's source, "[object Object]").
func TestUIExtensionHostileStatus(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed (Debian package nodejs)")
	}
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
	for _, shape := range []uiShape{legacyUI(true), react19UI(4)} {
		t.Run(shape.name, func(t *testing.T) { checkHostile(t, words, runTabs(t, node, shape, cases), len(cases)) })
	}
}

func checkHostile(t *testing.T, words []string, got map[string]string, cases int) {
	delete(got, "registered")
	if len(got) != cases {
		t.Fatalf("rendered %d cases, want %d", len(got), cases)
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

// TestUIExtensionAppView drives the Contracts app view under React 19 with a stand-in of Argo CD's
// API: it shows on the app-of-apps registry-<cluster> whose spoke Application spoke-<cluster> it
// lists, and on an Application that manages an Onboarding, and nowhere else; it reads the
// Onboarding only with GETs of Argo CD's API under the page's base href, with the session's
// cookies (the child's managed resources, then the Onboarding's live state), renders the same
// ladder as the tab, reads it again every 15 s and at once when the child's health changes, says
// what it cannot read (an HTTP error with the API's message, a body that is not JSON, a child
// without an Onboarding) while keeping the last ladder it read, and leaves no timer or state
// update behind when it is closed.
func TestUIExtensionAppView(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed (Debian package nodejs)")
	}
	const api = "http://hub.example/argo/api/v1/applications/"
	const appGET = "GET " + api + "spoke-gpu-east-1?appNamespace=argocd same-origin"
	const resourceGET = "GET " + api + "spoke-gpu-east-1/resource?appNamespace=argocd&namespace=&resourceName=gpu-east-1&version=v1alpha1&kind=Onboarding&group=spokeforge.io same-origin"
	url := func(request string) string { return strings.Fields(request)[1] }
	js := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	ok := func(v any) map[string]any { return map[string]any{"status": 200, "body": js(v)} }
	onboarding := func(status any) map[string]any {
		return ok(map[string]any{"manifest": js(map[string]any{"apiVersion": "spokeforge.io/v1alpha1", "kind": "Onboarding",
			"metadata": map[string]any{"name": "gpu-east-1"}, "status": status})})
	}
	failing := map[string]any{"checkedAt": "2026-12-01T10:00:00Z", "firstFailedBoundary": "Certificates", "conditions": []any{
		map[string]any{"type": "Identity", "status": "True", "reason": "Verified"},
		map[string]any{"type": "Certificates", "status": "False", "reason": "StaleCertificateRequest", "message": "run `cmctl renew -n inference x`"},
	}}
	ready := map[string]any{"checkedAt": "2026-12-01T10:05:00Z", "conditions": []any{
		map[string]any{"type": "Ready", "status": "True", "message": "all onboarding contracts hold"},
	}}
	onboardingRef := map[string]any{"group": "spokeforge.io", "version": "v1alpha1", "kind": "Onboarding", "name": "gpu-east-1", "health": map[string]any{"status": "Degraded"}}
	spokeApp := map[string]any{"metadata": map[string]any{"name": "spoke-gpu-east-1", "namespace": "argocd", "labels": map[string]any{"spokeforge.io/cluster": "gpu-east-1"}},
		"status": map[string]any{"resources": []any{
			map[string]any{"version": "v1", "kind": "Namespace", "name": "inference"}, onboardingRef}}}
	registry := func(labels any, extra ...any) map[string]any {
		return map[string]any{"metadata": map[string]any{"name": "registry-gpu-east-1", "namespace": "argocd", "labels": labels},
			"status": map[string]any{"resources": append([]any{
				map[string]any{"group": "external-secrets.io", "version": "v1", "kind": "ExternalSecret", "namespace": "argocd", "name": "cluster-gpu-east-1"},
				// As Argo CD v3 keeps it: no health here (resourceHealthSource: appTree). A
				// health written here anyway is ignored; the tree's is read.
				map[string]any{"group": "argoproj.io", "version": "v1alpha1", "kind": "Application", "namespace": "argocd", "name": "spoke-gpu-east-1",
					"status": "Synced", "health": map[string]any{"status": "Unknown"}},
				map[string]any{"group": "argoproj.io", "version": "v1alpha1", "kind": "Application", "namespace": "argocd", "name": "gpu-east-1-inference"},
			}, extra...)}}
	}
	// tree is the app-of-apps' resource tree, where the UI (and the view) finds the child's health.
	tree := func(childHealth string) map[string]any {
		return map[string]any{"nodes": []any{map[string]any{"group": "argoproj.io", "version": "v1alpha1", "kind": "Application",
			"namespace": "argocd", "name": "spoke-gpu-east-1", "health": map[string]any{"status": childHealth}}}}
	}
	labelled := map[string]any{"spokeforge.io/cluster": "gpu-east-1"}
	decoy := func(group, namespace, name string) map[string]any {
		return map[string]any{"group": group, "version": "v1alpha1", "kind": "Onboarding", "namespace": namespace, "name": name, "health": map[string]any{"status": "Healthy"}}
	}
	// decoys: Onboardings that are not gpu-east-1's, then gpu-east-1's own, last.
	decoys := []any{decoy("spokeforge.io", "", "a-decoy"), decoy("spokeforge.io", "spokeforge-system", "gpu-east-1"),
		decoy("spokeforge.io.evil", "", "gpu-east-1"), decoy("spokeforge.io", "", "gpu-east-1 "), onboardingRef}
	spokeAppWith := func(resources ...any) map[string]any {
		return map[string]any{"metadata": map[string]any{"name": "spoke-gpu-east-1", "namespace": "argocd"}, "status": map[string]any{"resources": resources}}
	}
	// withDecoys answers for every decoy too, all holding, as a read of one would.
	withDecoys := func(routes map[string]any) map[string]any {
		for _, d := range decoys[:len(decoys)-1] {
			d := d.(map[string]any)
			u := strings.NewReplacer("namespace=&", "namespace="+d["namespace"].(string)+"&", "resourceName=gpu-east-1", "resourceName="+strings.ReplaceAll(d["name"].(string), " ", "+"),
				"group=spokeforge.io", "group="+d["group"].(string)).Replace(url(resourceGET))
			routes[u] = onboarding(ready)
		}
		return routes
	}
	both := func(app, resource map[string]any) map[string]any {
		return map[string]any{url(appGET): app, url(resourceGET): resource}
	}
	scenarios := map[string]any{
		// Read, refreshed by the timer (the Onboarding already found), then read again at once,
		// child and all, when the child's health changes in the app-of-apps.
		"app of apps": map[string]any{"application": registry(labelled), "tree": tree("Degraded"), "routes": both(ok(spokeApp), onboarding(failing)),
			"later": both(ok(spokeApp), onboarding(ready)), "update": registry(labelled), "updateTree": tree("Healthy")},
		"spoke application": map[string]any{"application": spokeApp, "routes": map[string]any{url(resourceGET): onboarding(failing)}},
		"workload application": map[string]any{"application": map[string]any{"metadata": map[string]any{"name": "gpu-east-1-inference", "namespace": "argocd", "labels": labelled},
			"status": map[string]any{"resources": []any{map[string]any{"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "inference", "name": "server"}}}}},
		"app of apps without its label":  map[string]any{"application": registry(nil)},
		"app of apps of another cluster": map[string]any{"application": registry(map[string]any{"spokeforge.io/cluster": "gpu-west-2"})},
		"forbidden": map[string]any{"application": registry(labelled), "routes": map[string]any{
			url(appGET): map[string]any{"status": 403, "body": `{"error":"permission denied","code":7,"message":"permission denied: applications, get, default/spoke-gpu-east-1"}`}}},
		"no Onboarding yet": map[string]any{"application": registry(labelled),
			"routes": map[string]any{url(appGET): ok(map[string]any{"metadata": map[string]any{"name": "spoke-gpu-east-1"}, "status": map[string]any{}})}},
		"not JSON": map[string]any{"application": registry(labelled), "routes": map[string]any{url(appGET): map[string]any{"status": 200, "body": "<html>"}}},
		// An overlay's (render refuses it) or a spoke admin's Onboardings beside the cluster's own,
		// listed first, all saying every contract holds: namespaced with the same name, named
		// otherwise, in another group. The view reads gpu-east-1, which fails.
		"decoys listed first": map[string]any{"application": registry(labelled), "routes": withDecoys(both(ok(spokeAppWith(decoys...)), onboarding(failing)))},
		"spoke application with decoys first": map[string]any{"application": spokeAppWith(decoys...),
			"routes": withDecoys(map[string]any{url(resourceGET): onboarding(failing)})},
		"only decoys": map[string]any{"application": registry(labelled), "routes": withDecoys(map[string]any{url(appGET): ok(spokeAppWith(decoys[:len(decoys)-1]...))})},
		"spoke application with only decoys": map[string]any{"application": map[string]any{"metadata": map[string]any{"name": "spoke-gpu-east-1", "namespace": "argocd"},
			"status": map[string]any{"resources": decoys[:len(decoys)-1]}}},
		"workload application with an Onboarding": map[string]any{"application": map[string]any{"metadata": map[string]any{"name": "gpu-east-1-inference", "namespace": "argocd", "labels": labelled},
			"status": map[string]any{"resources": []any{onboardingRef}}}},
		"manifest broken": map[string]any{"application": registry(labelled), "routes": both(ok(spokeApp), ok(map[string]any{"manifest": "{"}))},
		"network down":    map[string]any{"application": registry(labelled), "routes": map[string]any{url(appGET): map[string]any{"status": 0}}},
		// A good read, then an error: the ladder stays, with the error above it.
		"error after a read": map[string]any{"application": registry(labelled), "routes": both(ok(spokeApp), onboarding(failing)),
			"later": both(ok(spokeApp), map[string]any{"status": 500, "body": `{"message":"cluster unreachable"}`})},
		// A status from the spoke written to hurt, as in TestUIExtensionHostileStatus.
		"hostile status": map[string]any{"application": registry(labelled), "routes": both(ok(spokeApp),
			onboarding(map[string]any{"__proto__": map[string]any{"firstFailedBoundary": "Identity"}, "conditions": map[string]any{"constructor": 1}, "toString": "x"}))},
		// Hub data written to hurt: no view, or one that reads only through Argo CD's API.
		"hostile application": map[string]any{"application": map[string]any{"metadata": map[string]any{"name": "registry-x", "labels": map[string]any{"spokeforge.io/cluster": "__proto__"}},
			"status": map[string]any{"resources": map[string]any{"0": map[string]any{"kind": "Application", "name": "spoke-__proto__"}}}}},
		"cluster name with slashes": map[string]any{"application": map[string]any{"metadata": map[string]any{"name": "registry-x", "namespace": "argocd",
			"labels": map[string]any{"spokeforge.io/cluster": "x/../../settings"}},
			"status": map[string]any{"resources": []any{map[string]any{"group": "argoproj.io", "kind": "Application", "name": "spoke-x/../../settings", "namespace": "argocd"}}}}},
		"closed while reading": map[string]any{"application": registry(labelled), "routes": map[string]any{url(appGET): map[string]any{"status": 200, "body": js(spokeApp), "hold": true}},
			"closeEarly": true},
	}
	var got struct {
		Registered  string
		LateUpdates int
		Runs        map[string]struct {
			Display                        bool
			First, Text, Refreshed, Update string
			Timers                         []int
			TimersAfterClose               int
			Requests                       []string
			Threw                          string
		}
	}
	runHarness(t, node, react19UI(4).prelude+`
require(process.argv[2]);
const view = ui.appViews[0];
(async () => {
  const out = {registered: ui.registered.join('; '), runs: {}};
  for (const [name, sc] of Object.entries(JSON.parse(process.argv[3]))) {
    const r = out.runs[name] = {requests: []};
    ui.requests = r.requests;
    ui.routes = sc.routes || {};
    ui.timers.clear();
    try {
      r.display = view.shouldDisplay(sc.application);
      if (!r.display) continue;
      const root = ui.mount(view.component, {application: sc.application, tree: sc.tree || {nodes: []}});
      r.first = root.render();
      if (!sc.closeEarly) {
        await ui.settle();
        r.text = root.render();
        r.timers = [...ui.timers.values()].map((t) => t.ms);
        if (sc.later) ui.routes = sc.later;
        ui.fireTimers();
        await ui.settle();
        r.refreshed = root.render();
        if (sc.update) {
          root.update({application: sc.update, tree: sc.updateTree || {nodes: []}});
          await ui.settle();
          r.update = root.render();
        }
      }
      root.unmount();
      ui.release();
      await ui.settle();
      r.timersAfterClose = ui.timers.size;
    } catch (e) {
      r.threw = String(e && e.stack || e);
    }
  }
  out.lateUpdates = ui.lateUpdates;
  console.log(JSON.stringify(out));
})();
`, scenarios, &got)
	if got.Registered != tabRegistration+"; "+appViewRegistration {
		t.Errorf("registered %q", got.Registered)
	}
	if got.LateUpdates != 0 {
		t.Errorf("%d state updates after a view was closed", got.LateUpdates)
	}
	if len(got.Runs) != len(scenarios) {
		t.Fatalf("ran %d scenarios, want %d", len(got.Runs), len(scenarios))
	}
	const ladder = "BoundaryStateReasonEvidenceSince"
	for name, want := range map[string]struct {
		display   bool
		requests  []string
		text      []string // in the view after the first read
		refreshed []string // after the 15 s refresh
		update    []string // after the app-of-apps changed
		unwanted  []string // in any of them
	}{
		"app of apps": {display: true, requests: []string{appGET, resourceGET, resourceGET, appGET, resourceGET},
			text: []string{"Onboarding managed by Application spoke-gpu-east-1 (the spoke Application of registry-gpu-east-1), read ",
				"Onboarding gpu-east-1", "First failed boundary: Certificates (StaleCertificateRequest)", "run cmctl renew -n inference x", ladder, "CertificatesFailed"},
			refreshed: []string{"all onboarding contracts hold", "Onboarding gpu-east-1last checked"},
			update:    []string{"all onboarding contracts hold"},
			unwanted:  []string{"Cannot read"}},
		"spoke application": {display: true, requests: []string{resourceGET, resourceGET},
			text:     []string{"Onboarding managed by Application spoke-gpu-east-1, read ", "First failed boundary: Certificates", ladder},
			unwanted: []string{"the spoke Application of", "Cannot read"}},
		"workload application":           {},
		"app of apps without its label":  {},
		"app of apps of another cluster": {},
		"forbidden": {display: true, requests: []string{appGET, appGET},
			text:     []string{"Cannot read the Onboarding: Argo CD answered HTTP 403: permission denied: applications, get, default/spoke-gpu-east-1."},
			unwanted: []string{ladder, ", read "}},
		"no Onboarding yet": {display: true, requests: []string{appGET, appGET},
			text: []string{"Cannot read the Onboarding: Application spoke-gpu-east-1 manages no spokeforge.io Onboarding gpu-east-1 yet."}, unwanted: []string{ladder}},
		// Other Onboardings listed before the cluster's own: only gpu-east-1, cluster-scoped, is read.
		"decoys listed first": {display: true, requests: []string{appGET, resourceGET, resourceGET},
			text:     []string{"Onboarding gpu-east-1", "First failed boundary: Certificates (StaleCertificateRequest)", ladder},
			unwanted: []string{"all onboarding contracts hold", "Cannot read"}},
		"spoke application with decoys first": {display: true, requests: []string{resourceGET, resourceGET},
			text:     []string{"Onboarding managed by Application spoke-gpu-east-1, read ", "First failed boundary: Certificates", ladder},
			unwanted: []string{"all onboarding contracts hold", "Cannot read"}},
		"only decoys": {display: true, requests: []string{appGET, appGET},
			text: []string{"Cannot read the Onboarding: Application spoke-gpu-east-1 manages no spokeforge.io Onboarding gpu-east-1 yet."}, unwanted: []string{ladder}},
		"spoke application with only decoys":      {},
		"workload application with an Onboarding": {},
		"not JSON": {display: true, requests: []string{appGET, appGET},
			text: []string{"Cannot read the Onboarding: Argo CD's answer is not JSON."}, unwanted: []string{ladder, "<html>"}},
		"manifest broken": {display: true, requests: []string{appGET, resourceGET, appGET, resourceGET},
			text: []string{"Cannot read the Onboarding: the Onboarding's manifest is not JSON."}, unwanted: []string{ladder}},
		"network down": {display: true, requests: []string{appGET, appGET},
			text: []string{"Cannot read the Onboarding: Failed to fetch."}, unwanted: []string{ladder}},
		"error after a read": {display: true, requests: []string{appGET, resourceGET, resourceGET},
			text:      []string{ladder, "First failed boundary: Certificates"},
			refreshed: []string{"Cannot read the Onboarding: Argo CD answered HTTP 500: cluster unreachable.", ladder, "First failed boundary: Certificates"}},
		"hostile status": {display: true, requests: []string{appGET, resourceGET, resourceGET},
			text:     []string{"Cannot read this status: status.conditions is not a list.", ladder},
			unwanted: []string{"[object ", "function ", "[native code]", "undefined", "First failed boundary: Identity"}},
		"hostile application": {},
		"cluster name with slashes": {display: true, requests: []string{"GET " + api + "spoke-x%2F..%2F..%2Fsettings?appNamespace=argocd same-origin",
			"GET " + api + "spoke-x%2F..%2F..%2Fsettings?appNamespace=argocd same-origin"},
			text: []string{"Cannot read the Onboarding: Argo CD answered HTTP 404: not found."}},
		"closed while reading": {display: true, requests: []string{appGET}},
	} {
		run, found := got.Runs[name]
		switch {
		case !found:
			t.Errorf("%s: not run", name)
			continue
		case run.Threw != "":
			t.Errorf("%s: threw %s", name, run.Threw)
			continue
		case run.Display != want.display:
			t.Errorf("%s: shown %v, want %v", name, run.Display, want.display)
		case !slices.Equal(run.Requests, want.requests):
			t.Errorf("%s: requests\n%s\nwant\n%s", name, strings.Join(run.Requests, "\n"), strings.Join(want.requests, "\n"))
		}
		if !want.display {
			continue
		}
		if !strings.Contains(run.First, "Reading the Onboarding through Argo CD's API") {
			t.Errorf("%s: before the first read: %s", name, run.First)
		}
		if run.TimersAfterClose != 0 {
			t.Errorf("%s: %d timers left after the view was closed", name, run.TimersAfterClose)
		}
		if name == "closed while reading" {
			continue
		}
		if !slices.Equal(run.Timers, []int{15000}) {
			t.Errorf("%s: timers after the first read %v, want one of 15 s", name, run.Timers)
		}
		for _, c := range []struct {
			what, text string
			wants      []string
		}{{"first read", run.Text, want.text}, {"refresh", run.Refreshed, want.refreshed}, {"update", run.Update, want.update}} {
			for _, w := range c.wants {
				if !strings.Contains(c.text, w) {
					t.Errorf("%s: after the %s, the view lacks %q:\n%s", name, c.what, w, c.text)
				}
			}
			for _, w := range want.unwanted {
				if c.text != "" && strings.Contains(c.text, w) {
					t.Errorf("%s: after the %s, the view shows %q:\n%s", name, c.what, w, c.text)
				}
			}
		}
	}
}

// uiShape is one shape of the globals the extension meets in Argo CD's UI: prelude, JavaScript
// run before the extension, sets window.React and window.extensionsAPI and defines ui, with
// ui.registered (what the extension registered) and ui.tab(resource) (the Contracts tab of that
// live object, as text). registered is what the extension must register in it.
type uiShape struct {
	name, prelude, registered string
}

const (
	tabRegistration     = "resource spokeforge.io Onboarding Contracts fa-list-ol"
	appViewRegistration = "appView Contracts fa-list-ol function"
)

// legacyUI is the React the tests have always used: createElement calls a function component at
// once and returns {type, props, children}; extensionsAPI has registerResourceExtension only. The
// strict one throws where React would (a plain object as a child, a non-string style value or
// text attribute, a list child without a key, two siblings with one key).
func legacyUI(strict bool) uiShape {
	shape := uiShape{name: "legacy", registered: tabRegistration, prelude: `
const ui = {registered: []};
global.window = {
  React: {createElement: (type, props, ...children) => typeof type === 'function' ? type({...props, children}) : {type, props, children}},
  extensionsAPI: {registerResourceExtension: (c, group, kind, title, opts) => { ui.c = c; ui.registered.push(['resource', group, kind, title, opts && opts.icon].join(' ')); }},
};
const text = (n) => n == null || n === false ? '' : typeof n !== 'object' ? String(n) : Array.isArray(n) ? n.map(text).join('') : text(n.children);
ui.tab = (resource) => text(ui.c({resource}));
`}
	if !strict {
		return shape
	}
	shape.name = "legacy strict"
	shape.prelude = `
const ui = {registered: []};
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
  extensionsAPI: {registerResourceExtension: (c, group, kind, title, opts) => { ui.c = c; ui.registered.push(['resource', group, kind, title, opts && opts.icon].join(' ')); }},
};
const text = (n) => n == null || n === false ? '' : typeof n !== 'object' ? String(n) : Array.isArray(n) ? n.map(text).join('') : text(n.children);
ui.tab = (resource) => text(ui.c({resource}));
`
	return shape
}

// react19UI is Argo CD v3.5+'s UI (React 19) with an extensionsAPI whose registerAppViewExtension
// takes appViewParams parameters: 4 (with shouldDisplay) as in v3.4 and v3.6, 3 as in v3.2, where
// the extension must not register the app view.
func react19UI(appViewParams int) uiShape {
	shape := uiShape{name: fmt.Sprintf("react19, registerAppViewExtension/%d", appViewParams), registered: tabRegistration,
		prelude: fmt.Sprintf("const APP_VIEW_PARAMS = %d;\n", appViewParams) + react19StandIn}
	if appViewParams >= 4 {
		shape.registered += "; " + appViewRegistration
	}
	return shape
}

// runTabs renders the Contracts tab of each case's live object under shape; a case that threw
// reads "THREW: <error>". "registered" is what the extension registered.
func runTabs(t *testing.T, node string, shape uiShape, cases map[string]any) map[string]string {
	t.Helper()
	var got map[string]string
	runHarness(t, node, shape.prelude+`
require(process.argv[2]);
const out = {registered: ui.registered.join('; ')};
for (const [name, resource] of Object.entries(JSON.parse(process.argv[3]))) {
  try { out[name] = ui.tab(resource); } catch (e) { out[name] = 'THREW: ' + e.message; }
}
console.log(JSON.stringify(out));
`, cases, &got)
	return got
}

// runHarness runs the node harness script on the extension with cases, as JSON, and decodes
// what it printed into out.
func runHarness(t *testing.T, node, harness string, cases, out any) {
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
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
}

// react19StandIn is the JavaScript of react19UI, after its APP_VIEW_PARAMS.
const react19StandIn = `// A stand-in for the globals of Argo CD v3.5+'s UI (ui/src/app/index.tsx, extensions-service.ts):
// React 19, which creates elements lazily and renders them later, as React does, and rejects what
// React 19 removed or never allowed: string refs; defaultProps, propTypes and legacy context on a
// component; createFactory, createClass and PropTypes on React; render, hydrate, findDOMNode and
// unmountComponentAtNode on ReactDOM; an element made by another React (a bundled jsx-runtime) or
// any other object as a child; hooks outside a component or in a changed order. Stricter than
// React where a mistake would only warn: a list child without a key, two siblings with one key,
// a style value or text attribute of the wrong type. extensionsAPI has registerAppViewExtension
// with APP_VIEW_PARAMS parameters (4 from v3.4, 3 in v3.2 and older), and fetch, timers and
// document.baseURI are fakes the app view tests drive.
const ELEMENT = Symbol.for('react.transitional.element');
const LEGACY_ELEMENT = Symbol.for('react.element');
const FRAGMENT = Symbol.for('react.fragment');
const positional = new WeakSet(); // children passed as arguments, which need no keys
const isElement = (n) => n !== null && typeof n === 'object' && n.$$typeof === ELEMENT;
const removed = (what) => { throw new Error('React 19 removed ' + what); };
const ui = {registered: [], tabs: [], appViews: [], requests: [], routes: {}, timers: new Map(), lateUpdates: 0, held: []};

// Hooks: cells by component path and call index.
let rendering = null; // {id, i}
const cells = new Map();
const effects = new Map(); // id#i -> {deps, cleanup}
let queued = [];
const cell = (kind) => {
  if (!rendering) throw new Error('Invalid hook call: ' + kind + ' outside a component');
  const k = rendering.id + '#' + rendering.i++;
  const c = cells.get(k);
  if (c && c.kind !== kind) throw new Error('hooks called in a changed order: ' + c.kind + ' then ' + kind);
  return [k, c];
};
const mounted = new Set();
const React = {
  version: '19.2.6',
  Fragment: FRAGMENT,
  Component: class Component {},
  createElement(type, config, ...children) {
    if (typeof type !== 'string' && typeof type !== 'function' && type !== FRAGMENT) throw new Error('Element type is invalid: ' + String(type));
    if (typeof type === 'function') {
      for (const k of ['defaultProps', 'propTypes', 'contextTypes', 'childContextTypes']) if (type[k] !== undefined) removed(k + ' on ' + (type.name || 'a component'));
    }
    const props = {};
    let key = null;
    if (config != null) {
      for (const k of Object.keys(config)) {
        if (k === 'key') { if (config.key !== undefined) key = '' + config.key; } else props[k] = config[k];
      }
      if (typeof props.ref === 'string') removed('string refs (ref="' + props.ref + '")');
    }
    if (children.length === 1) props.children = children[0];
    else if (children.length > 1) { positional.add(children); props.children = children; }
    return Object.freeze({$$typeof: ELEMENT, type, key, props: Object.freeze(props)});
  },
  useState(init) {
    const [k, c] = cell('state');
    if (!c) cells.set(k, {kind: 'state', value: typeof init === 'function' ? init() : init});
    const set = (v) => {
      if (!mounted.has(k.match(/^root[0-9]+/)[0])) { ui.lateUpdates++; return; }
      const cur = cells.get(k);
      cur.value = typeof v === 'function' ? v(cur.value) : v;
    };
    return [cells.get(k).value, set];
  },
  useEffect(fn, deps) {
    const [k, c] = cell('effect');
    const changed = !c || deps === undefined || c.deps === undefined || deps.length !== c.deps.length || deps.some((d, i) => !Object.is(d, c.deps[i]));
    cells.set(k, {kind: 'effect', deps});
    if (changed) queued.push([k, fn]);
  },
  useRef(v) {
    const [k, c] = cell('ref');
    if (!c) cells.set(k, {kind: 'ref', value: {current: v}});
    return cells.get(k).value;
  },
};
for (const k of ['createFactory', 'createClass', 'PropTypes', 'render', 'findDOMNode']) Object.defineProperty(React, k, {get: () => removed('React.' + k)});
const ReactDOM = {createRoot: () => ({render() {}, unmount() {}}), flushSync: (f) => f()};
for (const k of ['render', 'hydrate', 'findDOMNode', 'unmountComponentAtNode', 'unstable_renderSubtreeIntoContainer']) Object.defineProperty(ReactDOM, k, {get: () => removed('ReactDOM.' + k)});

const TEXT_PROPS = ['className', 'title', 'data-boundary', 'data-state', 'data-result', 'data-source'];
const renderNode = (n, path) => {
  if (n == null || typeof n === 'boolean') return '';
  if (typeof n === 'string') return n;
  if (typeof n === 'number') return String(n);
  if (Array.isArray(n)) {
    if (!positional.has(n)) {
      const keys = new Set();
      for (const c of n) {
        if (!isElement(c)) continue;
        if (c.key === null) throw new Error('each child in a list needs a key (under ' + path + ')');
        if (keys.has(c.key)) throw new Error('two children with the key ' + JSON.stringify(c.key));
        keys.add(c.key);
      }
    }
    return n.map((c, i) => renderNode(c, path + '/' + (isElement(c) && c.key !== null ? 'k' + c.key : i))).join('');
  }
  if (typeof n === 'object' && n.$$typeof === LEGACY_ELEMENT) throw new Error('Objects are not valid as a React child: an element of another React (a bundled jsx-runtime)');
  if (!isElement(n)) throw new Error('Objects are not valid as a React child (found: ' + (typeof n === 'object' ? 'object with keys {' + Object.keys(n).join(', ') + '}' : typeof n) + ')');
  const {type, props} = n;
  if (type === FRAGMENT) return renderNode(props.children, path);
  if (typeof type === 'function') {
    const id = path + ':' + (type.name || 'component');
    rendering = {id, i: 0};
    let out;
    try { out = type(props); } finally { rendering = null; }
    return renderNode(out, id);
  }
  const p = props;
  if ('dangerouslySetInnerHTML' in p) throw new Error('dangerouslySetInnerHTML');
  if (p.style !== undefined && (p.style === null || typeof p.style !== 'object')) throw new Error('the style prop expects an object');
  for (const [k, v] of Object.entries(p.style || {})) if (v !== undefined && typeof v !== 'string' && typeof v !== 'number') throw new Error('style ' + k + ' is a ' + typeof v);
  for (const k of TEXT_PROPS) if (k in p && typeof p[k] !== 'string') throw new Error(k + ' is a ' + typeof p[k]);
  return renderNode(p.children, path + '/' + type);
};
let roots = 0;
ui.mount = (Component, props) => {
  const root = 'root' + roots++;
  mounted.add(root);
  let current = props;
  const commit = () => {
    const run = queued;
    queued = [];
    for (const [k, fn] of run) {
      const prev = effects.get(k);
      if (prev && typeof prev.cleanup === 'function') prev.cleanup();
      const cleanup = fn();
      if (cleanup !== undefined && typeof cleanup !== 'function') throw new Error('an effect returned a ' + typeof cleanup);
      effects.set(k, {cleanup});
    }
  };
  const mine = (k) => k.startsWith(root + '/') || k.startsWith(root + ':');
  const render = () => {
    const text = renderNode(React.createElement(Component, current), root);
    commit();
    return text;
  };
  return {
    render,
    update(p) { current = p; return render(); },
    unmount() {
      mounted.delete(root);
      for (const [k, e] of effects) if (mine(k)) { if (typeof e.cleanup === 'function') e.cleanup(); effects.delete(k); }
      for (const k of cells.keys()) if (mine(k)) cells.delete(k);
    },
  };
};

// What the UI calls: the resource tab rendered by React as a component of the resource panel.
ui.tab = (resource) => {
  const root = ui.mount(ui.tabs[0], {resource, tree: {nodes: []}, application: {metadata: {name: 'spoke-gpu-east-1', namespace: 'argocd'}}});
  try { return root.render(); } finally { root.unmount(); }
};
ui.settle = async () => { for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r)); };
ui.fireTimers = () => { const due = [...ui.timers.values()]; ui.timers.clear(); due.forEach((t) => t.fn()); };
ui.release = () => { const h = ui.held; ui.held = []; h.forEach((f) => f()); };

let timerIDs = 0;
global.window = {
  React,
  ReactDOM,
  ReactJSXRuntime: {jsx: () => removed('nothing: the extension must not need jsx'), jsxs: () => removed('nothing')},
  extensionsAPI: {
    registerResourceExtension(component, group, kind, tabTitle, opts) {
      ui.tabs.push(component);
      ui.registered.push(['resource', group, kind, tabTitle, opts && opts.icon].join(' '));
    },
    registerSystemLevelExtension() { ui.registered.push('systemLevel'); },
    registerStatusPanelExtension() { ui.registered.push('statusPanel'); },
    registerTopBarActionMenuExt() { ui.registered.push('topBar'); },
    registerAppViewExtension: APP_VIEW_PARAMS >= 4
      ? function registerAppViewExtension(component, title, icon, shouldDisplay) {
        ui.appViews.push({component, title, icon, shouldDisplay: shouldDisplay || (() => true)});
        ui.registered.push(['appView', title, icon, typeof shouldDisplay].join(' '));
      }
      : function registerAppViewExtension(component, title, icon) {
        ui.appViews.push({component, title, icon, shouldDisplay: () => true});
        ui.registered.push(['appView', title, icon].join(' '));
      },
  },
  document: {baseURI: 'http://hub.example/argo/'},
  fetch(url, opts) {
    if (this !== window) throw new TypeError('Illegal invocation'); // the browser's fetch needs window as this
    const o = opts || {};
    ui.requests.push([o.method || 'GET', String(url), o.credentials || ''].join(' '));
    const route = Object.prototype.hasOwnProperty.call(ui.routes, String(url)) ? ui.routes[String(url)] : {status: 404, body: '{"message":"not found"}'};
    if (route.status === 0) return Promise.reject(new TypeError('Failed to fetch'));
    const res = {ok: route.status >= 200 && route.status < 300, status: route.status, text: () => Promise.resolve(route.body)};
    if (!route.hold) return Promise.resolve(res);
    return new Promise((resolve) => ui.held.push(() => resolve(res)));
  },
  setTimeout(fn, ms) { const id = ++timerIDs; ui.timers.set(id, {fn, ms}); return id; },
  clearTimeout(id) { ui.timers.delete(id); },
};
`
