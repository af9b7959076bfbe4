#!/usr/bin/env bash
# Whole-process bench: `spokeforge render` of the example GPU spoke beside the floor (a Go
# binary that only prints the same bytes), alternating, N runs each, and `spokeforge validate`
# of a generated repo of 1,000 clusters. Prints median/min/max wall time and peak RSS.
# Usage: test/bench/render.sh [N]
set -euo pipefail
cd "$(dirname "$0")/../.."
n=${1:-30}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/spokeforge" .
dir=examples/gitops/clusters/gpu-east-1
"$tmp/spokeforge" render "$dir" > "$tmp/out.yaml"
mkdir -p "$tmp/floor"
cat > "$tmp/floor/main.go" <<'GO'
package main

import (
	_ "embed"
	"os"
)

//go:embed out.yaml
var out []byte

func main() { os.Stdout.Write(out) }
GO
cp "$tmp/out.yaml" "$tmp/floor/"
(cd "$tmp/floor" && printf 'module floor\n\ngo 1.24\n' > go.mod && go build -o "$tmp/floorbin" .)
measure() { # prints "seconds maxrss_kb"
  /usr/bin/time -f '%e %M' "$@" > /dev/null 2>> "$tmp/time.$label"
}
: > "$tmp/time.render"; : > "$tmp/time.floor"; : > "$tmp/time.validate"
repo="$tmp/repo1000"; mkdir -p "$repo/orgs"
allow=""
for i in $(seq -w 0 999); do
  mkdir -p "$repo/clusters/gpu-$i"
  sed -e "s/name: gpu-east-1/name: gpu-$i/" -e "s/shortName: eue1/shortName: s$i/" -e "s|role/eue1-workload|role/s$i-workload|" \
    "$dir/cluster.yaml" > "$repo/clusters/gpu-$i/cluster.yaml"
  allow+="gpu-$i, "
done
printf 'apiVersion: spokeforge.io/v1alpha1\nkind: Organization\nmetadata: {name: acme}\nspec:\n  clusterAllowlist: [%s]\n' "${allow%, }" > "$repo/orgs/acme.yaml"
for _ in $(seq "$n"); do
  label=render measure "$tmp/spokeforge" render "$dir"
  label=floor measure "$tmp/floorbin"
done
for _ in $(seq 5); do
  label=validate measure "$tmp/spokeforge" validate "$repo"
done
stats() {
  sort -n -k1 "$1" | awk '{t[NR]=$1; if ($2>m) m=$2} END {printf "median %.3fs  min %.3fs  max %.3fs  peak RSS %d KiB\n", t[int((NR+1)/2)], t[1], t[NR], m}'
}
echo "render (n=$n): $(stats "$tmp/time.render")"
echo "floor  (n=$n): $(stats "$tmp/time.floor")"
echo "validate 1,000 clusters (n=5): $(stats "$tmp/time.validate")"
