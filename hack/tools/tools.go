//go:build tools

// Package tools pins the code generators spokeforge runs (go generate,
// drift tests) in a module of their own, so the main module's
// dependencies stay those of the shipped binary.
package tools

import _ "sigs.k8s.io/controller-tools/cmd/controller-gen"
