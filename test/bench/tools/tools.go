//go:build tools

// Package tools pins the comparison contenders of make bench (test/bench): helm and
// kustomize, built from this separate module so the main go.mod is untouched.
package tools

import (
	_ "helm.sh/helm/v3/cmd/helm"
	_ "sigs.k8s.io/kustomize/kustomize/v5"
)
