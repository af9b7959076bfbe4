package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	yamlv2 "go.yaml.in/yaml/v2"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/spokeforge/spokeforge/internal/onboarding"
	"github.com/spokeforge/spokeforge/internal/safefile"
)

// RenderedResource is the name the rendered base has inside the overlay;
// spokeforge adds it to the overlay's resources itself.
const RenderedResource = "spokeforge-rendered.yaml"

// OverlayLimits bound what an overlay directory may hold. Argo CD caps a
// directory app's manifests at 10 MB; an overlay is a few patches.
var OverlayLimits = safefile.Limits{FileBytes: 1 << 20, TotalBytes: 8 << 20, Files: 500}

// FindOverlay returns the kustomization file of dir ("" when there is
// none), under every name kustomize reads; two of them is an error, as it
// is for kustomize.
func FindOverlay(dir string) (string, error) {
	var found []string
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
			found = append(found, n)
		}
	}
	switch len(found) {
	case 0:
		return "", nil
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("%s: more than one kustomization file (%s): keep one", dir, strings.Join(found, ", "))
}

// OverlayError is a refused overlay: the file, line and why.
type OverlayError struct {
	File string
	Line int
	Msg  string
}

func (e *OverlayError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// Overlay is the context an overlay is applied in.
type Overlay struct {
	// Dir is the cluster directory; Display names it in errors.
	Dir, Display string
	// File is the kustomization file's name in Dir (FindOverlay). A record
	// whose spoke is the management cluster has none (render refuses it).
	File string
}

// Apply runs the overlay over the rendered base in memory (krusty), behind
// two guards that each hold alone. First, every kustomization in the
// directory is checked as kustomize itself decodes it (kustomization):
// files come from Dir only (regular, bounded, inside it), every path an
// overlay names must be a file or directory there — so no remote
// resource, base or component of any form is ever fetched and nothing
// outside the directory is read —, and helm, plugins, KRM functions and
// secret generators are refused; YAML aliases in every file are bounded
// (aliases.go). Second, krusty runs where it cannot reach the network or
// start git whatever a kustomization says (sandbox.go).
// After the build, every rendered object must still be there under its
// own identity: an overlay may patch and add, not delete, rename or move.
func (ov Overlay) Apply(base []Object, baseYAML []byte) ([]byte, error) {
	files, err := safefile.ReadTree(ov.Dir, OverlayLimits)
	if err != nil {
		var re *safefile.RefusedError
		if errors.As(err, &re) {
			return nil, &OverlayError{File: path.Join(ov.Display, re.Path), Msg: re.Reason}
		}
		return nil, fmt.Errorf("%s: reading the overlay: %v", ov.Display, err)
	}
	if _, clash := files[RenderedResource]; clash {
		return nil, &OverlayError{File: path.Join(ov.Display, RenderedResource), Msg: "this name is reserved for the rendered spoke: rename the file"}
	}
	chk := overlayChecker{files: files, display: ov.Display, root: ov.File, aliasBudget: OverlayAliasBudget,
		kusts: map[string]*types.Kustomization{}, nodes: map[string]*kyaml.Node{}}
	// Every file first: kustomize parses YAML it is handed (resources,
	// patches, crds, …) and expands its aliases without a bound.
	if err := chk.aliases(); err != nil {
		return nil, err
	}
	for _, name := range sortedFileNames(files) {
		if isKustomization(name) {
			if err := chk.kustomization(name); err != nil {
				return nil, err
			}
		}
	}
	mem := filesys.MakeFsInMemory()
	for name, b := range files {
		if name == ov.File {
			continue
		}
		if err := mem.WriteFile("/app/"+name, b); err != nil {
			return nil, err
		}
	}
	// The root kustomization krusty reads is the checked struct itself,
	// with the rendered base first in its resources.
	rk, ok := chk.kusts[ov.File]
	if !ok {
		return nil, &OverlayError{File: path.Join(ov.Display, ov.File), Msg: "not read as a kustomization"}
	}
	root := *rk
	root.Resources = append([]string{RenderedResource}, root.Resources...)
	rootJSON, err := json.Marshal(root)
	if err != nil {
		return nil, err
	}
	if err := mem.WriteFile("/app/"+ov.File, rootJSON); err != nil {
		return nil, err
	}
	if err := mem.WriteFile("/app/"+RenderedResource, baseYAML); err != nil {
		return nil, err
	}
	if err := chk.estimateBuild(len(base), int64(len(baseYAML)), largestDocument(baseYAML)); err != nil {
		return nil, err
	}
	m, err := sandboxedBuild(mem, "/app")
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path.Join(ov.Display, ov.File), redactPaths(err.Error()))
	}
	display := path.Join(ov.Display, ov.File)
	if err := checkObjects(display, m.Size()); err != nil {
		return nil, err
	}
	if err := chk.result(base, m.Resources()); err != nil {
		return nil, err
	}
	// As m.AsYaml(), which per object writes the YAML node out, parses it
	// back, encodes JSON and has sigs.k8s.io/yaml parse that again; here the
	// node is decoded once and marshalled (see yaml.go), byte-identical.
	// The output bound is checked as it is encoded, not after.
	var out bytes.Buffer
	for i, r := range m.Resources() {
		y, err := resourceYAML(r)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %v", display, r.CurId(), err)
		}
		if i > 0 {
			out.WriteString("---\n")
		}
		out.Write(y)
		if out.Len() > MaxOutputBytes {
			return nil, CheckOutput(display, out.Bytes(), m.Size())
		}
	}
	return bytes.TrimSpace(out.Bytes()), nil
}

// largestDocument is the length of the longest document of a YAML stream.
func largestDocument(stream []byte) int64 {
	var n int64
	for _, d := range bytes.Split(stream, []byte("\n---\n")) {
		n = max(n, int64(len(d)))
	}
	return n
}

// redactPaths drops the in-memory root from kustomize's messages.
func redactPaths(s string) string { return strings.ReplaceAll(s, "/app/", "") }

func isKustomization(name string) bool {
	base := path.Base(name)
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		if base == n {
			return true
		}
	}
	return false
}

func sortedFileNames(files map[string][]byte) []string {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

type overlayChecker struct {
	files   map[string][]byte
	display string
	root    string // the root kustomization's file name
	// kusts: every kustomization of the directory as kustomize decodes it.
	kusts map[string]*types.Kustomization
	// nodes: the same files as YAML node trees, only to find line numbers.
	nodes map[string]*kyaml.Node
	// aliasBudget: what YAML aliases may still add to the overlay (aliases.go).
	aliasBudget int64
	// patchRefs: where each patch is declared, for messages naming it.
	patchRefs []patchRef
}

type patchRef struct {
	at   string // file:line
	text string // the patch's text, to find what it names
}

func (c *overlayChecker) fail(file string, line int, format string, args ...any) error {
	return &OverlayError{File: path.Join(c.display, file), Line: line, Msg: fmt.Sprintf(format, args...)}
}

// skipKustomizationCheck turns the first guard (the check of decoded
// kustomizations) off, so tests can show the second one (sandbox.go) holds
// on its own. Never set outside tests.
var skipKustomizationCheck bool

// kustomization decodes one kustomization file of the overlay directory
// exactly as krusty does (types.Kustomization.Unmarshal: YAML to JSON with
// merge keys resolved, field names matched as encoding/json matches them,
// case-insensitively; then FixKustomization: bases into resources, the
// legacy env and helm fields into their successors) and checks the result.
func (c *overlayChecker) kustomization(name string) error {
	data := c.files[name]
	// kustomize's own YAML parser, for line numbers; a file it cannot parse
	// is refused whatever sigs.k8s.io/yaml makes of it.
	var node kyaml.Node
	if err := kyaml.Unmarshal(data, &node); err != nil {
		return c.fail(name, 0, "invalid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	c.nodes[name] = &node
	var raw types.Kustomization
	if err := raw.Unmarshal(data); err != nil {
		return c.fail(name, 0, "%s", err)
	}
	k := raw
	k.FixKustomization()
	c.kusts[name] = &k
	if skipKustomizationCheck {
		return nil
	}
	if f, why := refusedFields(&raw); f != "" {
		return c.fail(name, c.keyLine(name, f), "%s: %s", f, why)
	}
	if name == c.root {
		for _, f := range []struct{ field, value, why string }{
			{"namespace", k.Namespace, "would move the rendered contract objects to another namespace"},
			{"namePrefix", k.NamePrefix, "would rename the rendered contract objects"},
			{"nameSuffix", k.NameSuffix, "would rename the rendered contract objects"},
		} {
			if f.value != "" {
				return c.fail(name, c.keyLine(name, f.field), "%s: %s; patch the objects you add instead", f.field, f.why)
			}
		}
	}
	return c.paths(name, &k)
}

// refusedFields names the first field of k that runs code, fetches, or
// puts a credential in git, and why it is refused.
func refusedFields(k *types.Kustomization) (string, string) {
	const helm = "helm chart inflation is refused: render the chart into files in the directory"
	const code = " plugins and KRM functions are refused: they run code in the repo-server"
	switch {
	case len(k.HelmCharts) > 0:
		return "helmCharts", helm
	case k.HelmGlobals != nil:
		return "helmGlobals", helm
	case len(k.HelmChartInflationGenerator) > 0:
		return "helmChartInflationGenerator", helm
	case len(k.Generators) > 0:
		return "generators", "generator" + code
	case len(k.Transformers) > 0:
		return "transformers", "transformer" + code
	case len(k.Validators) > 0:
		return "validators", "validator" + code
	case len(k.SecretGenerator) > 0:
		return "secretGenerator", "a secret generator puts a credential in git: list the secret in the record's spec.secrets (it comes from Secrets Manager)"
	}
	return "", ""
}

// paths checks every field of k that names a file, a directory or a URL
// (TestKustomizationFieldsClassified keeps this list complete).
func (c *overlayChecker) paths(name string, k *types.Kustomization) error {
	dir := path.Dir(name)
	type entry struct {
		field, p string
		dirOK    bool
	}
	var es []entry
	for _, p := range k.Resources { // bases included
		es = append(es, entry{"resources", p, true})
	}
	for _, p := range k.Components {
		es = append(es, entry{"components", p, true})
	}
	for _, p := range k.Crds {
		es = append(es, entry{"crds", p, false})
	}
	for _, p := range k.Configurations {
		es = append(es, entry{"configurations", p, false})
	}
	if p, ok := k.OpenAPI["path"]; ok {
		es = append(es, entry{"openapi.path", p, false})
	}
	for _, r := range k.Replacements {
		if r.Path != "" {
			es = append(es, entry{"replacements.path", r.Path, false})
		}
	}
	for _, g := range k.ConfigMapGenerator {
		for _, p := range g.FileSources {
			if _, after, ok := strings.Cut(p, "="); ok {
				p = after
			}
			es = append(es, entry{"configMapGenerator.files", p, false})
		}
		for _, p := range g.EnvSources { // env included
			es = append(es, entry{"configMapGenerator.envs", p, false})
		}
		if g.EnvSource != "" {
			es = append(es, entry{"configMapGenerator.env", g.EnvSource, false})
		}
	}
	for _, e := range es {
		if err := c.local(name, dir, e.field, e.p, e.dirOK); err != nil {
			return err
		}
	}
	// Patches: a path (local, like every other) or inline text, which
	// kustomize parses as YAML, so aliases in it count against the budget.
	for _, p := range k.PatchesStrategicMerge {
		s := string(p)
		// An inline patch spans lines or is a flow mapping; kustomize reads
		// anything else as a path.
		if strings.Contains(s, "\n") || strings.HasPrefix(strings.TrimSpace(s), "{") {
			if err := c.inline(name, "patchesStrategicMerge", s); err != nil {
				return err
			}
			continue
		}
		if err := c.patchFile(name, dir, "patchesStrategicMerge", s, ""); err != nil {
			return err
		}
	}
	for _, l := range []struct {
		field string
		ps    []types.Patch
	}{{"patches", k.Patches}, {"patchesJson6902", k.PatchesJson6902}} {
		for _, p := range l.ps {
			if p.Patch != "" {
				if err := c.inline(name, l.field, p.Patch); err != nil {
					return err
				}
			}
			if p.Path != "" {
				if err := c.patchFile(name, dir, l.field+".path", p.Path, p.Patch); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// inline checks an inline patch and records it for messages.
func (c *overlayChecker) inline(file, field, text string) error {
	line := c.valueLine(file, text)
	if err := c.spendAliases(text); err != nil {
		return c.fail(file, line, "%s: inline patch: %v", field, err)
	}
	c.patchRefs = append(c.patchRefs, patchRef{fmt.Sprintf("%s:%d", path.Join(c.display, file), line), text})
	return nil
}

// local checks that p (relative to dir) is a file of the overlay directory,
// or with dirOK a directory of it holding a kustomization.
func (c *overlayChecker) local(file, dir, field, p string, dirOK bool) error {
	line := c.valueLine(file, p)
	if looksRemote(p, dirOK) {
		return c.fail(file, line, "%s: %q is remote: remote resources, bases and components are refused (nothing is fetched during a render); copy the files into the cluster directory", field, p)
	}
	if p == "" || path.IsAbs(p) || strings.Contains(p, "\\") {
		return c.fail(file, line, "%s: %q must be a path relative to the kustomization", field, p)
	}
	full := path.Join(dir, p)
	if full == ".." || strings.HasPrefix(full, "../") {
		return c.fail(file, line, "%s: %q leaves the cluster directory: an overlay reads only its own directory", field, p)
	}
	if _, ok := c.files[full]; ok {
		if full == c.root {
			return c.fail(file, line, "%s: %q is the kustomization itself", field, p)
		}
		return nil
	}
	if dirOK {
		for _, n := range konfig.RecognizedKustomizationFileNames() {
			if _, ok := c.files[path.Join(full, n)]; ok {
				if full == "." || full == dir {
					return c.fail(file, line, "%s: %q is the kustomization's own directory", field, p)
				}
				return nil
			}
		}
	}
	return c.fail(file, line, "%s: %q is not a file%s in the cluster directory", field, p, map[bool]string{true: " or kustomization directory", false: ""}[dirOK])
}

// patchFile checks a patch path and records the patch for messages.
func (c *overlayChecker) patchFile(file, dir, field, p, inline string) error {
	if err := c.local(file, dir, field, p, false); err != nil {
		return err
	}
	c.patchRefs = append(c.patchRefs, patchRef{fmt.Sprintf("%s:%d", path.Join(c.display, file), c.valueLine(file, p)), inline + string(c.files[path.Join(dir, p)])})
	return nil
}

// looksRemote: the forms kustomize loads over the network. Every field's
// files are fetched over HTTP when they parse as http(s) URLs; resources
// and components (base) are also cloned with git when kustomize's
// NewRepoSpecFromURL takes them: a scheme, user@host:path, a github.com
// host, ?ref=. A path that is none of these must exist locally anyway.
func looksRemote(p string, base bool) bool {
	l := strings.ToLower(strings.TrimSpace(p))
	if strings.Contains(l, "://") || strings.HasPrefix(l, "http:") || strings.HasPrefix(l, "https:") {
		return true
	}
	if !base {
		return false
	}
	for _, pre := range []string{"github.com", "gitlab.com/", "bitbucket.org/", "git::", "gh:", "ssh:", "file:"} {
		if strings.HasPrefix(l, pre) {
			return true
		}
	}
	return strings.ContainsAny(l, "@?") || strings.Contains(l, "//")
}

// keyLine is the line of the first mapping key of file that encoding/json
// would match to field (case-insensitively), 0 when none is found (a merge
// key or an alias supplied it: the message still names the field).
func (c *overlayChecker) keyLine(file, field string) int {
	return findLine(c.nodes[file], func(n *kyaml.Node, key bool) bool { return key && strings.EqualFold(n.Value, field) })
}

// valueLine is the line of the first scalar of file whose value is v.
func (c *overlayChecker) valueLine(file, v string) int {
	return findLine(c.nodes[file], func(n *kyaml.Node, key bool) bool { return !key && n.Value == v })
}

// findLine walks the node tree as parsed (aliases are not followed, so the
// walk is linear in the file) for the first scalar that match accepts.
func findLine(n *kyaml.Node, match func(n *kyaml.Node, key bool) bool) int {
	var walk func(n *kyaml.Node, key bool) int
	walk = func(n *kyaml.Node, key bool) int {
		if n == nil {
			return 0
		}
		if n.Kind == kyaml.ScalarNode && match(n, key) {
			return n.Line
		}
		for i, ch := range n.Content {
			if l := walk(ch, n.Kind == kyaml.MappingNode && i%2 == 0); l > 0 {
				return l
			}
		}
		return 0
	}
	return walk(n, false)
}

type objID struct{ group, kind, namespace, name string }

func (id objID) String() string {
	k := id.kind
	if id.group != "" {
		k += "." + id.group
	}
	if id.namespace != "" {
		return fmt.Sprintf("%s %s/%s", k, id.namespace, id.name)
	}
	return fmt.Sprintf("%s %s", k, id.name)
}

// result checks the overlay's output against the rendered base.
func (c *overlayChecker) result(base []Object, out []*resource.Resource) error {
	got := map[objID]*resource.Resource{}
	var ids []objID // in output order, so the first refusal is always the same one
	for _, r := range out {
		g, _, _ := strings.Cut(r.GetApiVersion(), "/")
		if !strings.Contains(r.GetApiVersion(), "/") {
			g = ""
		}
		id := objID{g, r.GetKind(), r.GetNamespace(), r.GetName()}
		if _, twice := got[id]; twice {
			// kustomize tells objects apart by version too; the API server does not.
			return c.fail(c.root, 0, "the overlay adds a second %s (apiVersion %s): the cluster holds one object of that name", id, r.GetApiVersion())
		}
		got[id] = r
		ids = append(ids, id)
	}
	baseIDs := map[objID]Object{}
	var missing []objID
	for _, o := range base {
		id := objectID(o.Obj)
		baseIDs[id] = o
		if _, ok := got[id]; !ok {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		id := missing[0]
		return c.fail(c.root, 0, "the overlay deletes, renames or moves %s, which spokeforge renders (boundary %s): an overlay may patch and add objects, not remove the spoke's contracts%s",
			id, baseIDs[id].Boundary, c.naming(id.name))
	}
	for _, o := range base {
		id := objectID(o.Obj)
		if id.kind != "Onboarding" || id.group != onboarding.Group {
			continue
		}
		m, err := got[id].Map()
		if err != nil {
			return err
		}
		if field := onboardingChange(o.Obj, m); field != "" {
			return c.fail(c.root, 0, "the overlay changes %s (%s): an overlay may label and annotate the Onboarding, not change what it asks the spoke's agent to check or how Argo CD weighs its health%s",
				id, field, c.naming(id.name))
		}
	}
	for _, id := range ids {
		if _, rendered := baseIDs[id]; rendered {
			continue
		}
		if id.kind == "Secret" && id.group == "" {
			return c.fail(c.root, 0, "the overlay adds %s: a Secret in the overlay puts a credential in git; list it in the record's spec.secrets", id)
		}
		if ownAPIGroup(id.group) {
			return c.fail(c.root, 0, "the overlay adds %s: objects of spokeforge's own API (%s) are rendered by spokeforge alone; the spoke has one Onboarding, the one named after the cluster, and another beside it could stand for it in Argo CD and the UI",
				id, onboarding.Group)
		}
	}
	return nil
}

// ownAPIGroup: spokeforge's API group or one under it, in any case (the
// API server refuses other spellings; a check need not depend on that).
func ownAPIGroup(g string) bool {
	g = strings.ToLower(g)
	return g == onboarding.Group || strings.HasSuffix(g, "."+onboarding.Group)
}

// onboardingChange names the first field of the Onboarding an overlay may
// not change ("" for none): anything but its labels and annotations, and
// those under argocd.argoproj.io/ (argocd.argoproj.io/ignore-healthcheck
// would drop its health from the Application's).
func onboardingChange(base, got map[string]any) string {
	differs := func(a, b any) bool {
		ja, _ := yamlv2.Marshal(normal(a))
		jb, _ := yamlv2.Marshal(normal(b))
		return !bytes.Equal(ja, jb)
	}
	for _, k := range unionKeys(base, got) {
		if k != "metadata" && differs(base[k], got[k]) {
			return k
		}
	}
	bm, _ := base["metadata"].(map[string]any)
	gm, _ := got["metadata"].(map[string]any)
	for _, k := range unionKeys(bm, gm) {
		if k == "labels" || k == "annotations" {
			b, _ := bm[k].(map[string]any)
			g, _ := gm[k].(map[string]any)
			for _, key := range unionKeys(b, g) {
				if strings.HasPrefix(key, "argocd.argoproj.io/") && differs(b[key], g[key]) {
					return "metadata." + k + "." + key
				}
			}
		} else if differs(bm[k], gm[k]) {
			return "metadata." + k
		}
	}
	return ""
}

// unionKeys: the keys of a and b, sorted, each once.
func unionKeys(a, b map[string]any) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// naming lists the patches whose text names the object, for the message.
func (c *overlayChecker) naming(name string) string {
	var at []string
	for _, p := range c.patchRefs {
		if strings.Contains(p.text, name) {
			at = append(at, p.at)
		}
	}
	if len(at) == 0 {
		return ""
	}
	return " (patches naming it: " + strings.Join(at, ", ") + ")"
}

func objectID(obj map[string]any) objID {
	av, _ := obj["apiVersion"].(string)
	g, _, ok := strings.Cut(av, "/")
	if !ok {
		g = ""
	}
	k, _ := obj["kind"].(string)
	md, _ := obj["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	n, _ := md["name"].(string)
	return objID{g, k, ns, n}
}

// normal makes the numbers of decoded values comparable (int64).
func normal(v any) any {
	if n, ok := integers(v); ok {
		return n
	}
	return v
}

// resourceYAML is (*resource.Resource).AsYAML: the object as sigs.k8s.io/yaml
// prints it.
func resourceYAML(r *resource.Resource) ([]byte, error) {
	if m, err := r.Map(); err == nil {
		if v, ok := integers(m); ok {
			return yamlv2.Marshal(v)
		}
	}
	j, err := r.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return jsonToYAML(j)
}
