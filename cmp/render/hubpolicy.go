package render

import (
	"encoding/json"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/spokeforge/spokeforge/internal/hubpolicy"
	"github.com/spokeforge/spokeforge/internal/names"
	"github.com/spokeforge/spokeforge/internal/validate"
)

// The hub policy: what every object spokeforge puts on the management
// cluster must satisfy, checked on the decoded objects (never on text), in
// render and so in validate, which renders through the same code. It is
// default-deny, from the data of internal/hubpolicy:
//
//   - an inCluster record's spoke render (CheckSpokeOnHub) holds only the
//     kinds of hubpolicy.SpokeKinds, outside the hub's platform namespaces
//     (spokeforge's own components excepted), and what lands is exactly
//     what spokeforge rendered: render refuses an overlay there, and this
//     check holds without that refusal, since any object added, changed or
//     removed is refused;
//   - a record's hub-mode output (CheckHubOutput) sends no workload
//     Application to the management cluster, and every workload
//     Application goes through its org's AppProject;
//   - projects-mode output (render.Projects) is rendered from
//     hubpolicy.ZoneKinds and the orgs' hub namespaces alone.

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

// CheckSpokeOnHub checks the objects an inCluster record puts on the
// management cluster (out: its spoke render as printed, after any overlay)
// against the hub policy. base is spokeforge's rendered spoke, answered for
// by the record (recordFile); what out changes from it is answered for by
// the overlay (overlayFile, "" without one).
func CheckSpokeOnHub(recordFile, overlayFile string, base []Object, out []map[string]any, argoNS string) error {
	failIn := func(file, cause string) func(format string, args ...any) error {
		return func(format string, args ...any) error {
			return &OverlayError{File: file, Msg: fmt.Sprintf("%s %s %s: %s", cause, fmt.Sprintf(format, args...), onHub, policyHint)}
		}
	}
	fail := failIn(recordFile, "the record")
	baseByID := make(map[objID]map[string]any, len(base))
	for _, o := range base {
		id := objectID(o.Obj)
		if !hubpolicy.SpokeKindAllowed(id.group, id.kind) {
			return fail("renders %s, a kind the management cluster takes from no record,", describe(id))
		}
		if msg := namespaceProblem(id, argoNS); msg != "" {
			return fail("%s", msg)
		}
		baseByID[id] = o.Obj
	}
	if overlayFile != "" {
		fail = failIn(overlayFile, "the overlay")
	}
	seen := make(map[objID]bool, len(out))
	for _, obj := range out {
		id := objectID(obj)
		b, ok := baseByID[id]
		switch {
		case !ok || seen[id]:
			return fail("adds %s, which spokeforge does not render,", describe(id))
		case !sameValue(b, obj):
			return fail("changes %s from what spokeforge renders,", describe(id))
		}
		seen[id] = true
	}
	for _, o := range base {
		if id := objectID(o.Obj); !seen[id] {
			return fail("removes %s, which spokeforge renders,", describe(id))
		}
	}
	return nil
}

// namespaceProblem says why id may not be placed where it is on the
// management cluster ("" when it may): a platform namespace, unless it is
// one of spokeforge's own components in spokeforge's namespace.
func namespaceProblem(id objID, argoNS string) string {
	ns, verb := id.namespace, "places "+describe(id)+" in namespace "
	if id.kind == "Namespace" && id.group == "" {
		ns, verb = id.name, "renders the Namespace "
	}
	if ns == SystemNamespace && systemComponents[id.kind+"/"+id.name] {
		return ""
	}
	if why := hubpolicy.PlatformNamespace(ns, argoNS); ns != "" && why != "" {
		return verb + ns + ", which " + why + ","
	}
	return ""
}

const policyHint = "what lands there is exactly spokeforge's render, of the kinds internal/hubpolicy lists, outside the hub's platform namespaces (docs/security.md, \"Hub objects\")"

// CheckHubOutput checks a record's hub-mode output, which lands in Argo CD's
// namespace of the management cluster: every Application's destination
// namespace on the management cluster is outside the hub's platform
// namespaces, no workload Application lands there at all, and workload
// Applications go through the AppProject of the record's org, never one
// the record names.
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
		if o.Boundary == "hub-workloads" && hub {
			return &OverlayError{File: file, Msg: fmt.Sprintf("the record sends %s to the management cluster: workload Applications never land there; an org's applications there are zones in its spec.hubNamespaces", describe(id))}
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
