// Package cmp holds spokeforge's Config Management Plugin: plugin.yaml,
// which Argo CD's cmp-server reads, and (in render/) the renderer that
// its generate command runs.
package cmp

import _ "embed"

// PluginYAML is cmp/plugin.yaml, for tests and install tooling.
//
//go:embed plugin.yaml
var PluginYAML []byte
