# End-to-end suite: a real Argo CD hub (v3.6.2 and v3.4.7) and a spoke API server, as processes on this
# machine (see test/e2e/doc.go). Include from the top Makefile: include test/e2e/e2e.mk
GO ?= go
E2E_TIMEOUT ?= 40m
# -v: the scenarios log what they measure (delays, counts), which the docs quote.
E2E_FLAGS ?= -v
# Tests run in parallel, each on its own hub: most of a test is waiting on reconciliation.
# E2E_PARALLEL hubs per Argo CD release, and the releases run at the same time. The harness
# holds the tests to that many, longest first (test/e2e/slots.go); go test's own -parallel is
# set above the number of tests so that it does not choose first.
E2E_PARALLEL ?= 3

.PHONY: e2e e2e-install

e2e-install:
	hack/e2e/install.sh

# The suite runs on each Argo CD release in E2E_ARGOCD_VERSIONS at once (test/e2e/run.sh: each
# output line prefixed with its release): the whole suite on v3.6.2, and on v3.4.7 the tests
# E2E_OLDER_TESTS names, those whose behaviour the release decides most (the ApplicationSet
# controller and its health, an onboarding through the plugin, a broken contract and back in the
# older React UI, and a cluster added by a commit with its ClusterProfile status read through
# that release's argocd-server), to keep a fresh machine's CI within its hour (docs/e2e.md).
# ARGOCD_VERSION=v3.4.7 make e2e runs the whole suite on that release alone. The target fails
# if any release failed. run.sh installs each release's binaries itself: the first release's
# before any test, the others' (under nice 19) beside the first release's tests.
E2E_ARGOCD_VERSIONS ?= v3.6.2 v3.4.7
E2E_OLDER_TESTS ?= ^(TestGenerator|TestUIContracts|TestAddCluster)$$
e2e:
	$(if $(ARGOCD_VERSION),,E2E_RUN_v3_4_7='$(E2E_OLDER_TESTS)') GO=$(GO) E2E_PARALLEL=$(E2E_PARALLEL) \
	  test/e2e/run.sh $(or $(ARGOCD_VERSION),$(E2E_ARGOCD_VERSIONS)) -- \
	  -count=1 -timeout $(E2E_TIMEOUT) -parallel 64 $(E2E_FLAGS)

.PHONY: demo

# demo: the e2e hub with examples/gitops synced, left running until Ctrl-C, on the default
# Argo CD (v3.6.2) or ARGOCD_VERSION; it builds only that release. The demo is built, then make
# runs the binary itself: no go run and no shell in between, as both die of the Ctrl-C the demo
# handles (go run passes it on; sh waits, then exits by it), and make then reports
# "*** [demo] Interrupt" after a clean stop.
DEMO_ARGOCD_VERSION := $(or $(ARGOCD_VERSION),v3.6.2)
demo: export ARGOCD_VERSION := $(DEMO_ARGOCD_VERSION)
demo:
	hack/e2e/install.sh
	$(GO) build -tags e2e -o bin/spokeforge-demo ./test/e2e/demo
	bin/spokeforge-demo
