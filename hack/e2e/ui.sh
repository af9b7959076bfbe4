#!/usr/bin/env bash
# Builds the web UI of Argo CD VERSION (v2.14.21 or v3.2.12) into DEST, the files argocd-server
# embeds as ui/dist/app, unless DEST.stamp already says it was built from the same sources.
#   hack/e2e/ui.sh VERSION DEST
# The sources are the ui/ folder of Argo CD's Go module, copied to a scratch folder (the module
# cache stays read-only), with argo-ui, a git dependency no registry serves, taken from the
# tarball in hack/e2e/vendor/ of the commit that version's yarn.lock pins. Every other package
# comes from the npm registry at its locked version; yarn's cache is DEST/../yarn-cache.
# Needs node and npm (Debian's nodejs and npm; yarn 1.22.22 runs through npx).
set -euo pipefail

version="${1:?usage: ui.sh VERSION DEST}"
dest="${2:?usage: ui.sh VERSION DEST}"
vendor="$(cd "$(dirname "${BASH_SOURCE[0]}")/vendor" && pwd)"

# The argo-ui commit each version's ui/yarn.lock resolves (hack/e2e/vendor/README.md).
case "$version" in
v2.14.21) module=github.com/argoproj/argo-cd/v2 argoui=argo-ui-d9a4285.tar.gz ;;
v3.2.12) module=github.com/argoproj/argo-cd/v3 argoui=argo-ui-5cf3610.tar.gz ;;
*) echo "ui.sh: no argo-ui pinned for Argo CD $version" >&2; exit 2 ;;
esac
stamp="argo-cd-$version+$argoui"

say() { printf '[e2e-ui] %s\n' "$*"; }

if [ -z "${SPOKEFORGE_E2E_REBUILD:-}" ] && [ -f "$dest/index.html" ] && [ "$(cat "$dest.stamp" 2>/dev/null)" = "$stamp" ]; then
  say "Argo CD $version UI present ($stamp) in $dest"
  exit 0
fi
say "building the Argo CD $version UI into $dest (slow step: minutes on 2 cores)"
start=$SECONDS
moddir="$(cd / && go mod download -json "$module@$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
[ -d "$moddir/ui" ] || { echo "ui.sh: no ui/ in the module $module@$version ($moddir)" >&2; exit 1; }
mkdir -p "$(dirname "$dest")"
cache="$(cd "$(dirname "$dest")" && pwd)/yarn-cache"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$moddir/ui" "$work/ui"
chmod -R u+w "$work/ui"
cd "$work/ui"
# yarn rewrites only argo-ui's entry of yarn.lock (so no --frozen-lockfile).
sed -i "s#\"argo-ui\": \"git+https://github.com/argoproj/argo-ui.git\"#\"argo-ui\": \"file:$vendor/$argoui\"#" package.json
grep -q "\"argo-ui\": \"file:" package.json || { echo "ui.sh: argo-ui line not found in ui/package.json" >&2; exit 1; }
yarn() { npx --yes yarn@1.22.22 "$@"; }
yarn install --non-interactive --network-timeout 200000 --cache-folder "$cache" >"$work/install.log" 2>&1 ||
  { tail -40 "$work/install.log" >&2; exit 1; }
say "yarn install done in $((SECONDS - start))s"
# NODE_ENV=production as upstream's Dockerfile: otherwise webpack.config.js adds eval-source-map.
NODE_ENV=production NODE_ONLINE_ENV=offline ARGO_VERSION="$version" NODE_OPTIONS=--max_old_space_size=8192 \
  yarn build >"$work/build.log" 2>&1 || { tail -40 "$work/build.log" >&2; exit 1; }
[ -f dist/app/index.html ] || { echo "ui.sh: the build left no dist/app/index.html" >&2; exit 1; }
rm -rf "$dest" "$dest.stamp"
cp -r dist/app "$dest"
echo "$stamp" >"$dest.stamp"
say "built the Argo CD $version UI in $((SECONDS - start))s ($(du -sh "$dest" | cut -f1))"
