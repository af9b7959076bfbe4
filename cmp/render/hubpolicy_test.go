package render_test

import (
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/spokeforge/spokeforge/cmp/render"
	"github.com/spokeforge/spokeforge/internal/api/v1alpha1"
	"github.com/spokeforge/spokeforge/internal/repo"
	"github.com/spokeforge/spokeforge/internal/validate"
)

func obj(t *testing.T, y string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(y), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// hubLocal is the example inCluster record's spoke render.
func hubLocal(t testing.TB) []render.Object {
	t.Helper()
	e, errs := repo.LoadCluster(exampleRepo+"/clusters/hub-local", "clusters/hub-local")
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	objs, err := render.Spoke(e, render.Options{Image: "ghcr.io/spokeforge/spokeforge:v1", ESOVersion: "external-secrets.io/v1", ArgoNamespace: "argocd"})
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// TestHubPolicyBase: spokeforge's own render of an inCluster record passes.
func TestHubPolicyBase(t *testing.T) {
	base := hubLocal(t)
	if err := render.CheckSpokeOnHub("clusters/hub-local/cluster.yaml", "", base, objects(base), "argocd"); err != nil {
		t.Fatal(err)
	}
}

func objects(base []render.Object) []map[string]any {
	var out []map[string]any
	for _, o := range base {
		out = append(out, o.Obj)
	}
	return out
}

// copyObj is a deep copy, through JSON.
func copyObj(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestHubPolicyDefaultDeny: on the management cluster, the objects that
// land are exactly spokeforge's render. Every class of pod field, a
// Namespace's labels, an added object of any kind and a removed one are
// refused alike; none is named in a list of what is forbidden.
func TestHubPolicyDefaultDeny(t *testing.T) {
	podPatches := map[string]string{
		"lifecycle hook":        `{"containers":[{"name":"agent","lifecycle":{"postStart":{"exec":{"command":["sh","-c","id"]}}}}]}`,
		"exec probe":            `{"containers":[{"name":"agent","livenessProbe":{"exec":{"command":["sh"]}}}]}`,
		"environment":           `{"containers":[{"name":"agent","env":[{"name":"HTTPS_PROXY","value":"http://attacker:3128"}]}]}`,
		"env from":              `{"containers":[{"name":"agent","envFrom":[{"secretRef":{"name":"argocd-secret"}}]}]}`,
		"host aliases":          `{"hostAliases":[{"ip":"10.0.0.66","hostnames":["sts.amazonaws.com"]}]}`,
		"downward-API trust":    `{"volumes":[{"name":"ca","downwardAPI":{"items":[{"path":"ca.crt","fieldRef":{"fieldPath":"metadata.annotations['ca']"}}]}}]}`,
		"projected token":       `{"volumes":[{"name":"t","projected":{"sources":[{"serviceAccountToken":{"path":"t","audience":"sts.amazonaws.com"}}]}}]}`,
		"nfs volume":            `{"volumes":[{"name":"n","nfs":{"server":"10.0.0.1","path":"/"}}]}`,
		"selinux":               `{"securityContext":{"seLinuxOptions":{"type":"spc_t"}}}`,
		"seccomp unconfined":    `{"securityContext":{"seccompProfile":{"type":"Unconfined"}}}`,
		"apparmor unconfined":   `{"securityContext":{"appArmorProfile":{"type":"Unconfined"}}}`,
		"sysctls":               `{"securityContext":{"sysctls":[{"name":"kernel.shm_rmid_forced","value":"0"}]}}`,
		"run as root":           `{"securityContext":{"runAsNonRoot":false,"runAsUser":0}}`,
		"node name":             `{"nodeName":"control-plane-1"}`,
		"tolerations":           `{"tolerations":[{"operator":"Exists"}]}`,
		"dns config":            `{"dnsPolicy":"None","dnsConfig":{"nameservers":["10.0.0.66"]}}`,
		"share process":         `{"shareProcessNamespace":true}`,
		"automount token":       `{"automountServiceAccountToken":true}`,
		"runtime class":         `{"runtimeClassName":"unsandboxed"}`,
		"priority class":        `{"priorityClassName":"system-node-critical"}`,
		"scheduler":             `{"schedulerName":"attacker"}`,
		"image pull secret":     `{"imagePullSecrets":[{"name":"argocd-repo-creds"}]}`,
		"container working dir": `{"containers":[{"name":"agent","workingDir":"/proc/1/root"}]}`,
	}
	base := hubLocal(t)
	agent := -1
	namespace := -1
	for i, o := range base {
		md, _ := o.Obj["metadata"].(map[string]any)
		switch {
		case o.Obj["kind"] == "Deployment" && md["name"] == "spokeforge-agent":
			agent = i
		case o.Obj["kind"] == "Namespace" && md["name"] == "platform":
			namespace = i
		}
	}
	if agent < 0 || namespace < 0 {
		t.Fatal("the example inCluster record renders no agent or no platform Namespace")
	}
	type change struct {
		name, want string
		edit       func(out []map[string]any) []map[string]any
	}
	var changes []change
	for name, patch := range podPatches {
		changes = append(changes, change{"pod " + name, "changes Deployment spokeforge-system/spokeforge-agent", func(out []map[string]any) []map[string]any {
			var p map[string]any
			if err := json.Unmarshal([]byte(patch), &p); err != nil {
				t.Fatal(err)
			}
			spec := out[agent]["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
			for k, v := range p {
				if k == "containers" {
					c := spec["containers"].([]any)[0].(map[string]any)
					for ck, cv := range v.([]any)[0].(map[string]any) {
						c[ck] = cv
					}
					continue
				}
				spec[k] = v
			}
			return out
		}})
	}
	changes = append(changes,
		change{"namespace pod security", "changes Namespace platform", func(out []map[string]any) []map[string]any {
			out[namespace]["metadata"].(map[string]any)["labels"].(map[string]any)["pod-security.kubernetes.io/enforce"] = "privileged"
			return out
		}},
		change{"an added annotation", "changes Namespace platform", func(out []map[string]any) []map[string]any {
			out[namespace]["metadata"].(map[string]any)["annotations"].(map[string]any)["scheduler.alpha.kubernetes.io/node-selector"] = "role=control-plane"
			return out
		}},
		change{"removed object", "removes Deployment spokeforge-system/spokeforge-agent", func(out []map[string]any) []map[string]any {
			return append(out[:agent:agent], out[agent+1:]...)
		}},
		change{"duplicated object", "adds Deployment spokeforge-system/spokeforge-agent", func(out []map[string]any) []map[string]any {
			return append(out, out[agent])
		}},
	)
	for _, added := range []string{
		"{apiVersion: v1, kind: Pod, metadata: {name: p, namespace: platform}, spec: {containers: [{name: c, image: x}]}}",
		"{apiVersion: v1, kind: PersistentVolume, metadata: {name: pv}, spec: {local: {path: /dev/sda}}}",
		"{apiVersion: nfd.k8s-sigs.io/v1alpha1, kind: NodeFeatureRule, metadata: {name: taint}, spec: {rules: []}}",
		"{apiVersion: external-secrets.io/v1, kind: SecretStore, metadata: {name: s, namespace: platform}, spec: {provider: {kubernetes: {}}}}",
		"{apiVersion: v1, kind: ConfigMap, metadata: {name: argocd-cm, namespace: argocd}}",
		"{apiVersion: v1, kind: Namespace, metadata: {name: tools, labels: {pod-security.kubernetes.io/enforce: privileged}}}",
	} {
		changes = append(changes, change{"added " + added, "adds ", func(out []map[string]any) []map[string]any {
			return append(out, obj(t, added))
		}})
	}
	for _, tc := range changes {
		t.Run(tc.name, func(t *testing.T) {
			var out []map[string]any
			for _, o := range base {
				out = append(out, copyObj(t, o.Obj))
			}
			err := render.CheckSpokeOnHub("clusters/hub-local/cluster.yaml", "clusters/hub-local/kustomization.yaml", base, tc.edit(out), "argocd")
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "management cluster") ||
				!strings.HasPrefix(err.Error(), "clusters/hub-local/kustomization.yaml: the overlay") {
				t.Fatalf("got %v, want a refusal of the overlay naming %q", err, tc.want)
			}
		})
	}
}

// TestHubPolicyKinds: whatever the record checks let through, spokeforge's
// render of it lands on the hub only with kinds hubpolicy lists, outside
// the platform namespaces.
func TestHubPolicyKinds(t *testing.T) {
	for _, tc := range []struct{ name, obj, want string }{
		{"PersistentVolume", "{apiVersion: v1, kind: PersistentVolume, metadata: {name: pv}, spec: {local: {path: /dev/sda}}}", "renders PersistentVolume pv, a kind the management cluster takes from no record"},
		{"StorageClass", "{apiVersion: storage.k8s.io/v1, kind: StorageClass, metadata: {name: sc}}", "renders StorageClass sc"},
		{"NodeFeatureRule", "{apiVersion: nfd.k8s-sigs.io/v1alpha1, kind: NodeFeatureRule, metadata: {name: spokeforge-gpu}}", "renders NodeFeatureRule spokeforge-gpu"},
		{"Namespace kube-system", "{apiVersion: v1, kind: Namespace, metadata: {name: kube-system}}", "Kubernetes system namespace"},
		{"custom Argo namespace", "{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: gitops}}", "Argo CD's namespace"},
		{"argocd", "{apiVersion: v1, kind: ConfigMap, metadata: {name: argocd-cm, namespace: argocd}}", "Argo CD's namespace"},
		{"external-secrets", "{apiVersion: external-secrets.io/v1, kind: ExternalSecret, metadata: {name: e, namespace: external-secrets}}", "platform namespace"},
		{"not a component in spokeforge-system", "{apiVersion: v1, kind: ConfigMap, metadata: {name: aws-credentials, namespace: spokeforge-system}}", "spokeforge's own namespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := obj(t, tc.obj)
			err := render.CheckSpokeOnHub("clusters/x/cluster.yaml", "", []render.Object{{Obj: o}}, []map[string]any{o}, "gitops")
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "clusters/x/cluster.yaml: the record") {
				t.Fatalf("got %v, want a refusal of the record naming %q", err, tc.want)
			}
		})
	}
}

// TestHubOutput: hub-mode Applications never send workloads into the hub's
// system namespaces, and workload Applications use the org's AppProject.
func TestHubOutput(t *testing.T) {
	app := func(boundary, dest, project string) []render.Object {
		return []render.Object{{Boundary: boundary, Obj: obj(t, "{apiVersion: argoproj.io/v1alpha1, kind: Application, metadata: {name: a, namespace: argocd}, spec: {project: "+project+", destination: "+dest+"}}")}}
	}
	for _, tc := range []struct {
		name   string
		objs   []render.Object
		org    string
		want   string // "" accepts
		argoNS string
	}{
		{name: "workload on the hub in kube-system", objs: app("hub-workloads", "{server: https://kubernetes.default.svc, namespace: kube-system}", "org-acme"), org: "acme", want: "kube-system of the management cluster"},
		{name: "workload on the hub by name in argocd", objs: app("hub-workloads", "{name: in-cluster, namespace: argocd}", "org-acme"), org: "acme", want: "Argo CD's namespace"},
		{name: "workload on the hub in the custom Argo namespace", objs: app("hub-workloads", "{server: https://kubernetes.default.svc/, namespace: gitops}", "org-acme"), org: "acme", argoNS: "gitops", want: "Argo CD's namespace"},
		{name: "workload on the hub in an org's namespace", objs: app("hub-workloads", "{server: https://kubernetes.default.svc, namespace: checkout-rc}", "org-acme"), org: "acme", want: "workload Applications never land there"},
		{name: "workload in project default", objs: app("hub-workloads", "{name: gpu-east-1, namespace: inference}", "default"), org: "acme", want: "AppProject default"},
		{name: "workload without an org", objs: app("hub-workloads", "{name: gpu-east-1, namespace: inference}", "org-"), want: "their org's AppProject"},
		{name: "workload on a spoke in kube-system", objs: app("hub-workloads", "{name: gpu-east-1, namespace: kube-system}", "org-acme"), org: "acme"},
		{name: "spoke Application keeps the record's project", objs: app("hub-spoke", "{server: https://kubernetes.default.svc}", "default")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := tc.argoNS
			if ns == "" {
				ns = "argocd"
			}
			err := render.CheckHubOutput("clusters/x/cluster.yaml", tc.org, tc.objs, ns)
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want a refusal containing %q", err, tc.want)
			}
		})
	}
}

// TestProjectsHoldWithoutRecordChecks: validate refuses an org that lists a
// platform namespace as its own; should one get past it, projects mode
// still gives the org neither a destination nor a Namespace there, and a
// spoke zone's namespace becomes a permitted Namespace only when it is no
// platform or hub namespace.
func TestProjectsHoldWithoutRecordChecks(t *testing.T) {
	r, errs := repo.Load(exampleRepo)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	orgs := append([]validate.OrgEntry(nil), r.Orgs...)
	products := append([]validate.ProductEntry(nil), r.Products...)
	for i, o := range orgs {
		if o.Org.Metadata.Name != "acme" {
			continue
		}
		org := *o.Org
		org.Spec.HubNamespaces = []string{"checkout-rc", "argocd", "gitops", "kube-system", "spokeforge-system", "external-secrets", "cert-manager", "default"}
		orgs[i].Org = &org
	}
	for i, p := range products {
		if p.Org != "acme" {
			continue
		}
		prod := *p.Product
		prod.Spec.Delivery.Zones = []v1alpha1.Zone{
			{Name: "a", Environment: "release", Cluster: "gpu-east-1", Namespace: "kube-system"},
			{Name: "b", Environment: "release", Cluster: "gpu-east-1", Namespace: "checkout-rc"},
			{Name: "c", Environment: "release", Cluster: "gpu-east-1", Namespace: "gitops"},
			{Name: "d", Environment: "release", Cluster: "gpu-east-1", Namespace: "shop"},
		}
		products[i].Product = &prod
	}
	objs, err := render.Projects(r.Clusters, orgs, products, render.Options{ArgoNamespace: "gitops"})
	if err != nil {
		t.Fatal(err)
	}
	var namespaces []string
	var project map[string]any
	for _, o := range objs {
		md := o.Obj["metadata"].(map[string]any)
		switch o.Obj["kind"] {
		case "Namespace":
			namespaces = append(namespaces, md["name"].(string))
		case "AppProject":
			if md["name"] == "org-acme" {
				project = o.Obj
			}
		}
	}
	if strings.Join(namespaces, ",") != "checkout-rc" {
		t.Errorf("Namespaces %v, want checkout-rc alone", namespaces)
	}
	spec := project["spec"].(map[string]any)
	dest, _ := json.Marshal(spec["destinations"])
	if want := `[{"namespace":"checkout-rc","server":"https://kubernetes.default.svc"},{"name":"gpu-east-1","namespace":"*"}]`; string(dest) != want {
		t.Errorf("destinations %s, want %s", dest, want)
	}
	crw, _ := json.Marshal(spec["clusterResourceWhitelist"])
	if want := `[{"group":"","kind":"Namespace","name":"shop"}]`; string(crw) != want {
		t.Errorf("clusterResourceWhitelist %s, want %s", crw, want)
	}
}

// FuzzHubPolicyExact: whatever one field of one object an overlay sets
// (path and value chosen by the fuzzer), what lands on the management
// cluster passes only when it is still exactly spokeforge's render.
func FuzzHubPolicyExact(f *testing.F) {
	f.Add(uint8(0), "spec.template.spec.hostAliases", `[{"ip":"10.0.0.1","hostnames":["sts.amazonaws.com"]}]`)
	f.Add(uint8(3), "metadata.labels.pod-security.kubernetes.io/enforce", `"privileged"`)
	f.Add(uint8(5), "spec.template.spec.securityContext.runAsUser", `0`)
	f.Add(uint8(7), "metadata.name", `"spokeforge-agent"`)
	f.Add(uint8(1), "kind", `"Pod"`)
	base := hubLocal(f)
	f.Fuzz(func(t *testing.T, which uint8, path, value string) {
		var v any
		if json.Unmarshal([]byte(value), &v) != nil || path == "" {
			return
		}
		var out []map[string]any
		for _, o := range base {
			out = append(out, copyObj(t, o.Obj))
		}
		target := out[int(which)%len(out)]
		keys := strings.Split(path, ".")
		m := target
		for _, k := range keys[:len(keys)-1] {
			next, ok := m[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[k] = next
			}
			m = next
		}
		m[keys[len(keys)-1]] = v
		changed := false
		for i, o := range base {
			b, _ := json.Marshal(o.Obj)
			a, _ := json.Marshal(out[i])
			changed = changed || string(a) != string(b)
		}
		err := render.CheckSpokeOnHub("clusters/hub-local/cluster.yaml", "clusters/hub-local/kustomization.yaml", base, out, "argocd")
		if changed && err == nil {
			t.Fatalf("setting %s to %s on object %d landed on the management cluster", path, value, int(which)%len(out))
		}
		if !changed && err != nil {
			t.Fatalf("spokeforge's own render was refused: %v", err)
		}
	})
}
