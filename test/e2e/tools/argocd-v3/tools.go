//go:build tools

// Package tools pins the Argo CD v3.2.12 multi-call binary for the end-to-end suite's v3 leg
// (ARGOCD_VERSION=v3.2.12). Build it from this directory with
//
//	go build -o BIN github.com/argoproj/argo-cd/v3/cmd
//
// and link it as argocd-server, argocd-repo-server, argocd-application-controller,
// argocd-applicationset-controller, argocd-cmp-server and argocd. It is a module of its own,
// like the v2.14.21 one beside it, so that neither Argo CD's dependency graph reaches the
// other's or spokeforge's.
package tools

import (
	_ "github.com/argoproj/argo-cd/v3/cmd"
)
