# End-to-end suite: a real Argo CD v2.14 hub and a spoke API server, as processes on this
# machine (see test/e2e/doc.go). Include from the top Makefile: include test/e2e/e2e.mk
GO ?= go
E2E_TIMEOUT ?= 40m
E2E_FLAGS ?=

.PHONY: e2e e2e-install

e2e-install:
	hack/e2e/install.sh

e2e: e2e-install
	$(GO) test -tags e2e -count=1 -timeout $(E2E_TIMEOUT) $(E2E_FLAGS) ./test/e2e/...

.PHONY: demo

# demo: the e2e hub with examples/gitops synced, left running until Ctrl-C.
demo: e2e-install
	$(GO) run -tags e2e ./test/e2e/demo
