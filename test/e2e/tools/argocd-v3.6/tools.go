//go:build tools

// Package tools pins the Argo CD v3.6.2 multi-call binary, the end-to-end suite's default
// release (ARGOCD_VERSION=v3.6.2), and kube-apiserver v1.37.0, the hub's and spoke's API
// server. v3.6 needs Go 1.27: build both from this directory with
//
//	GOTOOLCHAIN=go1.27.3 go build -o BIN github.com/argoproj/argo-cd/v3/cmd
//	GOTOOLCHAIN=go1.27.3 go build -o BIN k8s.io/kubernetes/cmd/kube-apiserver
//
// and link the first as argocd-server, argocd-repo-server, argocd-application-controller,
// argocd-applicationset-controller, argocd-cmp-server and argocd. Each Argo CD release is a
// module of its own (this one and argocd-v3.4 beside it), so that no Argo CD's dependency
// graph reaches another's or spokeforge's; go.mod carries v3.6.2's own replace block.
// kube-apiserver v1.37.0 shares it: Argo CD v3.6.2 pins the same Kubernetes (k8s.io/* v0.37.0,
// structured-merge-diff v6.4.2), so adding it changed no version Argo CD builds with, and the
// two binaries share their compiled k8s.io packages. (Built in one module with an older
// Kubernetes, MVS gave kube-apiserver a newer structured-merge-diff than its own, and
// server-side apply panicked.)
package tools

import (
	_ "github.com/argoproj/argo-cd/v3/cmd"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)
