package render

import (
	"encoding/json"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/spokeforge/spokeforge/internal/names"
	"github.com/spokeforge/spokeforge/internal/validate"
)

// The hub policy: what every object spokeforge puts on the management
// cluster must satisfy, checked on the decoded objects (never on text), in
// render and so in validate, which renders through the same code. It
// covers an inCluster record's spoke render after its overlay
// (CheckSpokeOnHub) and every record's hub-mode output (CheckHubOutput).
// Projects-mode output is AppProjects only, spokeforge's alone, whose deny
// destinations are themselves part of this policy; it has no pods and no
// record-chosen namespaces, so it is not checked again.

// onHub ends every policy message.
const onHub = "on an inCluster record, whose spoke is the management cluster"

// systemComponents are the objects spokeforge itself renders into its
// namespace (spoke.yaml.tmpl): on the management cluster nothing else may
// be placed there.
var systemComponents = map[string]bool{
	"Namespace/" + SystemNamespace:          true,
	"Certificate/workload-identity":         true,
	"ServiceAccount/spokeforge-credentials": true,
	"Role/spokeforge-credentials":           true,
	"RoleBinding/spokeforge-credentials":    true,
	"Deployment/spokeforge-credentials":     true,
	"ServiceAccount/spokeforge-agent":       true,
	"Deployment/spokeforge-agent":           true,
}

// fixedSpecKinds keep their rendered spec on the management cluster: a
// patched store or generator could read Argo CD's Secrets (a kubernetes
// provider, another namespace's secretRef) and hand them to a record's
// ExternalSecrets; a patched Certificate could take another issuer.
var fixedSpecKinds = map[string]bool{
	"ClusterSecretStore": true, "SecretStore": true, "ClusterGenerator": true, "ExternalSecret": true,
	"Certificate": true, "CustomResourceDefinition": true,
}

// podSpecPaths are where the pod-bearing kinds keep their pod spec: Pod
// (spec); Deployment, DaemonSet, StatefulSet, ReplicaSet, Job and
// ReplicationController (spec.template.spec); CronJob
// (spec.jobTemplate.spec.template.spec). Every object is searched at all
// three, so a kind not listed here that has the same shape is checked too.
var podSpecPaths = [][]string{
	{"spec"},
	{"spec", "template", "spec"},
	{"spec", "jobTemplate", "spec", "template", "spec"},
}

var containerLists = []string{"initContainers", "containers", "ephemeralContainers"}

// allowedCapabilities may be added (the Pod Security "restricted" profile's one).
var allowedCapabilities = map[string]bool{"NET_BIND_SERVICE": true}

// CheckSpokeOnHub checks the objects an inCluster record puts on the
// management cluster (out: its spoke render after its overlay) against the
// hub policy. base is spokeforge's rendered spoke before the overlay; file
// and cause say who is answerable in messages (the kustomization file and
// "the overlay", or the record and "the record").
func CheckSpokeOnHub(file, cause string, base []Object, out []map[string]any, argoNS string) error {
	baseByID := map[objID]map[string]any{}
	for _, o := range base {
		baseByID[objectID(o.Obj)] = o.Obj
	}
	fail := func(format string, args ...any) error {
		return &OverlayError{File: file, Msg: fmt.Sprintf("%s %s %s: %s", cause, fmt.Sprintf(format, args...), onHub, policyHint)}
	}
	for _, obj := range out {
		id := objectID(obj)
		desc := describe(id)
		ns := id.namespace
		if id.kind == "Namespace" && id.group == "" {
			ns = id.name
		}
		if why := validate.HubNamespaceProblem(ns, argoNS); why != "" && !(ns == SystemNamespace && systemComponents[id.kind+"/"+id.name]) {
			return fail("places %s in namespace %s, which %s,", desc, ns, why)
		}
		if id.kind == "PersistentVolume" && id.group == "" {
			if _, has := dig(obj, "spec", "hostPath"); has {
				return fail("gives %s a host path (spec.hostPath),", desc)
			}
			if b, ok := baseByID[id]; ok {
				got, _ := dig(obj, "spec", "local")
				want, _ := dig(b, "spec", "local")
				if !sameValue(got, want) {
					return fail("changes the local path of %s (spec.local), which spokeforge renders from spec.storage.devices with their safety evidence,", desc)
				}
			}
		}
		var baseObj map[string]any
		if b, ok := baseByID[id]; ok {
			baseObj = b
		}
		if baseObj != nil && fixedSpecKinds[id.kind] && !sameValue(baseObj["spec"], obj["spec"]) {
			return fail("changes the spec of %s, which spokeforge renders to carry credentials and identity (stores, generators, ExternalSecrets, Certificates and CRDs keep their rendered spec),", desc)
		}
		for _, p := range podSpecPaths {
			spec, ok := digMap(obj, p...)
			if !ok || !hasContainers(spec) {
				continue
			}
			at := strings.Join(p, ".")
			if msg := podProblem(spec, at, desc); msg != "" {
				return fail("%s", msg)
			}
			if baseObj == nil {
				continue
			}
			baseSpec, _ := digMap(baseObj, p...)
			if msg := componentChanged(baseSpec, spec, at, desc); msg != "" {
				return fail("%s", msg)
			}
		}
	}
	return nil
}

const policyHint = "privileged containers, host namespaces, host paths, added capabilities, a changed image, command, arguments or service account of spokeforge's components, and Argo CD's, Kubernetes' and spokeforge's namespaces are refused there"

// podProblem checks one pod spec (at its path) for what may never run on
// the management cluster.
func podProblem(spec map[string]any, at, desc string) string {
	for _, f := range []string{"hostPID", "hostIPC", "hostNetwork"} {
		if v, _ := spec[f].(bool); v {
			return fmt.Sprintf("gives %s the host's namespace (%s.%s: true)", desc, at, f)
		}
	}
	if v, _ := dig(spec, "securityContext", "windowsOptions", "hostProcess"); v == true {
		return fmt.Sprintf("makes %s a host process (%s.securityContext.windowsOptions.hostProcess)", desc, at)
	}
	vols, _ := spec["volumes"].([]any)
	for i, v := range vols {
		vm, _ := v.(map[string]any)
		if hp, has := vm["hostPath"]; has {
			p, _ := dig(hp, "path")
			return fmt.Sprintf("mounts the host path %v into %s (%s.volumes[%d].hostPath)", p, desc, at, i)
		}
	}
	for _, list := range containerLists {
		cs, _ := spec[list].([]any)
		for i, c := range cs {
			cm, _ := c.(map[string]any)
			cp := fmt.Sprintf("%s.%s[%d]", at, list, i)
			sc, _ := cm["securityContext"].(map[string]any)
			if v, _ := sc["privileged"].(bool); v {
				return fmt.Sprintf("makes %s privileged (%s.securityContext.privileged)", desc, cp)
			}
			if v, _ := sc["allowPrivilegeEscalation"].(bool); v {
				return fmt.Sprintf("lets %s escalate privileges (%s.securityContext.allowPrivilegeEscalation)", desc, cp)
			}
			if v, _ := dig(sc, "windowsOptions", "hostProcess"); v == true {
				return fmt.Sprintf("makes %s a host process (%s.securityContext.windowsOptions.hostProcess)", desc, cp)
			}
			if pm, _ := sc["procMount"].(string); pm != "" && pm != "Default" {
				return fmt.Sprintf("unmasks /proc in %s (%s.securityContext.procMount: %s)", desc, cp, pm)
			}
			adds, _ := dig(sc, "capabilities", "add")
			addList, _ := adds.([]any)
			for j, a := range addList {
				if s, _ := a.(string); !allowedCapabilities[strings.TrimPrefix(strings.ToUpper(s), "CAP_")] {
					return fmt.Sprintf("adds the capability %v to %s (%s.securityContext.capabilities.add[%d])", a, desc, cp, j)
				}
			}
			ports, _ := cm["ports"].([]any)
			for j, p := range ports {
				if hp, _ := dig(p, "hostPort"); hp != nil && fmt.Sprint(hp) != "0" {
					return fmt.Sprintf("binds a host port in %s (%s.ports[%d].hostPort)", desc, cp, j)
				}
			}
		}
	}
	return ""
}

// componentChanged compares a pod spec of one of spokeforge's rendered
// objects with the rendered base: the same containers (no init, ephemeral
// or sidecar container added), each with the same image, command and
// arguments, and the same service account.
func componentChanged(base, spec map[string]any, at, desc string) string {
	if !sameValue(base["serviceAccountName"], spec["serviceAccountName"]) || !sameValue(base["serviceAccount"], spec["serviceAccount"]) {
		return fmt.Sprintf("changes the service account of %s, one of spokeforge's own components (%s.serviceAccountName)", desc, at)
	}
	for _, list := range containerLists {
		want := map[string]map[string]any{}
		bs, _ := base[list].([]any)
		for _, c := range bs {
			cm, _ := c.(map[string]any)
			n, _ := cm["name"].(string)
			want[n] = cm
		}
		cs, _ := spec[list].([]any)
		for i, c := range cs {
			cm, _ := c.(map[string]any)
			n, _ := cm["name"].(string)
			cp := fmt.Sprintf("%s.%s[%d]", at, list, i)
			w, ok := want[n]
			if !ok {
				return fmt.Sprintf("adds the container %q to %s, one of spokeforge's own components (%s)", n, desc, cp)
			}
			for _, f := range []string{"image", "command", "args"} {
				if !sameValue(w[f], cm[f]) {
					return fmt.Sprintf("changes the %s of %s, one of spokeforge's own components (%s.%s)", f, desc, cp, f)
				}
			}
		}
	}
	return ""
}

// CheckHubOutput checks a record's hub-mode output, which lands in Argo CD's
// namespace of the management cluster: every Application's destination
// namespace on the management cluster is outside the hub's system
// namespaces, and workload Applications go through the AppProject of the
// record's org, never one the record names.
func CheckHubOutput(file, org string, objs []Object, argoNS string) error {
	for _, o := range objs {
		id := objectID(o.Obj)
		if id.kind != "Application" || id.group != "argoproj.io" {
			continue
		}
		server, _ := dig(o.Obj, "spec", "destination", "server")
		name, _ := dig(o.Obj, "spec", "destination", "name")
		ns, _ := dig(o.Obj, "spec", "destination", "namespace")
		nsStr, _ := ns.(string)
		s, _ := server.(string)
		hub := strings.TrimRight(s, "/") == names.InClusterServer || name == validate.InClusterName
		if why := validate.HubNamespaceProblem(nsStr, argoNS); hub && nsStr != "" && why != "" {
			return &OverlayError{File: file, Msg: fmt.Sprintf("the record sends %s to namespace %s of the management cluster (spec.destination.namespace), which %s: workloads may not land there", describe(id), nsStr, why)}
		}
		if o.Boundary == "hub-workloads" {
			project, _ := dig(o.Obj, "spec", "project")
			if want := names.OrgProject(org); org == "" || project != want {
				return &OverlayError{File: file, Msg: fmt.Sprintf("%s would use the AppProject %v: workload Applications go through their org's AppProject (spec.org), never one the record names", describe(id), project)}
			}
		}
	}
	return nil
}

func describe(id objID) string {
	if id.namespace != "" {
		return fmt.Sprintf("%s %s/%s", id.kind, id.namespace, id.name)
	}
	return fmt.Sprintf("%s %s", id.kind, id.name)
}

func hasContainers(spec map[string]any) bool {
	for _, l := range containerLists {
		if _, ok := spec[l]; ok {
			return true
		}
	}
	return false
}

// dig returns the value at path in nested maps.
func dig(v any, path ...string) (any, bool) {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[p]; !ok {
			return nil, false
		}
	}
	return v, true
}

func digMap(v any, path ...string) (map[string]any, bool) {
	x, ok := dig(v, path...)
	if !ok {
		return nil, false
	}
	m, ok := x.(map[string]any)
	return m, ok
}

// sameValue compares decoded values whatever decoder made them (numbers
// as float64 or int64): by their JSON.
func sameValue(a, b any) bool {
	ja, err1 := json.Marshal(normal(a))
	jb, err2 := json.Marshal(normal(b))
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

// DecodeStream decodes a YAML stream as render.Write or an overlay prints
// it, one object per document.
func DecodeStream(b []byte) ([]map[string]any, error) {
	var out []map[string]any
	for i, part := range splitDocs(b) {
		var m map[string]any
		if err := yaml.Unmarshal(part, &m); err != nil {
			return nil, fmt.Errorf("document %d: %v", i, err)
		}
		if m != nil {
			out = append(out, m)
		}
	}
	return out, nil
}
