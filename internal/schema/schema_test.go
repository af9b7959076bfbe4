package schema

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite schema/*.json")

// TestSchemasUpToDate fails when the checked-in schemas drift from the Go types.
func TestSchemasUpToDate(t *testing.T) {
	t.Chdir("../..")
	for file, v := range Kinds {
		got, err := Generate(v, "./internal/api/v1alpha1")
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("schema", file)
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test ./internal/schema -update)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s drifted from internal/api/v1alpha1; run go test ./internal/schema -update", path)
		}
		if !bytes.Contains(got, []byte(`"additionalProperties": false`)) {
			t.Errorf("%s allows unknown fields", path)
		}
	}
}

// TestExamplesMatchSchemas validates every example record against the
// checked-in schema of its kind, as an editor would.
func TestExamplesMatchSchemas(t *testing.T) {
	t.Chdir("../..")
	byKind := map[string]string{"Cluster": "cluster.schema.json", "Organization": "organization.schema.json", "Product": "product.schema.json"}
	c := jsonschema.NewCompiler()
	files, _ := filepath.Glob("examples/gitops/*/*.yaml")
	more, _ := filepath.Glob("examples/gitops/*/*/*.yaml")
	checked := 0
	for _, f := range append(files, more...) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := yaml.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		schemaFile, ok := byKind[fmt.Sprint(doc["kind"])]
		if !ok || strings.Contains(f, "/rendered/") {
			continue
		}
		sch, err := c.Compile(filepath.Join("schema", schemaFile))
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(doc); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		checked++
	}
	if checked < 7 {
		t.Fatalf("checked %d records", checked)
	}
	// And the schema refuses what the decoder refuses.
	sch, _ := c.Compile("schema/cluster.schema.json")
	bad := map[string]any{"apiVersion": "spokeforge.io/v1alpha1", "kind": "Cluster", "metadata": map[string]any{"name": "x"}, "spec": map[string]any{"unknown": true}}
	if sch.Validate(bad) == nil {
		t.Error("schema accepts an unknown field")
	}
}
