// Package e2e is the end-to-end suite of spokeforge: it runs a real Argo CD hub (v3.6.2, or v3.4.7) on one
// machine, as processes, and drives it the way an operator would.
//
// The harness (Hub, built with the e2e build tag) starts on loopback ports chosen at run time:
// one etcd; two kube-apiservers, "hub" and "spoke", sharing that etcd under different
// --etcd-prefix values, each with a static token file, RBAC, a service-account key pair and a
// self-signed serving certificate; Redis; and the Argo CD components (argocd-server,
// argocd-repo-server, argocd-application-controller, argocd-applicationset-controller and
// argocd-cmp-server with the spokeforge Config Management Plugin) from the Argo CD multi-call
// binary. The spoke API server is registered in Argo CD as the cluster "spoke" and carries the
// CRDs of cert-manager, External Secrets and Node Feature Discovery.
//
// Run it with
//
//	hack/e2e/install.sh
//	go test -tags e2e -count=1 -timeout 40m ./test/e2e/...
//
// or `make e2e` (test/e2e/e2e.mk). hack/e2e/install.sh installs etcd-server, redis-server and
// git from Debian and builds argocd and kube-apiserver from the tools modules under
// test/e2e/tools into the binary cache, $SPOKEFORGE_E2E_BIN or "$(go env GOCACHE)/../spokeforge-e2e/bin".
// SPOKEFORGE_E2E_KEEP=1 keeps the work folder (logs, kubeconfigs, data) after the run; on
// failure the logs are always kept and their folder is printed.
package e2e
