// Package cmp is spokeforge's Config Management Plugin: plugin.yaml, which
// Argo CD's cmp-server reads; Generate, the generate step `spokeforge
// render` runs (record, build environment, modes, overlay); Validate, which
// accepts a repo exactly when Generate renders its clusters; and in render/
// the objects themselves.
//
// Neighbours: generator/ answers the ApplicationSet controller from the
// same records (what to deploy where), healthchecks/ checks on the spoke
// that what cmp rendered works, lua/ reports that to Argo CD as health.
package cmp

import _ "embed"

// PluginYAML is cmp/plugin.yaml, for tests and install tooling.
//
//go:embed plugin.yaml
var PluginYAML []byte
