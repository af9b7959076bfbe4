# End-to-end suite: a real Argo CD hub (v2.14.21 and v3.2.12) and a spoke API server, as processes on this
# machine (see test/e2e/doc.go). Include from the top Makefile: include test/e2e/e2e.mk
GO ?= go
E2E_TIMEOUT ?= 40m
E2E_FLAGS ?=
# Tests run in parallel, each on its own hub: most of a test is waiting on reconciliation.
E2E_PARALLEL ?= 4

.PHONY: e2e e2e-install

e2e-install:
	hack/e2e/install.sh

# The suite runs on each Argo CD release in E2E_ARGOCD_VERSIONS in turn, or only on
# ARGOCD_VERSION when it is set (ARGOCD_VERSION=v3.2.12 make e2e). A failing release does not
# stop the next; the target fails if any failed.
E2E_ARGOCD_VERSIONS ?= v2.14.21 v3.2.12
e2e: e2e-install
	@failed=""; for v in $(or $(ARGOCD_VERSION),$(E2E_ARGOCD_VERSIONS)); do \
	  echo "=== e2e on Argo CD $$v"; start=$$(date +%s); \
	  ARGOCD_VERSION=$$v $(GO) test -tags e2e -count=1 -timeout $(E2E_TIMEOUT) -parallel $(E2E_PARALLEL) $(E2E_FLAGS) ./test/e2e/... || failed="$$failed $$v"; \
	  echo "=== e2e on Argo CD $$v: $$(( $$(date +%s) - start )) s"; \
	done; \
	if [ -n "$$failed" ]; then echo "=== e2e failed on Argo CD$$failed"; exit 1; fi

.PHONY: demo

# demo: the e2e hub with examples/gitops synced, left running until Ctrl-C.
demo: e2e-install
	$(GO) run -tags e2e ./test/e2e/demo
