#!/usr/bin/env bash
# Builds the comparison contenders of make bench from the tools module test/bench/tools
# (helm v3 and kustomize v5 at the versions its go.mod pins) into the binary cache, and
# reuses them when present. Prints the cache folder on stdout.
# The cache is $SPOKEFORGE_BENCH_BIN, default "$(go env GOCACHE)/../spokeforge-bench/bin";
# SPOKEFORGE_BENCH_REBUILD=1 rebuilds.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
tools="$root/test/bench/tools"
bin="${SPOKEFORGE_BENCH_BIN:-$(go env GOCACHE)/../spokeforge-bench/bin}"
mkdir -p "$bin"
bin="$(cd "$bin" && pwd)"
say() { printf '[bench] %s\n' "$*" >&2; }

# build NAME PACKAGE LDFLAGS: builds PACKAGE from the tools module into $bin/NAME unless
# $bin/NAME.stamp names the same module version and flags.
build() {
  local name="$1" pkg="$2" ldflags="$3" mod ver stamp
  mod="$(cd "$tools" && go list -f '{{.Module.Path}}@{{.Module.Version}}' "$pkg")"
  stamp="$mod $ldflags"
  if [ -z "${SPOKEFORGE_BENCH_REBUILD:-}" ] && [ -x "$bin/$name" ] && [ "$(cat "$bin/$name.stamp" 2>/dev/null)" = "$stamp" ]; then
    say "$name present ($mod)"
    return
  fi
  say "building $name ($mod) into $bin (slow step: a few minutes on 2 cores, once)"
  local start=$SECONDS
  (cd "$tools" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$bin/$name.tmp" "$pkg")
  mv "$bin/$name.tmp" "$bin/$name"
  echo "$stamp" >"$bin/$name.stamp"
  say "built $name in $((SECONDS - start))s"
}

(cd "$tools" && go mod download)
helmver="$(cd "$tools" && go list -m -f '{{.Version}}' helm.sh/helm/v3)"
# As helm's release builds: stripped, version stamped.
build helm helm.sh/helm/v3/cmd/helm "-s -w -X helm.sh/helm/v3/internal/version.version=$helmver"
kver="$(cd "$tools" && go list -m -f '{{.Version}}' sigs.k8s.io/kustomize/kustomize/v5)"
build kustomize sigs.k8s.io/kustomize/kustomize/v5 "-s -w -X sigs.k8s.io/kustomize/api/provenance.version=$kver"
echo "$bin"
