package render

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	yamlv2 "go.yaml.in/yaml/v2"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// OverlayFile is the optional kustomization applied on top of the rendered spoke.
const OverlayFile = "kustomization.yaml"

// RenderedResource is the name the rendered base has inside the overlay;
// spokeforge adds it to the overlay's resources itself.
const RenderedResource = "spokeforge-rendered.yaml"

// ApplyOverlay runs dir's kustomization.yaml over the rendered base in
// memory (krusty). Files are copied from dir only: an overlay cannot read
// outside its cluster directory.
func ApplyOverlay(dir string, base []byte) ([]byte, error) {
	kpath := filepath.Join(dir, OverlayFile)
	kdata, err := os.ReadFile(kpath)
	if err != nil {
		return nil, err
	}
	var k map[string]any
	if err := yaml.Unmarshal(kdata, &k); err != nil {
		return nil, fmt.Errorf("%s: invalid YAML: %w", kpath, err)
	}
	if k == nil {
		k = map[string]any{}
	}
	res, _ := k["resources"].([]any)
	k["resources"] = append([]any{RenderedResource}, res...)
	kout, err := yaml.Marshal(k)
	if err != nil {
		return nil, err
	}
	mem := filesys.MakeFsInMemory()
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if rel == OverlayFile || !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return mem.WriteFile(filepath.Join("/app", rel), b)
	})
	if err != nil {
		return nil, err
	}
	if err := mem.WriteFile("/app/"+OverlayFile, kout); err != nil {
		return nil, err
	}
	if err := mem.WriteFile("/app/"+RenderedResource, base); err != nil {
		return nil, err
	}
	opts := krusty.MakeDefaultOptions()
	m, err := krusty.MakeKustomizer(opts).Run(mem, "/app")
	if err != nil {
		return nil, fmt.Errorf("%s: %v", kpath, err)
	}
	// As m.AsYaml(), which per object writes the YAML node out, parses it
	// back, encodes JSON and has sigs.k8s.io/yaml parse that again; here the
	// node is decoded once and marshalled (see yaml.go), byte-identical.
	var out bytes.Buffer
	for i, r := range m.Resources() {
		y, err := resourceYAML(r)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %v", kpath, r.CurId(), err)
		}
		if i > 0 {
			out.WriteString("---\n")
		}
		out.Write(y)
	}
	return bytes.TrimSpace(out.Bytes()), nil
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
