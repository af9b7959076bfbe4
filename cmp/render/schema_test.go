package render_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

// crdSources are the CRDs the spoke runs, from those projects' own modules.
var crdSources = []struct{ module, glob string }{
	{"github.com/cert-manager/cert-manager@v1.19.4", "deploy/crds/*.yaml"},
	{"github.com/external-secrets/external-secrets@v1.3.2", "deploy/crds/bundle.yaml"},
	{"sigs.k8s.io/node-feature-discovery@v0.17.3", "deployment/base/nfd-crds/nfd-api-crds.yaml"},
}

type crdVersion struct {
	structural *structuralschema.Structural
	validator  validation.SchemaValidator
}

func loadCRDs(t *testing.T) map[string]crdVersion {
	t.Helper()
	out := map[string]crdVersion{}
	var files []string
	for _, src := range crdSources {
		b, err := exec.Command("go", "mod", "download", "-json", src.module).Output()
		if err != nil {
			t.Fatalf("go mod download %s: %v", src.module, err)
		}
		var m struct{ Dir string }
		if err := json.Unmarshal(b, &m); err != nil || m.Dir == "" {
			t.Fatalf("go mod download %s: no Dir", src.module)
		}
		f, _ := filepath.Glob(filepath.Join(m.Dir, src.glob))
		files = append(files, f...)
	}
	files = append(files, "../../manifests/crds/onboarding.yaml")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var crd apiextv1.CustomResourceDefinition
			if err := dec.Decode(&crd); err != nil {
				break
			}
			if crd.Kind != "CustomResourceDefinition" {
				continue
			}
			for _, v := range crd.Spec.Versions {
				if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
					continue
				}
				var internal apiextensions.JSONSchemaProps
				if err := apiextv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
					t.Fatal(err)
				}
				s, err := structuralschema.NewStructural(&internal)
				if err != nil {
					t.Fatalf("%s %s: %v", crd.Name, v.Name, err)
				}
				val, _, err := validation.NewSchemaValidator(&internal)
				if err != nil {
					t.Fatal(err)
				}
				out[crd.Spec.Group+"/"+v.Name+"/"+crd.Spec.Names.Kind] = crdVersion{s, val}
			}
		}
	}
	return out
}

// TestRenderedObjectsMeetUpstreamSchemas checks every custom resource the
// examples render against the real CRD schema of the project that owns it:
// no field the API server would prune, no schema violation.
func TestRenderedObjectsMeetUpstreamSchemas(t *testing.T) {
	crds := loadCRDs(t)
	goldens, _ := filepath.Glob(filepath.Join(exampleRepo, "rendered", "*.yaml"))
	checked := 0
	for _, g := range goldens {
		data, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(data), "\n---\n") {
			var obj map[string]any
			if err := sigsyaml.Unmarshal([]byte(doc), &obj); err != nil || obj == nil {
				t.Fatalf("%s: %v", g, err)
			}
			av, _ := obj["apiVersion"].(string)
			kind, _ := obj["kind"].(string)
			v, ok := crds[av+"/"+kind]
			if !ok {
				continue // a core kind, or argoproj.io (checked by the e2e suite)
			}
			checked++
			name := g + ": " + kind + "/" + obj["metadata"].(map[string]any)["name"].(string)
			unknown := pruning.PruneWithOptions(deepCopy(obj), v.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
			if len(unknown) > 0 {
				t.Errorf("%s: fields the API server would drop: %v", name, unknown)
			}
			if errs := validation.ValidateCustomResource(nil, obj, v.validator); len(errs) > 0 {
				t.Errorf("%s: %v", name, errs.ToAggregate())
			}
		}
	}
	t.Logf("checked %d custom resources against %d CRD versions", checked, len(crds))
	if checked < 10 {
		t.Fatalf("checked only %d custom resources", checked)
	}
}

func deepCopy(m map[string]any) map[string]any {
	b, _ := json.Marshal(m)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}
