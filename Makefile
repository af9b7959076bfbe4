GO ?= go
BIN ?= bin/spokeforge

.PHONY: build test bench bench-e2e bench-fleet vet vet-all vulncheck fmt generate

build:
	$(GO) build -o $(BIN) .

# Generated from internal/api/v1alpha1: the Onboarding CRD (controller-gen, pinned in
# hack/tools), the records' JSON Schemas, the argocd-cm Lua component and the golden renders.
# Tests fail on drift from any of them.
generate:
	hack/controller-gen.sh crd:crdVersions=v1 paths=./internal/api/v1alpha1/... output:crd:stdout > manifests/crds/onboarding.yaml
	$(GO) test ./internal/schema -update
	$(GO) run ./lua/gen
	$(GO) test ./cmp/render -run TestGolden -update

# The conformance tests through Argo CD v3.6.2's own code, the Lua checks' included, are a module
# of their own (test/conformance-v3), so that the main module compiles no Argo CD (the e2e,bench
# repo-server benchmark, which calls Argo CD's gRPC client, is there too). v3.6.2 needs Go 1.27:
# GOTOOLCHAIN=go1.27.3 has the go command fetch that toolchain (from the module proxy) for that
# module only; the main module builds with the local Go.
# go test runs without its own vet: `make vet` (run first) checks the main module's packages with
# every analyzer, and each vet pass re-derives facts for the whole dependency graph (minutes here).
# One pass with -tags e2e covers the e2e harness too (only its files carry the tag).
# Test binaries link without DWARF (-ldflags=-w): a quarter less link time each, and no test
# reads it.
test: vet vulncheck
	$(GO) test -vet=off -ldflags=-w -count=1 ./...
	cd test/conformance-v3 && GOTOOLCHAIN=go1.27.3 $(GO) test -vet=off -ldflags=-w -count=1 ./...

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo 'gofmt needed'; exit 1; }
	$(GO) vet -tags e2e ./...
	$(GO) vet -tags cmponly .

# govulncheck (pinned) on both shipped binaries, the default build and -tags cmponly, against the
# Go vulnerability database committed in hack/vulndb (its date is printed): fails on any called
# vulnerability (docs/dependencies.md).
vulncheck:
	GO=$(GO) hack/vulncheck.sh

# vet-all also vets test/conformance-v3 (tests only, no product code): its pass re-derives vet's
# facts over Argo CD v3.6.2's whole dependency graph, about 130 s that CI's hour cannot spare
# (docs/e2e.md); run it before committing a change there.
vet-all: vet
	cd test/conformance-v3 && GOTOOLCHAIN=go1.27.3 $(GO) vet ./...

# Whole-process comparison with helm, kustomize and a floor, then the Go benchmarks
# (docs/benchmarks.md). BENCH_ROUNDS rounds, round-robin.
BENCH_ROUNDS ?= 30
bench:
	test/bench/bench.sh $(BENCH_ROUNDS)

# The repo-server generating the spoke's manifests through the CMP sidecar, beside directory,
# helm and kustomize sources, on the e2e hub (docs/benchmarks.md).
bench-e2e: e2e-install
	test/bench/build-tools.sh >/dev/null
	cd test/conformance-v3 && SPOKEFORGE_E2E_BENCH=1 GOTOOLCHAIN=go1.27.3 $(GO) test -tags e2e,bench -count=1 -timeout 20m -run '^TestBenchRepoServer$$' -v ./repobench/

# The fleet benchmark on the real e2e hub (docs/benchmarks.md, "A fleet"): a gitops repo of
# FLEET_SIZES records through the real ApplicationSets, beside the same spokes as plain
# directories, and what three commits cost. Long: 68 min at 1,000 on 2 cores (the three layouts).
FLEET_SIZES ?= 100,1000
bench-fleet: e2e-install
	SPOKEFORGE_E2E_BENCH_FLEET=$(FLEET_SIZES) SPOKEFORGE_E2E_BENCH_OUT=$(CURDIR)/fleet-bench.md \
	  $(GO) test -tags e2e -vet=off -count=1 -timeout 0 -run '^TestBenchFleet$$' -v ./test/e2e/

# The two images of the Dockerfile, built and pushed to IMAGE_REPO (docs/install.md, step 1):
#   make images IMAGE_REPO=registry.example.com/platform [IMAGE_TAG=v0.1.0] [DOCKER=podman]
# then set both in examples/install/hub and examples/install/generator.
DOCKER ?= docker
IMAGE_TAG ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
.PHONY: images
images:
	@test -n "$(IMAGE_REPO)" || { echo 'make images: set IMAGE_REPO, e.g. make images IMAGE_REPO=registry.example.com/platform' >&2; exit 2; }
	$(DOCKER) build --build-arg VERSION=$(IMAGE_TAG) --target cmp -t $(IMAGE_REPO)/spokeforge-cmp:$(IMAGE_TAG) .
	$(DOCKER) build --build-arg VERSION=$(IMAGE_TAG) -t $(IMAGE_REPO)/spokeforge:$(IMAGE_TAG) .
	$(DOCKER) push $(IMAGE_REPO)/spokeforge-cmp:$(IMAGE_TAG)
	$(DOCKER) push $(IMAGE_REPO)/spokeforge:$(IMAGE_TAG)
	@echo "the sidecar's image:                           $(IMAGE_REPO)/spokeforge-cmp:$(IMAGE_TAG)"
	@echo "the agent's (SPOKEFORGE_IMAGE) and generator's: $(IMAGE_REPO)/spokeforge:$(IMAGE_TAG)"

include test/e2e/e2e.mk
