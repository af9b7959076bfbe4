//go:build tools

// Package tools pins the Argo CD v2.14.21 multi-call binary for the end-to-end suite. Build it
// from this directory with
//
//	go build -o BIN github.com/argoproj/argo-cd/v2/cmd
//
// and link it as argocd-server, argocd-repo-server, argocd-application-controller,
// argocd-applicationset-controller, argocd-cmp-server and argocd.
package tools

import (
	_ "github.com/argoproj/argo-cd/v2/cmd"
)
