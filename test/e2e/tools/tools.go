//go:build tools

// Package tools pins kube-apiserver v1.31.0 for the end-to-end suite. It is a module of its
// own so that kube-apiserver builds with the dependency versions of Kubernetes itself: built
// in one module with Argo CD, MVS picks Argo CD's newer sigs.k8s.io/structured-merge-diff and
// the API server panics on server-side apply. Build it from this directory with
//
//	go build -o BIN k8s.io/kubernetes/cmd/kube-apiserver
//
// The Argo CD multi-call binary comes from the module in ./argocd.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)
