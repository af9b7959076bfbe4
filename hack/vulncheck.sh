#!/usr/bin/env bash
# The supply-chain gate (make vulncheck): govulncheck, pinned, against the Go vulnerability
# database committed in hack/vulndb (vuln.go.dev may be out of reach; a pinned copy also makes the
# result a function of the commit), on both shipped binaries: the default build and -tags cmponly.
# Symbol level: it fails if either build calls a function with a known vulnerability.
# govulncheck and the unpacked database are cached beside the Go build cache.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
version=v1.10.0
db_tar=$(ls hack/vulndb/go-vulndb-*.tar.gz)
[ "$(wc -l <<<"$db_tar")" = 1 ] || { echo "vulncheck: want one hack/vulndb/go-vulndb-*.tar.gz, got: $db_tar" >&2; exit 2; }
cache=${SPOKEFORGE_VULNCHECK_CACHE:-$("$GO" env GOCACHE)/../spokeforge-vulncheck}
bin=$cache/govulncheck-$version
if [ ! -x "$bin/govulncheck" ]; then
  GOBIN=$bin "$GO" install "golang.org/x/vuln/cmd/govulncheck@$version"
fi
db=$cache/$(basename "$db_tar" .tar.gz)
if [ ! -f "$db/db/index/db.json" ]; then
  rm -rf "$db.tmp" && mkdir -p "$db.tmp"
  tar xzf "$db_tar" -C "$db.tmp"
  rm -rf "$db" && mv "$db.tmp" "$db"
fi
echo "vulncheck: govulncheck $version, Go vulnerability database modified $(sed -n 's/.*"modified":"\([^"]*\)".*/\1/p' "$db/db/index/db.json") ($db_tar)"
rc=0
for tags in "" cmponly; do
  echo "vulncheck: the ${tags:-default} build of ."
  "$bin/govulncheck" -db "file://$(cd "$db/db" && pwd)" ${tags:+-tags "$tags"} . || rc=1
done
exit $rc
