package render

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	yamlv2 "go.yaml.in/yaml/v2"
	yamlv3 "gopkg.in/yaml.v3"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/kyaml/filesys"

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
	// File is the kustomization file's name in Dir (FindOverlay).
	File string
	// InCluster: the spoke is the management cluster, so the overlay may
	// only patch, never add objects or touch RBAC.
	InCluster bool
}

// Apply runs the overlay over the rendered base in memory (krusty), after
// checking every kustomization in the directory: files come from Dir only
// (regular, bounded, inside it), every path an overlay names must be a
// file or directory there — so no remote resource, base or component of
// any form is ever fetched and nothing outside the directory is read —,
// and helm, plugins, KRM functions and secret generators are refused.
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
	chk := overlayChecker{files: files, display: ov.Display, root: ov.File}
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
	root, err := withRenderedResource(files[ov.File])
	if err != nil {
		return nil, &OverlayError{File: path.Join(ov.Display, ov.File), Msg: "invalid YAML: " + err.Error()}
	}
	if err := mem.WriteFile("/app/"+ov.File, root); err != nil {
		return nil, err
	}
	if err := mem.WriteFile("/app/"+RenderedResource, baseYAML); err != nil {
		return nil, err
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, "/app")
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path.Join(ov.Display, ov.File), redactPaths(err.Error()))
	}
	if err := chk.result(base, m.Resources(), ov.InCluster); err != nil {
		return nil, err
	}
	// As m.AsYaml(), which per object writes the YAML node out, parses it
	// back, encodes JSON and has sigs.k8s.io/yaml parse that again; here the
	// node is decoded once and marshalled (see yaml.go), byte-identical.
	var out bytes.Buffer
	for i, r := range m.Resources() {
		y, err := resourceYAML(r)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %v", path.Join(ov.Display, ov.File), r.CurId(), err)
		}
		if i > 0 {
			out.WriteString("---\n")
		}
		out.Write(y)
	}
	return bytes.TrimSpace(out.Bytes()), nil
}

// redactPaths drops the in-memory root from kustomize's messages.
func redactPaths(s string) string { return strings.ReplaceAll(s, "/app/", "") }

// withRenderedResource puts the rendered base first in the root kustomization's resources.
func withRenderedResource(data []byte) ([]byte, error) {
	var k map[string]any
	if err := yamlv2.Unmarshal(data, &k); err != nil {
		return nil, err
	}
	if k == nil {
		k = map[string]any{}
	}
	res, _ := k["resources"].([]any)
	k["resources"] = append([]any{RenderedResource}, res...)
	return yamlv2.Marshal(k)
}

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

// Fields that run code, fetch, or put credentials in git.
var refusedOverlayFields = map[string]string{
	"helmCharts":                  "helm chart inflation is refused: render the chart into files in the directory",
	"helmGlobals":                 "helm chart inflation is refused",
	"helmChartInflationGenerator": "helm chart inflation is refused",
	"generators":                  "generator plugins and KRM functions are refused: they run code in the repo-server",
	"transformers":                "transformer plugins and KRM functions are refused: they run code in the repo-server",
	"validators":                  "validator plugins and KRM functions are refused: they run code in the repo-server",
	"secretGenerator":             "a secret generator puts a credential in git: list the secret in the record's spec.secrets (it comes from Secrets Manager)",
}

// Fields of the root kustomization that would rename or move every rendered object.
var refusedRootFields = map[string]string{
	"namespace":  "would move the rendered contract objects to another namespace",
	"namePrefix": "would rename the rendered contract objects",
	"nameSuffix": "would rename the rendered contract objects",
}

// kustomization checks one kustomization file of the overlay directory.
func (c *overlayChecker) kustomization(name string) error {
	dir := path.Dir(name)
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(c.files[name], &doc); err != nil {
		return c.fail(name, 0, "invalid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil
	}
	top := doc.Content[0]
	if top.Kind != yamlv3.MappingNode {
		return c.fail(name, top.Line, "a kustomization must be a mapping")
	}
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		if why, bad := refusedOverlayFields[k.Value]; bad {
			return c.fail(name, k.Line, "%s: %s", k.Value, why)
		}
		if why, bad := refusedRootFields[k.Value]; bad && name == c.root {
			return c.fail(name, k.Line, "%s: %s; patch the objects you add instead", k.Value, why)
		}
		var err error
		switch k.Value {
		case "resources", "bases", "components":
			err = c.eachString(name, k.Value, v, func(line int, p string) error { return c.local(name, dir, k.Value, line, p, true) })
		case "crds", "configurations":
			err = c.eachString(name, k.Value, v, func(line int, p string) error { return c.local(name, dir, k.Value, line, p, false) })
		case "patchesStrategicMerge":
			err = c.eachString(name, k.Value, v, func(line int, p string) error {
				// An inline patch spans lines (or is a flow mapping); anything
				// else is a path, which must be local like every other.
				if strings.Contains(p, "\n") || strings.HasPrefix(strings.TrimSpace(p), "{") {
					c.patchRefs = append(c.patchRefs, patchRef{fmt.Sprintf("%s:%d", path.Join(c.display, name), line), p})
					return nil
				}
				return c.patchFile(name, dir, k.Value, line, p)
			})
		case "patches", "patchesJson6902", "replacements":
			err = c.patchList(name, dir, k.Value, v)
		case "configMapGenerator":
			err = c.generatorFiles(name, dir, v)
		case "openapi":
			err = c.mapPath(name, dir, k.Value, v)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (c *overlayChecker) eachString(file, field string, v *yamlv3.Node, fn func(int, string) error) error {
	if v.Kind != yamlv3.SequenceNode {
		return c.fail(file, v.Line, "%s: expected a list", field)
	}
	for _, e := range v.Content {
		if e.Kind != yamlv3.ScalarNode {
			return c.fail(file, e.Line, "%s: expected a path", field)
		}
		if err := fn(e.Line, e.Value); err != nil {
			return err
		}
	}
	return nil
}

// local checks that p (relative to dir) is a file of the overlay directory,
// or with dirOK a directory of it holding a kustomization.
func (c *overlayChecker) local(file, dir, field string, line int, p string, dirOK bool) error {
	if looksRemote(p) {
		return c.fail(file, line, "%s: %q is remote: remote resources, bases and components are refused (nothing is fetched during a render); copy the files into the cluster directory", field, p)
	}
	if path.IsAbs(p) || strings.Contains(p, "\\") {
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

func (c *overlayChecker) patchFile(file, dir, field string, line int, p string) error {
	if err := c.local(file, dir, field, line, p, false); err != nil {
		return err
	}
	c.patchRefs = append(c.patchRefs, patchRef{fmt.Sprintf("%s:%d", path.Join(c.display, file), line), string(c.files[path.Join(dir, p)])})
	return nil
}

// patchList checks patches, patchesJson6902 and replacements entries: a
// path (local) or an inline patch.
func (c *overlayChecker) patchList(file, dir, field string, v *yamlv3.Node) error {
	if v.Kind != yamlv3.SequenceNode {
		return c.fail(file, v.Line, "%s: expected a list", field)
	}
	for _, e := range v.Content {
		if e.Kind != yamlv3.MappingNode {
			return c.fail(file, e.Line, "%s: expected a mapping", field)
		}
		text, _ := yamlv3.Marshal(e)
		ref := patchRef{fmt.Sprintf("%s:%d", path.Join(c.display, file), e.Line), string(text)}
		for i := 0; i+1 < len(e.Content); i += 2 {
			if e.Content[i].Value == "path" {
				if err := c.patchFile(file, dir, field, e.Content[i+1].Line, e.Content[i+1].Value); err != nil {
					return err
				}
				ref.text += string(c.files[path.Join(dir, e.Content[i+1].Value)])
			}
		}
		c.patchRefs = append(c.patchRefs, ref)
	}
	return nil
}

// generatorFiles checks configMapGenerator files and envs ([key=]path).
func (c *overlayChecker) generatorFiles(file, dir string, v *yamlv3.Node) error {
	if v.Kind != yamlv3.SequenceNode {
		return c.fail(file, v.Line, "configMapGenerator: expected a list")
	}
	for _, g := range v.Content {
		for i := 0; i+1 < len(g.Content); i += 2 {
			k, val := g.Content[i], g.Content[i+1]
			switch k.Value {
			case "files", "envs":
				err := c.eachString(file, "configMapGenerator."+k.Value, val, func(line int, p string) error {
					if _, after, ok := strings.Cut(p, "="); ok && k.Value == "files" {
						p = after
					}
					return c.local(file, dir, "configMapGenerator."+k.Value, line, p, false)
				})
				if err != nil {
					return err
				}
			case "env":
				if err := c.local(file, dir, "configMapGenerator.env", val.Line, val.Value, false); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (c *overlayChecker) mapPath(file, dir, field string, v *yamlv3.Node) error {
	for i := 0; i+1 < len(v.Content); i += 2 {
		if v.Content[i].Value == "path" {
			return c.local(file, dir, field+".path", v.Content[i+1].Line, v.Content[i+1].Value, false)
		}
	}
	return nil
}

// looksRemote: the forms kustomize loads over the network (URLs, git
// shorthands, go-getter style); anything else must exist locally anyway.
func looksRemote(p string) bool {
	l := strings.ToLower(p)
	for _, pre := range []string{"github.com/", "gitlab.com/", "bitbucket.org/", "git@", "git::", "gh:", "ssh:", "file:"} {
		if strings.HasPrefix(l, pre) {
			return true
		}
	}
	return strings.Contains(l, "://") || strings.Contains(l, "?ref=") || strings.Contains(l, "?version=") || strings.Contains(l, ".git//")
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

var rbacKinds = map[string]bool{"Role": true, "ClusterRole": true, "RoleBinding": true, "ClusterRoleBinding": true}

// result checks the overlay's output against the rendered base.
func (c *overlayChecker) result(base []Object, out []*resource.Resource, inCluster bool) error {
	got := map[objID]*resource.Resource{}
	for _, r := range out {
		g, _, _ := strings.Cut(r.GetApiVersion(), "/")
		if !strings.Contains(r.GetApiVersion(), "/") {
			g = ""
		}
		got[objID{g, r.GetKind(), r.GetNamespace(), r.GetName()}] = r
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
	if !inCluster {
		for id := range got {
			if _, rendered := baseIDs[id]; !rendered && id.kind == "Secret" && id.group == "" {
				return c.fail(c.root, 0, "the overlay adds %s: a Secret in the overlay puts a credential in git; list it in the record's spec.secrets", id)
			}
		}
		return nil
	}
	// The spoke is the management cluster: patch only, and never RBAC.
	for id := range got {
		if _, rendered := baseIDs[id]; !rendered {
			return c.fail(c.root, 0, "the overlay adds %s to an inCluster record, whose spoke is the management cluster: overlays there may only patch rendered objects", id)
		}
	}
	for id, o := range baseIDs {
		if !rbacKinds[id.kind] {
			continue
		}
		m, err := got[id].Map()
		if err != nil {
			return err
		}
		if !sameRBAC(o.Obj, m) {
			return c.fail(c.root, 0, "the overlay changes %s on an inCluster record, whose spoke is the management cluster: RBAC there is not patched by overlays%s", id, c.naming(id.name))
		}
	}
	return nil
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

// sameRBAC compares what grants access: rules, roleRef, subjects, aggregation.
func sameRBAC(a, b map[string]any) bool {
	for _, f := range []string{"rules", "roleRef", "subjects", "aggregationRule"} {
		ja, _ := yamlv2.Marshal(normal(a[f]))
		jb, _ := yamlv2.Marshal(normal(b[f]))
		if !bytes.Equal(ja, jb) {
			return false
		}
	}
	return true
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
