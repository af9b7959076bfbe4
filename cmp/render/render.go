// Package render turns a cluster record into the spoke's manifests (the
// CMP's generate step), the hub-side objects for that cluster, or the
// per-org AppProjects. Templates (text/template + sprig) produce one
// document per object with its boundary; the result is parsed back,
// labelled, ordered by sync wave and serialised canonically, so the same
// input always renders byte-identical output.
package render

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/template"

	"sigs.k8s.io/yaml"

	"github.com/spokeforge/spokeforge/internal/api/v1alpha1"
	"github.com/spokeforge/spokeforge/internal/hubpolicy"
	"github.com/spokeforge/spokeforge/internal/names"
	"github.com/spokeforge/spokeforge/internal/onboarding"
	"github.com/spokeforge/spokeforge/internal/validate"
	"github.com/spokeforge/spokeforge/manifests"
)

//go:embed templates/*.tmpl
var templateFS embed.FS

// encodedJSON is a value already encoded by json.Marshal; toJson prints it as is.
type encodedJSON string

// onboardingCRDJSON encodes the embedded CRD once, off the render hot path.
var onboardingCRDJSON = sync.OnceValues(func() (encodedJSON, error) {
	j, err := yaml.YAMLToJSON(manifests.OnboardingCRD)
	return encodedJSON(j), err
})

// Encoders are the only functions that may end a template action that
// prints: every value reaches the YAML text as one encoded scalar or one
// JSON value, so no value can add, drop or retype a rendered object or
// field (TestTemplateActionsEncoded holds every template to it).
var Encoders = template.FuncMap{
	// str prints any value as a double-quoted YAML scalar (a JSON string,
	// which YAML reads back to the same text whatever it holds).
	"str": func(v any) (string, error) {
		s, ok := v.(string)
		if !ok {
			s = fmt.Sprint(v)
		}
		if plainASCII(s) {
			return `"` + s + `"`, nil
		}
		b, err := json.Marshal(s)
		return string(b), err
	},
	// toJson prints a value as JSON (a YAML flow value); unlike sprig's, an
	// encoding failure fails the render instead of printing nothing.
	"toJson": func(v any) (string, error) {
		if e, ok := v.(encodedJSON); ok {
			return string(e), nil
		}
		b, err := json.Marshal(v)
		return string(b), err
	},
}

// plainASCII: printable ASCII without quote, backslash or the characters
// json.Marshal escapes for HTML, which JSON-quotes to itself between quotes.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

var templates = template.Must(template.New("").Funcs(textFuncs).Funcs(Encoders).Funcs(template.FuncMap{"workloadApplication": names.WorkloadApplication}).Option("missingkey=error").ParseFS(templateFS, "templates/*.tmpl"))

// textFuncs are the sprig functions the templates use, as sprig defines them:
// sprig.TxtFuncMap would link sprig's ~200 functions and their packages
// (semver, decimal, crypto, uuid), whose init every render paid (~0.8 ms of
// GODEBUG=inittrace=1 in a cmponly process) for these three.
var textFuncs = template.FuncMap{
	"default": func(d any, given ...any) any {
		if len(given) == 0 || empty(given[0]) {
			return d
		}
		return given[0]
	},
	"upper":   strings.ToUpper,
	"replace": func(old, new, src string) string { return strings.ReplaceAll(src, old, new) },
}

// empty is sprig's test for default: nil, zero numbers, false, and empty
// strings, slices and maps are empty; structs never are.
func empty(v any) bool {
	g := reflect.ValueOf(v)
	if !g.IsValid() {
		return true
	}
	switch g.Kind() {
	case reflect.Array, reflect.Slice, reflect.Map, reflect.String:
		return g.Len() == 0
	case reflect.Bool:
		return !g.Bool()
	case reflect.Complex64, reflect.Complex128:
		return g.Complex() == 0
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return g.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return g.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return g.Float() == 0
	case reflect.Struct:
		return false
	default:
		return g.IsNil()
	}
}

// Boundaries are the render's boundary labels in sync-wave order: the
// foundation wave (namespaces, CRD), then v1alpha1.Boundaries, lowercased.
var Boundaries = func() []string {
	bs := []string{"foundation"}
	for _, b := range v1alpha1.Boundaries {
		bs = append(bs, strings.ToLower(b))
	}
	return bs
}()

// hubWaves order the hub objects of a cluster: its cluster Secret first,
// then the spoke Application, then workloads — which with the Application
// health check means workloads wait until the spoke's contracts hold.
var hubWaves = map[string]int{"hub-projects": 0, "hub-credentials": 0, "hub-inventory": 0, "hub-spoke": 1, "hub-workloads": 2}

// Wave is the Argo CD sync wave of a boundary.
func Wave(boundary string) int {
	if w, ok := hubWaves[boundary]; ok {
		return w
	}
	for i, b := range Boundaries {
		if b == boundary {
			return i
		}
	}
	return 0
}

// Label keys every rendered object carries.
const (
	LabelCluster   = "spokeforge.io/cluster"
	LabelBoundary  = "spokeforge.io/boundary"
	LabelManagedBy = "app.kubernetes.io/managed-by"
)

// SystemNamespace holds spokeforge's own objects on the spoke.
const SystemNamespace = onboarding.SystemNamespace

// Options are the build environment Argo CD passes and plugin parameters.
type Options struct {
	// Image of spokeforge for the agent and credential refresher.
	Image string
	// ESOVersion is the External Secrets apiVersion to render.
	ESOVersion string
	// ArgoNamespace is where hub objects go.
	ArgoNamespace string
	// HubSecretStore is the hub's ClusterSecretStore for cluster credentials.
	HubSecretStore string
	// RepoURL, TargetRevision and SourcePath locate the gitops repo for hub Applications.
	RepoURL, TargetRevision, SourcePath string
	// InventoryNamespace, when set, is where the hub render puts the cluster's ClusterProfile
	// (multicluster.x-k8s.io/v1alpha1): set only when the hub serves that API
	// (InventoryNamespaceFor).
	InventoryNamespace string
}

// Object is one rendered object with the boundary it belongs to.
type Object struct {
	Boundary string
	Obj      map[string]any
}

type doc struct {
	Boundary string         `json:"boundary"`
	Object   map[string]any `json:"object"`
}

type device struct {
	Device v1alpha1.Device
	PVName string
}

// Spoke renders a cluster's spoke objects.
func Spoke(e validate.ClusterEntry, o Options) ([]Object, error) {
	c, n := e.Cluster, e.Names
	s := c.Spec
	nsSet := map[string]bool{}
	regNS := map[string]bool{}
	for _, x := range s.Secrets {
		nsSet[x.Namespace] = true
	}
	for _, x := range s.Registries {
		for _, ns := range x.Namespaces {
			nsSet[ns] = true
			regNS[ns] = true
		}
	}
	for _, x := range s.Certificates {
		nsSet[x.Namespace] = true
	}
	for _, x := range s.Workloads {
		nsSet[x.Namespace] = true
	}
	delete(nsSet, SystemNamespace)
	// The namespaces that get a copy of the AWS credentials: those of the registry
	// ExternalSecrets, whose generator reads them there (the system namespace has the original).
	var credNS []string
	for _, ns := range sortedKeys(regNS) {
		if ns != SystemNamespace {
			credNS = append(credNS, ns)
		}
	}
	workloadNS := sortedKeys(nsSet)
	if len(workloadNS) == 0 {
		workloadNS = []string{SystemNamespace}
	}
	var devices []device
	storageClass := "spokeforge-local-block"
	if s.Storage != nil {
		if s.Storage.StorageClass != "" {
			storageClass = s.Storage.StorageClass
		}
		for _, d := range s.Storage.Devices {
			devices = append(devices, device{Device: d, PVName: names.PVName(c.Metadata.Name, d)})
		}
	}
	session := s.Identity.SessionDurationSeconds
	if session == 0 {
		session = 3600
	}
	crd, err := onboardingCRDJSON()
	if err != nil {
		return nil, fmt.Errorf("embedded Onboarding CRD: %w", err)
	}
	spec := onboarding.SpecFor(c, n)
	data := map[string]any{
		"C": c, "N": n, "SystemNamespace": SystemNamespace,
		"OnboardingSpec":       spec,
		"Namespaces":           sortedKeys(nsSet),
		"WorkloadNamespaces":   workloadNS,
		"RegistryNamespaces":   sortedKeys(regNS),
		"CredentialNamespaces": credNS,
		"OnboardingCRD":        crd,
		"Image":                o.Image,
		"ESOVersion":           o.ESOVersion,
		"SessionDuration":      session,
		"StorageClass":         storageClass,
		"Devices":              devices,
		"DockerConfigTemplate": dockerConfigTemplate,
	}
	return execute("spoke.yaml.tmpl", data, c.Metadata.Name)
}

// The External Secrets templates (engine v2: text/template with sprig) that
// turn a store's values into structured text. Each builds its object as data
// (dict) and encodes it whole (toJson): a value is a JSON string whatever it
// holds, and the object has exactly the fields named here. Pasting values
// between quotes would let a value with a quote in it add fields, such as
// the execProviderConfig that Argo CD runs in its application-controller.
const (
	// bearerTokenConfigTemplate is the Argo CD cluster config of a bearerToken credential.
	bearerTokenConfigTemplate = `{{ dict "bearerToken" .bearerToken "tlsClientConfig" (dict "caData" (.caData | b64enc)) | toJson }}`
	// clientCertificateConfigTemplate is the Argo CD cluster config of a clientCertificate credential.
	clientCertificateConfigTemplate = `{{ dict "tlsClientConfig" (dict "caData" (.caData | b64enc) "certData" (.certData | b64enc) "keyData" (.keyData | b64enc)) | toJson }}`
	// dockerConfigTemplate is the pull secret of the ECR authorization token generator's output.
	dockerConfigTemplate = `{{ dict "auths" (dict .proxy_endpoint (dict "username" .username "password" .password "auth" (printf "%s:%s" .username .password | b64enc))) | toJson }}`
)

// Hub renders the hub-side objects for one cluster: the ExternalSecret
// that delivers its Argo CD cluster Secret, its spoke Application and its
// workload Applications.
func Hub(e validate.ClusterEntry, o Options) ([]Object, error) {
	c := e.Cluster
	project := c.Spec.Project
	if project == "" {
		project = "default"
	}
	configTpl := bearerTokenConfigTemplate
	if cr := c.Spec.Connection.Credentials; cr != nil && cr.Type == "clientCertificate" {
		configTpl = clientCertificateConfigTemplate
	}
	if o.RepoURL == "" {
		return nil, fmt.Errorf("hub mode needs the gitops repo URL: Argo CD sets ARGOCD_APP_SOURCE_REPO_URL")
	}
	data := map[string]any{
		"C": c, "N": e.Names,
		"ESOVersion":            o.ESOVersion,
		"ArgoNamespace":         o.ArgoNamespace,
		"HubSecretStore":        o.HubSecretStore,
		"InventoryNamespace":    o.InventoryNamespace,
		"CredentialsKey":        e.Names.SecretPath + "/" + names.CredentialsSecret(c),
		"ClusterConfigTemplate": configTpl,
		"Project":               project,
		"WorkloadProject":       names.OrgProject(c.Spec.Org),
		"RepoURL":               o.RepoURL,
		"TargetRevision":        o.TargetRevision,
		"SourcePath":            o.SourcePath,
	}
	return execute("hub.yaml.tmpl", data, c.Metadata.Name)
}

type orgProject struct {
	Name, Project string
	// HubNamespaces are the org's namespaces on the management cluster
	// (spec.hubNamespaces), each a destination there.
	HubNamespaces []string
	// Destinations: those hub namespaces, and any namespace of each
	// allowlisted spoke.
	Destinations []destination
	// ClusterResources is the project's clusterResourceWhitelist: the
	// Namespaces of its zones on spokes, each by name (CreateNamespace).
	ClusterResources []namedKind
}

type destination struct {
	Server    string `json:"server,omitempty"`
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace"`
}

type namedKind struct {
	Group string `json:"group"`
	Kind  string `json:"kind"`
	Name  string `json:"name,omitempty"`
}

// Projects renders one AppProject per org, its destinations from the
// allowlist and its hub namespaces, and those namespaces themselves: what
// an org may do on the management cluster is hubpolicy's data.
func Projects(clusters []validate.ClusterEntry, orgs []validate.OrgEntry, products []validate.ProductEntry, o Options) ([]Object, error) {
	byName := map[string]*v1alpha1.Cluster{}
	for _, c := range clusters {
		byName[c.Cluster.Metadata.Name] = c.Cluster
	}
	spokeNS := map[string]map[string]bool{}
	for _, p := range products {
		for _, z := range p.Product.Spec.Delivery.Zones {
			if c, ok := byName[z.Cluster]; !ok || c.Spec.Connection.InCluster {
				continue
			}
			ns := z.Namespace
			if ns == "" {
				ns = z.Name
			}
			if spokeNS[p.Org] == nil {
				spokeNS[p.Org] = map[string]bool{}
			}
			spokeNS[p.Org][ns] = true
		}
	}
	// A Namespace named for a spoke zone may be created on the hub too (one
	// kind allowlist per project): never a platform or hub namespace.
	anyHubNS := map[string]bool{}
	for _, org := range orgs {
		for _, ns := range org.Org.Spec.HubNamespaces {
			anyHubNS[ns] = true
		}
	}
	var list []orgProject
	for _, org := range orgs {
		name := org.Org.Metadata.Name
		op := orgProject{Name: name, Project: names.OrgProject(name), Destinations: []destination{}, ClusterResources: []namedKind{}}
		hubNS := map[string]bool{}
		for _, ns := range org.Org.Spec.HubNamespaces {
			// The second layer: validate refuses these, and they never
			// reach an AppProject or a Namespace here either.
			if hubpolicy.PlatformNamespace(ns, o.ArgoNamespace) == "" {
				hubNS[ns] = true
			}
		}
		op.HubNamespaces = sortedKeys(hubNS)
		for _, ns := range op.HubNamespaces {
			op.Destinations = append(op.Destinations, destination{Server: names.InClusterServer, Namespace: ns})
		}
		allow := append([]string(nil), org.Org.Spec.ClusterAllowlist...)
		sort.Strings(allow)
		for _, cl := range allow {
			// An inCluster cluster is the management cluster: its
			// destinations are the hub namespaces above.
			if c, ok := byName[cl]; ok && !c.Spec.Connection.InCluster {
				op.Destinations = append(op.Destinations, destination{Name: cl, Namespace: "*"})
			}
		}
		for _, ns := range sortedKeys(spokeNS[name]) {
			if !anyHubNS[ns] && hubpolicy.PlatformNamespace(ns, o.ArgoNamespace) == "" {
				op.ClusterResources = append(op.ClusterResources, namedKind{Kind: "Namespace", Name: ns})
			}
		}
		list = append(list, op)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	repos := []string{"*"}
	if o.RepoURL != "" {
		repos = []string{o.RepoURL}
	}
	var kinds []namedKind
	for _, k := range hubpolicy.ZoneKinds {
		kinds = append(kinds, namedKind{Group: k.Group, Kind: k.Kind})
	}
	return execute("projects.yaml.tmpl", map[string]any{"Orgs": list, "ArgoNamespace": o.ArgoNamespace,
		"SourceRepos": repos, "ZoneKinds": kinds, "NamespaceLabels": hubpolicy.ZoneNamespaceLabels}, "")
}

func execute(name string, data any, cluster string) ([]Object, error) {
	var buf bytes.Buffer
	if err := templates.ExecuteTemplate(&buf, name, data); err != nil {
		return nil, fmt.Errorf("template %s: %w", name, err)
	}
	var out []Object
	for i, part := range splitDocs(buf.Bytes()) {
		d, err := decodeDoc(part)
		if err != nil {
			return nil, fmt.Errorf("template %s produced invalid YAML in document %d: %w", name, i, err)
		}
		if d.Object == nil {
			continue
		}
		label(d.Object, cluster, d.Boundary)
		out = append(out, Object{Boundary: d.Boundary, Obj: d.Object})
	}
	return out, nil
}

func label(obj map[string]any, cluster, boundary string) {
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		obj["metadata"] = md
	}
	labels, _ := md["labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
		md["labels"] = labels
	}
	labels[LabelManagedBy] = "spokeforge"
	if cluster != "" {
		labels[LabelCluster] = cluster
	}
	if _, hub := hubWaves[boundary]; !hub {
		labels[LabelBoundary] = boundary
	}
	ann, _ := md["annotations"].(map[string]any)
	if ann == nil {
		ann = map[string]any{}
		md["annotations"] = ann
	}
	ann["argocd.argoproj.io/sync-wave"] = strconv.Itoa(Wave(boundary))
}

// splitDocs splits a template's output on document separators.
func splitDocs(b []byte) [][]byte {
	var docs [][]byte
	for _, p := range bytes.Split(b, []byte("\n---")) {
		if len(bytes.TrimSpace(p)) > 0 {
			docs = append(docs, p)
		}
	}
	return docs
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Sort orders objects by wave, then kind, namespace and name, so output
// is stable whatever order templates produced.
func Sort(objs []Object) {
	key := func(o Object) (int, string, string, string) {
		md, _ := o.Obj["metadata"].(map[string]any)
		ns, _ := md["namespace"].(string)
		name, _ := md["name"].(string)
		kind, _ := o.Obj["kind"].(string)
		return Wave(o.Boundary), kindRank(kind), ns, name
	}
	sort.SliceStable(objs, func(i, j int) bool {
		wi, ki, ni, mi := key(objs[i])
		wj, kj, nj, mj := key(objs[j])
		if wi != wj {
			return wi < wj
		}
		if ki != kj {
			return ki < kj
		}
		if ni != nj {
			return ni < nj
		}
		return mi < mj
	})
}

// kindRank puts namespaces and CRDs first inside a wave, as kubectl would.
func kindRank(kind string) string {
	switch kind {
	case "Namespace":
		return "0"
	case "CustomResourceDefinition":
		return "1"
	}
	return "2" + kind
}

// Write serialises objects as a YAML stream, canonically.
func Write(w io.Writer, objs []Object) error {
	for i, o := range objs {
		y, err := objectYAML(o.Obj) // converts o.Obj's numbers to int64 in place
		if err != nil {
			return err
		}
		if i > 0 {
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return err
			}
		}
		if _, err := w.Write(y); err != nil {
			return err
		}
	}
	return nil
}

// ClusterProfileAPI is the cluster inventory API (SIG-Multicluster's ClusterProfile) the hub
// render writes a profile of each cluster into, when the hub serves it.
const ClusterProfileAPI = "multicluster.x-k8s.io/v1alpha1"

// ServesClusterProfile says whether Argo CD's KUBE_API_VERSIONS (comma-separated group/versions)
// holds ClusterProfileAPI. Without it the hub render makes no profile: an object of a kind the
// hub does not serve would fail the app-of-apps' sync, and with it the spoke's.
func ServesClusterProfile(kubeAPIVersions string) bool {
	for _, v := range strings.Split(kubeAPIVersions, ",") {
		if strings.TrimSpace(v) == ClusterProfileAPI {
			return true
		}
	}
	return false
}

// ESOVersionFor picks the External Secrets apiVersion the destination
// serves, from Argo CD's KUBE_API_VERSIONS (comma-separated group/versions).
func ESOVersionFor(kubeAPIVersions string) (string, error) {
	if strings.TrimSpace(kubeAPIVersions) == "" {
		return "external-secrets.io/v1", nil
	}
	has := map[string]bool{}
	for _, v := range strings.Split(kubeAPIVersions, ",") {
		has[strings.TrimSpace(v)] = true
	}
	for _, v := range []string{"external-secrets.io/v1", "external-secrets.io/v1beta1"} {
		if has[v] {
			return v, nil
		}
	}
	return "", fmt.Errorf("the destination cluster serves no External Secrets API (external-secrets.io/v1 or v1beta1 not in KUBE_API_VERSIONS): install External Secrets Operator first")
}
