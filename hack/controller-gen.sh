#!/usr/bin/env bash
# Runs controller-gen, pinned in hack/tools/go.mod, from the repository root. The binary is
# built once into the Go build cache's sibling folder, keyed by its version.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version="$(cd "$root/hack/tools" && go list -m -f '{{.Version}}' sigs.k8s.io/controller-tools)"
bin="$(go env GOCACHE)/../spokeforge-tools/controller-gen-$version"
if [ ! -x "$bin" ]; then
  mkdir -p "$(dirname "$bin")"
  (cd "$root/hack/tools" && go build -o "$bin.tmp" sigs.k8s.io/controller-tools/cmd/controller-gen)
  mv "$bin.tmp" "$bin"
fi
cd "$root"
exec "$bin" "$@"
