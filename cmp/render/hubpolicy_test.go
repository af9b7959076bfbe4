package render_test

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/spokeforge/spokeforge/cmp/render"
	"github.com/spokeforge/spokeforge/internal/repo"
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
func hubLocal(t *testing.T) []render.Object {
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
	var out []map[string]any
	for _, o := range base {
		out = append(out, o.Obj)
	}
	if err := render.CheckSpokeOnHub("clusters/hub-local/cluster.yaml", "the record", base, out, "argocd"); err != nil {
		t.Fatal(err)
	}
}

// TestHubPolicyPodKinds: every pod-bearing kind is checked at its real pod
// template path, containers, initContainers and ephemeralContainers alike.
func TestHubPolicyPodKinds(t *testing.T) {
	pod := "{containers: [{name: c, image: x}], initContainers: [{name: i, image: x, securityContext: {privileged: true}}]}"
	for _, tc := range []struct{ name, obj, want string }{
		{"Pod", "{apiVersion: v1, kind: Pod, metadata: {name: p, namespace: tools}, spec: " + pod + "}", "spec.initContainers[0].securityContext.privileged"},
		{"Deployment", "{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, namespace: tools}, spec: {template: {spec: " + pod + "}}}", "spec.template.spec.initContainers[0]"},
		{"DaemonSet", "{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: d, namespace: tools}, spec: {template: {spec: " + pod + "}}}", "spec.template.spec.initContainers[0]"},
		{"StatefulSet", "{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: d, namespace: tools}, spec: {template: {spec: " + pod + "}}}", "spec.template.spec.initContainers[0]"},
		{"ReplicaSet", "{apiVersion: apps/v1, kind: ReplicaSet, metadata: {name: d, namespace: tools}, spec: {template: {spec: " + pod + "}}}", "spec.template.spec.initContainers[0]"},
		{"ReplicationController", "{apiVersion: v1, kind: ReplicationController, metadata: {name: d, namespace: tools}, spec: {template: {spec: " + pod + "}}}", "spec.template.spec.initContainers[0]"},
		{"Job", "{apiVersion: batch/v1, kind: Job, metadata: {name: j, namespace: tools}, spec: {template: {spec: " + pod + "}}}", "spec.template.spec.initContainers[0]"},
		{"CronJob", "{apiVersion: batch/v1, kind: CronJob, metadata: {name: j, namespace: tools}, spec: {jobTemplate: {spec: {template: {spec: " + pod + "}}}}}", "spec.jobTemplate.spec.template.spec.initContainers[0]"},
		{"ephemeral", "{apiVersion: v1, kind: Pod, metadata: {name: p, namespace: tools}, spec: {containers: [{name: c}], ephemeralContainers: [{name: e, securityContext: {capabilities: {add: [NET_ADMIN]}}}]}}", "capability NET_ADMIN"},
		{"hostPath", "{apiVersion: v1, kind: Pod, metadata: {name: p, namespace: tools}, spec: {containers: [{name: c}], volumes: [{name: v, hostPath: {path: /etc}}]}}", "host path /etc"},
		{"hostNetwork", "{apiVersion: v1, kind: Pod, metadata: {name: p, namespace: tools}, spec: {hostNetwork: true, containers: [{name: c}]}}", "spec.hostNetwork: true"},
		{"Namespace kube-system", "{apiVersion: v1, kind: Namespace, metadata: {name: kube-system}}", "Kubernetes system namespace"},
		{"custom Argo namespace", "{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: gitops}}", "Argo CD's namespace"},
		{"argocd", "{apiVersion: v1, kind: ConfigMap, metadata: {name: argocd-cm, namespace: argocd}}", "Argo CD's namespace"},
		{"not a component in spokeforge-system", "{apiVersion: v1, kind: Secret, metadata: {name: aws-credentials, namespace: spokeforge-system}}", "spokeforge's own namespace"},
		{"PersistentVolume hostPath", "{apiVersion: v1, kind: PersistentVolume, metadata: {name: pv}, spec: {hostPath: {path: /}}}", "spec.hostPath"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := render.CheckSpokeOnHub("k.yaml", "the overlay", nil, []map[string]any{obj(t, tc.obj)}, "gitops")
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "management cluster") {
				t.Fatalf("got %v, want a refusal naming %q", err, tc.want)
			}
		})
	}
	ok := obj(t, "{apiVersion: v1, kind: Pod, metadata: {name: p, namespace: tools}, spec: {containers: [{name: c, securityContext: {capabilities: {add: [NET_BIND_SERVICE]}}}]}}")
	if err := render.CheckSpokeOnHub("k.yaml", "the overlay", nil, []map[string]any{ok}, "argocd"); err != nil {
		t.Fatal(err)
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
