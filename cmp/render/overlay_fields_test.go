package render

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/types"
)

// stringFields lists every string a value of t can hold, by JSON path
// ("[]" an element, "{}" a map value), inline structs flattened.
func stringFields(t reflect.Type, prefix string, depth int, out map[string]bool) {
	if depth > 12 {
		out[prefix+" (too deep)"] = true
		return
	}
	switch t.Kind() {
	case reflect.String:
		out[prefix] = true
	case reflect.Pointer:
		stringFields(t.Elem(), prefix, depth+1, out)
	case reflect.Slice, reflect.Array:
		stringFields(t.Elem(), prefix+"[]", depth+1, out)
	case reflect.Map:
		stringFields(t.Elem(), prefix+"{}", depth+1, out)
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			p := prefix
			if !(name == "" && (strings.Contains(opts, "inline") || f.Anonymous)) {
				if name == "" {
					name = f.Name
				}
				if p != "" {
					p += "."
				}
				p += name
			}
			stringFields(f.Type, p, depth+1, out)
		}
	}
}

// kustomizationStrings classifies every string field of kustomize's
// Kustomization: "path" fields are checked by overlayChecker.paths (or
// patches'/inline text), "refused" fields refuse the kustomization
// (refusedFields), "data" fields name nothing that is read. A new field in a
// kustomize upgrade fails TestKustomizationFieldsClassified until it is
// classified here and, if it names a file or URL, checked.
var kustomizationStrings = map[string]string{
	"apiVersion": "data", "kind": "data",
	"metadata.name": "data", "metadata.namespace": "data", "metadata.labels{}": "data", "metadata.annotations{}": "data",
	"openapi{}":  "path", // the "path" key; other keys are not read as files
	"namePrefix": "data", "nameSuffix": "data", "namespace": "data",
	"commonLabels{}": "data", "commonAnnotations{}": "data",
	"labels[].pairs{}": "data", "labels[].fields[].path": "data", "labels[].fields[].group": "data", "labels[].fields[].version": "data", "labels[].fields[].kind": "data",
	"patchesStrategicMerge[]": "path", "patchesJson6902[].path": "path", "patches[].path": "path",
	"patchesJson6902[].patch": "path", "patches[].patch": "path", // inline text: aliases bounded, named in messages
	"images[].name": "data", "images[].newName": "data", "images[].newTag": "data", "images[].digest": "data", "images[].tagSuffix": "data",
	"imageTags[].name": "data", "imageTags[].newName": "data", "imageTags[].newTag": "data", "imageTags[].digest": "data", "imageTags[].tagSuffix": "data",
	"replacements[].path": "path",
	"replicas[].name":     "data",
	"vars[].name":         "data", "vars[].objref.apiVersion": "data", "vars[].objref.group": "data", "vars[].objref.version": "data", "vars[].objref.kind": "data", "vars[].objref.name": "data", "vars[].objref.namespace": "data", "vars[].fieldref.fieldPath": "data",
	"sortOptions.order": "data", "sortOptions.legacySortOptions.orderFirst[]": "data", "sortOptions.legacySortOptions.orderLast[]": "data",
	"resources[]": "path", "components[]": "path", "crds[]": "path", "bases[]": "path",
	"configurations[]": "path", "generators[]": "refused", "transformers[]": "refused", "validators[]": "refused", "buildMetadata[]": "data",
	"configMapGenerator[].namespace": "data", "configMapGenerator[].name": "data", "configMapGenerator[].behavior": "data",
	"configMapGenerator[].literals[]": "data", "configMapGenerator[].files[]": "path", "configMapGenerator[].envs[]": "path", "configMapGenerator[].env": "path",
	"configMapGenerator[].options.labels{}": "data", "configMapGenerator[].options.annotations{}": "data",
	"generatorOptions.labels{}": "data", "generatorOptions.annotations{}": "data",
	// Selectors and replacement rules: names of objects and fields, no file.
	"replacements[].sourceValue": "data", "replacements[].targets[].fieldPaths[]": "data",
	"replacements[].source.fieldPath": "data", "replacements[].source.options.delimiter": "data", "replacements[].source.options.encoding": "data",
	"replacements[].targets[].options.delimiter": "data", "replacements[].targets[].options.encoding": "data",
}

func init() {
	for _, sel := range []string{"patches[].target", "patchesJson6902[].target", "replacements[].targets[].select", "replacements[].targets[].reject[]"} {
		for _, f := range []string{"group", "version", "kind", "name", "namespace", "annotationSelector", "labelSelector"} {
			kustomizationStrings[sel+"."+f] = "data"
		}
	}
	for _, f := range []string{"group", "version", "kind", "name", "namespace"} {
		kustomizationStrings["replacements[].source."+f] = "data"
	}
}

func TestKustomizationFieldsClassified(t *testing.T) {
	got := map[string]bool{}
	stringFields(reflect.TypeOf(types.Kustomization{}), "", 0, got)
	var names []string
	for n := range got {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, ok := kustomizationStrings[n]; ok {
			continue
		}
		// Whole refused fields: any string under them is refused with them.
		refused := false
		for _, f := range []string{"secretGenerator", "helmGlobals", "helmCharts", "helmChartInflationGenerator"} {
			if n == f || strings.HasPrefix(n, f+".") || strings.HasPrefix(n, f+"[]") {
				refused = true
			}
		}
		if !refused {
			t.Errorf("kustomize's Kustomization has a string field %s that the overlay check does not classify: if it names a file or URL, check it in overlayChecker.paths; then list it in kustomizationStrings", n)
		}
	}
	for n := range kustomizationStrings {
		if !got[n] {
			t.Errorf("kustomizationStrings lists %s, which kustomize's Kustomization no longer has", n)
		}
	}
}
