// Package conformance runs spokeforge's plugin contracts through Argo CD v3.2.12's own code:
// its cmp-server config reader and generate path for the CMP, and its plugin generator client
// and template renderer for the ApplicationSet generator. It is a module of its own so that
// the main module carries only Argo CD v2 (whose conformance tests sit beside the code in
// cmp/ and generator/); `make test` runs both.
package conformance
