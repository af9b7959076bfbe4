//go:build tools

// Package tools pins the Argo CD v3.6.2 multi-call binary, the end-to-end suite's default
// release (ARGOCD_VERSION=v3.6.2). v3.6 needs Go 1.27: build it from this directory with
//
//	GOTOOLCHAIN=go1.27.3 go build -o BIN github.com/argoproj/argo-cd/v3/cmd
//
// and link it as argocd-server, argocd-repo-server, argocd-application-controller,
// argocd-applicationset-controller, argocd-cmp-server and argocd. Each Argo CD release is a
// module of its own (this one and argocd-v3.4 beside it), so that no Argo CD's dependency
// graph reaches another's or spokeforge's; go.mod carries v3.6.2's own replace block.
package tools

import (
	_ "github.com/argoproj/argo-cd/v3/cmd"
)
