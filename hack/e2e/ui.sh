#!/usr/bin/env bash
# Builds the web UI of Argo CD VERSION (v3.6.2 or v3.4.7) into DEST, the files argocd-server
# embeds as ui/dist/app, unless DEST.stamp already says it was built from the same sources.
#   hack/e2e/ui.sh VERSION DEST
# The sources are the ui/ folder of Argo CD's Go module, copied to a scratch folder (the module
# cache stays read-only), with argo-ui, a git dependency no registry serves, taken from a
# tarball in hack/e2e/vendor/ (which commit, and why v3.6.2's is not its pin: the README there).
# Every other package comes from the npm registry at the version the lockfile pins; the script
# fails if the package manager would move any of them.
#   v3.6.2: pnpm (ui/pnpm-lock.yaml; the pnpm version ui/package.json names in packageManager),
#           store DEST/../pnpm-store, metadata cache DEST/../pnpm-cache.
#   v3.4.7: yarn 1.22.22 (ui/yarn.lock), cache DEST/../yarn-cache.
# Needs node and npm (Debian's nodejs and npm; pnpm and yarn run through npx). Each step says
# every 25 s that it is still running and when it is done; its log is shown only on failure.
set -euo pipefail

version="${1:?usage: ui.sh VERSION DEST}"
dest="${2:?usage: ui.sh VERSION DEST}"
vendor="$(cd "$(dirname "${BASH_SOURCE[0]}")/vendor" && pwd)"
module=github.com/argoproj/argo-cd/v3

# The argo-ui tarball each version builds with, its package manager and the Go it needs to
# download the module (v3.6.2's go.mod says go 1.27.0).
case "$version" in
v3.6.2) argoui=argo-ui-ad616de.tar.gz pm=pnpm needgo=go1.27.3 ;;
v3.4.7) argoui=argo-ui-a1c32a4.tar.gz pm=yarn needgo= ;;
*) echo "ui.sh: Argo CD $version is not supported here (v3.6.2, v3.4.7)" >&2; exit 2 ;;
esac
stamp="argo-cd-$version+$argoui"

say() { printf '[e2e-ui] %s\n' "$*"; }
fail() { echo "ui.sh: $version: $*" >&2; exit 1; }

if [ -z "${SPOKEFORGE_E2E_REBUILD:-}" ] && [ -f "$dest/index.html" ] && [ "$(cat "$dest.stamp" 2>/dev/null)" = "$stamp" ]; then
  say "Argo CD $version UI present ($stamp) in $dest"
  exit 0
fi
say "building the Argo CD $version UI into $dest (slow step: minutes on 2 cores)"
start=$SECONDS

if [ -n "$needgo" ] && [ "$(printf '%s\n' "$needgo" "$(cd / && go env GOVERSION)" | sort -V | head -1)" != "$needgo" ]; then
  export GOTOOLCHAIN="$needgo" # served by the Go module proxy
fi
mkdir -p "$(dirname "$dest")"
bin="$(cd "$(dirname "$dest")" && pwd)"
work="$(mktemp -d)"
child=
cleanup() {
  if [ -n "$child" ]; then kill "$child" 2>/dev/null || true; wait "$child" 2>/dev/null || true; fi
  rm -rf "$work" "$dest.new"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# quietly LOG WHAT CMD...: runs CMD with its output in LOG, saying every 25 s that WHAT is still
# running; on failure shows the end of LOG.
quietly() {
  local log="$1" what="$2" t0=$SECONDS next=$((SECONDS + 25)) rc=0
  shift 2
  "$@" >"$log" 2>&1 &
  child=$!
  while kill -0 "$child" 2>/dev/null; do
    sleep 1
    if [ "$SECONDS" -ge "$next" ]; then
      say "$version: $what running, $((SECONDS - t0)) s"
      next=$((next + 25))
    fi
  done
  wait "$child" || rc=$?
  child=
  if [ "$rc" -ne 0 ]; then
    tail -40 "$log" >&2
    fail "$what failed (exit $rc; the last 40 lines of its log are above)"
  fi
  say "$version: $what done in $((SECONDS - t0)) s"
}

# pinned LOCKFILE: what the lockfile pins, one package@version (pnpm) or URL (yarn) a line,
# argo-ui left out.
pinned() {
  case "$pm" in
  pnpm) awk '/^packages:/ { p = 1; next } /^[^ ]/ { p = 0 } p && /^  [^ ]/ { sub(/:$/, "", $1); print $1 }' "$1" ;;
  yarn) sed -n 's/^  resolved "\(.*\)"$/\1/p' "$1" ;;
  esac | grep -v -e '^argo-ui@' -e 'argoproj/argo-ui' -e "$argoui" | sort -u
}
# kept ORIGINAL NEW: fails when NEW lost, or moved, a package ORIGINAL pinned.
kept() {
  local moved added
  moved="$(comm -23 <(pinned "$1") <(pinned "$2") | head -5 | tr '\n' ' ')"
  [ -z "$moved" ] || fail "$pm would move packages the lockfile pins: $moved"
  added="$(comm -13 <(pinned "$1") <(pinned "$2") | paste -sd ' ')"
  say "$version: the lockfile keeps every pin; added for argo-ui: ${added:-nothing}"
}

quietly "$work/mod.json" "go mod download $module@$version" sh -c 'cd / && exec go mod download -json "$1"' sh "$module@$version"
moddir="$(sed -n 's/^\t"Dir": "\(.*\)",$/\1/p' "$work/mod.json")"
[ -d "$moddir/ui" ] || fail "no ui/ in the module $module@$version ($moddir)"
cp -r "$moddir/ui" "$work/ui"
chmod -R u+w "$work/ui"
cd "$work/ui"
# The one line naming argo-ui, pointed at the tarball.
sed -i "s#^\(  *\"argo-ui\": \)\"git+https://github.com/argoproj/argo-ui.git[^\"]*\"#\1\"file:$vendor/$argoui\"#" package.json
grep -q "^ *\"argo-ui\": \"file:$vendor/$argoui\"" package.json || fail "the argo-ui line of ui/package.json is not the expected git URL"

case "$pm" in
pnpm)
  v="$(sed -n 's/^ *"packageManager": "pnpm@\([0-9][0-9.]*\)".*/\1/p' package.json)"
  [ -n "$v" ] || fail "ui/package.json names no pnpm version in packageManager"
  run=(npx --yes "pnpm@$v")
  # Without auto-install-peers, pnpm adds what argo-ui ad616de itself depends on and nothing
  # else (with it, it would also install foundation-sites' missing peer motion-ui, which
  # upstream's lockfile leaves out, and sass-embedded through it).
  export pnpm_config_store_dir="$bin/pnpm-store" pnpm_config_cache_dir="$bin/pnpm-cache" \
    pnpm_config_auto_install_peers=false
  flags=(--prefer-offline --reporter=append-only)
  # --frozen-lockfile refuses a changed specifier: pnpm first rewrites argo-ui's entries of the
  # lockfile (--lockfile-only), which is checked to keep every other pin, then installs it frozen.
  cp pnpm-lock.yaml "$work/pnpm-lock.upstream.yaml"
  quietly "$work/lock.log" "pnpm $v resolving argo-ui" "${run[@]}" install --lockfile-only --no-frozen-lockfile "${flags[@]}"
  kept "$work/pnpm-lock.upstream.yaml" pnpm-lock.yaml
  quietly "$work/install.log" "pnpm $v install" "${run[@]}" install --frozen-lockfile "${flags[@]}"
  ;;
yarn)
  run=(npx --yes yarn@1.22.22)
  # yarn rewrites only argo-ui's entry of yarn.lock (so no --frozen-lockfile: its key changes).
  cp yarn.lock "$work/yarn.lock.upstream"
  quietly "$work/install.log" "yarn install" "${run[@]}" install --non-interactive --network-timeout 200000 --cache-folder "$bin/yarn-cache"
  kept "$work/yarn.lock.upstream" yarn.lock
  ;;
esac

# NODE_ENV=production as upstream's Dockerfile: otherwise webpack.config.js builds for development
# (eval-source-map; v3.6.2 also adds React Fast Refresh).
quietly "$work/build.log" "webpack build" env -u CODECOV_TOKEN NODE_ENV=production NODE_ONLINE_ENV=offline \
  ARGO_VERSION="$version" NODE_OPTIONS=--max_old_space_size=8192 "${run[@]}" run build

# index.html, the main bundle it loads, and assets/images/resources (ui/embed.go embeds it).
[ -f dist/app/index.html ] || fail "the build left no dist/app/index.html"
main="$(grep -o 'main\.[0-9a-f]*\.js' dist/app/index.html | head -1)"
[ -n "$main" ] && [ -s "dist/app/$main" ] || fail "dist/app/index.html loads no main bundle that the build wrote"
grep -q 'src="extensions.js"' dist/app/index.html || fail "dist/app/index.html does not load extensions.js"
[ -d dist/app/assets/images/resources ] || fail "the build left no dist/app/assets/images/resources"
rm -rf "$dest.new"
cp -r dist/app "$dest.new"
rm -rf "$dest" "$dest.stamp"
mv "$dest.new" "$dest"
echo "$stamp" >"$dest.stamp"
# node_modules is hundreds of MB of small files: removing it can take a minute on a busy machine.
cd /
quietly /dev/null "removing the scratch folder" rm -rf "$work"
say "built the Argo CD $version UI in $((SECONDS - start)) s ($(du -sh "$dest" | cut -f1), $main $(du -k "$dest/$main" | cut -f1) KiB)"
