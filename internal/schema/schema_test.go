package schema

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
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
