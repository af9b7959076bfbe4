GO ?= go
BIN ?= bin/spokeforge

.PHONY: build test bench vet fmt

build:
	$(GO) build -o $(BIN) .

test: vet
	$(GO) test -count=1 ./...

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo 'gofmt needed'; exit 1; }
	$(GO) vet ./...
	$(GO) vet -tags e2e ./test/e2e/...

bench:
	test/bench/render.sh
	$(GO) test -run '^$$' -bench . -benchmem ./...

include test/e2e/e2e.mk
