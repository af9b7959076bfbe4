// Package schema generates the JSON Schema of each record kind from the Go
// types in internal/api/v1alpha1, so editors can validate records. The
// checked-in files under schema/ are kept in step by a test.
package schema

import (
	"encoding/json"

	"github.com/invopop/jsonschema"

	"github.com/spokeforge/spokeforge/internal/api/v1alpha1"
)

// Kinds maps each schema file name to the type it describes.
var Kinds = map[string]any{
	"cluster.schema.json":      &v1alpha1.Cluster{},
	"organization.schema.json": &v1alpha1.Organization{},
	"product.schema.json":      &v1alpha1.Product{},
}

// Generate returns the schema of v, with field docs taken from the Go
// comments found under apiDir (the v1alpha1 source directory).
func Generate(v any, apiDir string) ([]byte, error) {
	r := &jsonschema.Reflector{RequiredFromJSONSchemaTags: true, DoNotReference: false}
	if err := r.AddGoComments("github.com/spokeforge/spokeforge", apiDir); err != nil {
		return nil, err
	}
	s := r.Reflect(v)
	s.ID = ""
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
