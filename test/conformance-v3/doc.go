// Package conformance runs spokeforge's plugin contracts through Argo CD v3.6.2's own code:
// its cmp-server config reader and generate path for the CMP, and its plugin generator client
// and template renderer for the ApplicationSet generator. It is a module of its own so that
// the main module carries only Argo CD v2 (whose conformance tests sit beside the code in
// cmp/ and generator/); `make test` runs both. Argo CD v3.6.2 needs Go 1.27, so this module is
// built with GOTOOLCHAIN=go1.27.3 (the Makefile sets it; see go.mod).
package conformance
