// Package conformance runs spokeforge's plugin contracts through Argo CD v3.6.2's own code:
// its cmp-server config reader and generate path for the CMP, its plugin generator client and
// template renderer for the ApplicationSet generator, and its argocd-cm reader, health path and
// Lua VM for the health checks, beside v3.6.2's built-in checks (health_test.go); it also builds
// the install overlay on the v3.6.2 and v3.4.7 release manifests. Package lua (./lua) runs the Lua
// checks' own tests and benchmarks through v3.6.2's Lua VM. It is a module of its own so that the
// main module compiles no Argo CD; the e2e repo-server benchmark (./repobench, -tags e2e,bench),
// which calls the repo-server through Argo CD's gRPC client, is here for the same reason. `make
// test` runs both. Argo CD v3.6.2 needs Go 1.27, so this module
// is built with GOTOOLCHAIN=go1.27.3 (the Makefile sets it; see go.mod).
package conformance
