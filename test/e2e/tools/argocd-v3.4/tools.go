//go:build tools

// Package tools pins the Argo CD v3.4.7 multi-call binary, the end-to-end suite's oldest
// supported line (ARGOCD_VERSION=v3.4.7). hack/e2e/install.sh first unpacks v3.4.7's
// gitops-engine folder (hack/e2e/vendor) into ./gitops-engine, then builds it from this
// directory with
//
//	go build -o BIN github.com/argoproj/argo-cd/v3/cmd
//
// and links it as argocd-server, argocd-repo-server, argocd-application-controller,
// argocd-applicationset-controller, argocd-cmp-server and argocd. go.mod carries v3.4.7's own
// replace block.
package tools

import (
	_ "github.com/argoproj/argo-cd/v3/cmd"
)
