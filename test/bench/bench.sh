#!/usr/bin/env bash
# make bench: whole-process comparison of spokeforge render with helm template, kustomize
# build and a floor (test/bench/runner), then the Go benchmarks (in-process render; the Lua health
# scripts beside Argo CD's built-in checks, through Argo CD v3.6.2's Lua VM in
# test/conformance-v3, built with GOTOOLCHAIN=go1.27.3). Results: docs/benchmarks.md.
# Usage: test/bench/bench.sh [ROUNDS]   (default 30; SPOKEFORGE_BENCH_GO=0 skips the Go benchmarks,
#   SPOKEFORGE_BENCH_GENERATOR=1 adds the generator's;
#   SPOKEFORGE_BENCH_BASELINE=REV also times spokeforge built from git revision REV, e.g. main,
#   SPOKEFORGE_BENCH_BASELINE_TAGS=cmponly builds it as the CMP sidecar's build)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
rounds="${1:-30}"
say() { printf '[bench] %s\n' "$*" >&2; }

bin="$(test/bench/build-tools.sh)"   # helm, kustomize: cached, built once
work="$bin/run"
mkdir -p "$work/floor"

say "checking the chart and the kustomize directory are generated from the golden render"
(cd test/bench/tools && go run ./chartgen -root ../../.. -check)

say "building spokeforge (as the Dockerfile does), the floor and the runner"
go build -trimpath -ldflags "-s -w" -o "$work/spokeforge" .
CGO_ENABLED=0 go build -tags cmponly -trimpath -ldflags "-s -w" -o "$work/spokeforge-cmponly" .
cp test/bench/floor/main.go examples/gitops/rendered/gpu-east-1.spoke.yaml "$work/floor/"
mv "$work/floor/gpu-east-1.spoke.yaml" "$work/floor/out.yaml"
printf 'module floor\n\ngo 1.24\n' >"$work/floor/go.mod"
(cd "$work/floor" && go build -trimpath -ldflags "-s -w" -tags benchfloor -o "$work/floorbin" .)
go build -o "$work/runner" ./test/bench/runner
baseline=()
if [ -n "${SPOKEFORGE_BENCH_BASELINE:-}" ]; then
  say "building the baseline spokeforge from ${SPOKEFORGE_BENCH_BASELINE}"
  rm -rf "$work/baseline-src" && mkdir -p "$work/baseline-src"
  git archive "$SPOKEFORGE_BENCH_BASELINE" | tar -x -C "$work/baseline-src"
  (cd "$work/baseline-src" && go build -tags "${SPOKEFORGE_BENCH_BASELINE_TAGS:-}" -trimpath -ldflags "-s -w" -o "$work/spokeforge-baseline" .)
  baseline=(-baseline "$work/spokeforge-baseline")
fi

# What manifests/cmp's sidecar sets; the golden renders carry it.
export SPOKEFORGE_IMAGE="${SPOKEFORGE_IMAGE:-ghcr.io/spokeforge/spokeforge:v0.1.0-dev}"
say "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), $(go version | cut -d' ' -f3)"
"$work/runner" -spokeforge "$work/spokeforge" -helm "$bin/helm" -kustomize "$bin/kustomize" -floor "$work/floorbin" \
  -cmponly "$work/spokeforge-cmponly" -rounds "$rounds" "${baseline[@]}"

if [ "${SPOKEFORGE_BENCH_GO:-1}" != 0 ]; then
  pkgs=(.)
  # The generator's benchmarks (up to 10,000 clusters) take minutes: opt in.
  if [ -n "${SPOKEFORGE_BENCH_GENERATOR:-}" ]; then pkgs+=(./generator); fi
  say "Go benchmarks: in-process render, validate (${pkgs[*]})"
  go test -run '^$' -bench . -benchmem -count 1 "${pkgs[@]}"
  say "Go benchmarks: Lua health checks through Argo CD v3.6.2 (test/conformance-v3/lua)"
  (cd test/conformance-v3 && GOTOOLCHAIN=go1.27.3 go test -run '^$' -bench . -benchmem -count 1 ./lua)
fi
