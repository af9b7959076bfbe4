#!/usr/bin/env bash
# Installs what the end-to-end suite (test/e2e) needs, idempotently:
#   - Debian packages etcd-server, redis-server, git, gcc, nodejs, npm, chromium (apt-get;
#     needs root or sudo; quiet unless it fails)
#   - kube-apiserver v1.37.0 (from Argo CD v3.6.2's tools module, whose Kubernetes it is: the two
#     share their compiled k8s.io packages), then the Argo CD multi-call binaries argocd-v3.6.2
#     (tools module test/e2e/tools/argocd-v3.6) and argocd-v3.4.7 (test/e2e/tools/argocd-v3.4),
#     into the binary cache (reused when present). v3.6 needs Go 1.27 (GOTOOLCHAIN=go1.27.3, fetched
#     from the module proxy, for that module only). v3.4.7's
#     engine is unpacked from hack/e2e/vendor (its module zip leaves it out). Each embeds its web
#     UI, built once per version by hack/e2e/ui.sh into the cache as argocd-ui-VERSION, in the
#     background while kube-apiserver and the spoke's controllers build.
#   - the spoke's cert-manager (cert-manager-controller, test/e2e/tools/cert-manager-v1.19) and
#     External Secrets Operator (external-secrets, test/e2e/tools/external-secrets-v0.16): they
#     share about two thirds of their compiled packages with v3.4.7 (whichever is built first
#     compiles them; make e2e builds v3.4.7 last, beside the tests: test/e2e/run.sh).
# ARGOCD_VERSION=v3.6.2 or v3.4.7 builds only that Argo CD; unset, both. E2E_UI_ALSO=v3.4.7 also
# builds that release's web UI (test/e2e/run.sh sets it).
# The binary cache is $SPOKEFORGE_E2E_BIN, default "$(go env GOCACHE)/../spokeforge-e2e/bin".
# Set SPOKEFORGE_E2E_REBUILD=1 to rebuild the binaries.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
tools="$root/test/e2e/tools"
bin="${SPOKEFORGE_E2E_BIN:-$(go env GOCACHE)/../spokeforge-e2e/bin}"
mkdir -p "$bin"
bin="$(cd "$bin" && pwd)"

say() { printf '[e2e-install] %s\n' "$*"; }

# ticking LABEL CMD...: runs CMD, printing "LABEL: N s" every 30 s while it runs (a slow step
# says it is alive and what it is doing) and the time it took at the end.
ticking() {
  local label="$1" start=$SECONDS ticker rc=0
  shift
  (while sleep 30; do say "$label: $((SECONDS - start)) s"; done) &
  ticker=$!
  "$@" || rc=$?
  kill "$ticker" 2>/dev/null
  wait "$ticker" 2>/dev/null || true
  return "$rc"
}

# --- Debian packages -------------------------------------------------------------------
need=()
command -v etcd >/dev/null 2>&1 || need+=(etcd-server)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v git >/dev/null 2>&1 || need+=(git)
# cgo (the Roles Anywhere signing helper in spokeforge) needs a C compiler.
command -v gcc >/dev/null 2>&1 || need+=(gcc libc6-dev)
# Argo CD's web UI is built with node and npm (hack/e2e/ui.sh); the UI tests drive chromium.
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
if ((${#need[@]})); then
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  apt_log="$(mktemp)"
  apt() {
    $sudo apt-get update -qq >"$apt_log" 2>&1 &&
      DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >>"$apt_log" 2>&1
  }
  say "apt-get install ${need[*]}"
  ticking "apt-get install" apt || { tail -40 "$apt_log" >&2; exit 1; }
  rm -f "$apt_log"
  # etcd-server and redis-server start system services on 2379/6379. The suite runs its own
  # instances on free ports, so the system ones are not needed; stop them where possible.
  for svc in etcd redis-server; do
    if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$svc" 2>/dev/null; then
      $sudo systemctl stop "$svc" || true
    fi
  done
else
  say "Debian packages present: etcd-server redis-server git gcc nodejs npm chromium"
fi

# --- binaries --------------------------------------------------------------------------
# build DIR NAME STAMP PACKAGE LDFLAGS: builds PACKAGE from module DIR into $bin/NAME unless
# $bin/NAME exists and $bin/NAME.stamp holds STAMP.
# With GOWORK (and GOTOOLCHAIN) set, it builds in that workspace (with that Go). No -trimpath
# (as Argo CD's own Makefile): then the Argo CD v3.6.2 build reuses the packages
# test/conformance-v3 compiled into the Go build cache for make test (the same module versions).
build() {
  local dir="$1" name="$2" stamp="$3" pkg="$4" ldflags="$5"
  if [ -z "${SPOKEFORGE_E2E_REBUILD:-}" ] && [ -x "$bin/$name" ] && [ "$(cat "$bin/$name.stamp" 2>/dev/null)" = "$stamp" ]; then
    say "$name present ($stamp) in $bin"
    return
  fi
  say "building $name ($stamp) into $bin (slow step: minutes on 2 cores)"
  local start=$SECONDS log="$bin/$name.build.log"
  # The go command's own lines (a "go: downloading" per module) go to the log, shown on failure.
  if ! (cd "$dir" && ticking "go build $name" go build -ldflags "-s -w $ldflags" -o "$bin/$name.tmp" "$pkg" 2>"$log"); then
    tail -40 "$log" >&2
    say "building $name failed: the last 40 lines of $log are above"
    exit 1
  fi
  mv "$bin/$name.tmp" "$bin/$name"
  echo "$stamp" >"$bin/$name.stamp"
  say "built $name in $((SECONDS - start))s"
}

# argocd_module VERSION: the tools module that builds that Argo CD release.
# argocd_toolchain VERSION: the GOTOOLCHAIN it builds with.
argocd_module() {
  case "$1" in
  v3.6.2) echo "$tools/argocd-v3.6" ;;
  v3.4.7) echo "$tools/argocd-v3.4" ;;
  *) echo "ARGOCD_VERSION=$1: the suite runs on v3.6.2 and v3.4.7" >&2; return 1 ;;
  esac
}
argocd_toolchain() {
  case "$1" in
  v3.6.2) echo go1.27.3 ;;
  *) go env GOTOOLCHAIN ;;
  esac
}
versions=(v3.6.2 v3.4.7)
if [ -n "${ARGOCD_VERSION:-}" ]; then versions=("$ARGOCD_VERSION"); fi
for v in "${versions[@]}"; do argocd_module "$v" >/dev/null; done

# v3.4.7's go.mod builds its engine from ./gitops-engine, a folder of Argo CD's repository that
# its module zip leaves out; the tools module replaces it with the same folder at the tag.
engine="$root/hack/e2e/vendor/argo-cd-v3.4.7-gitops-engine.tar.gz"
engine_dir="$tools/argocd-v3.4/gitops-engine"
engine_stamp="$(sha256sum "$engine" | cut -c1-64)"
if [ "$(cat "$engine_dir/.spokeforge-stamp" 2>/dev/null)" != "$engine_stamp" ]; then
  rm -rf "$engine_dir"
  tar -xzf "$engine" -C "$tools/argocd-v3.4"
  echo "$engine_stamp" >"$engine_dir/.spokeforge-stamp"
fi

say "downloading tools module dependencies"
for v in "${versions[@]}"; do
  (cd "$(argocd_module "$v")" && GOTOOLCHAIN="$(argocd_toolchain "$v")" ticking "go mod download (Argo CD $v)" go mod download)
done

# argocd_workspace VERSION: prints a go.work that builds the version's tools module against a
# writable copy of the Argo CD module ($bin/../src/argo-cd-VERSION; the module cache and the
# checkout stay untouched) holding the web UI: argocd-server reads index.html only from the
# files embedded at build time (ui/dist/app, empty in the module), so the UI built by
# hack/e2e/ui.sh ($bin/argocd-ui-VERSION) goes there.
argocd_workspace() {
  local v="$1"
  local major="${v%%.*}" src="$bin/../src/argo-cd-$v" mod
  mod="$(argocd_module "$v")"
  if [ ! -d "$src" ]; then
    mkdir -p "$(dirname "$src")"
    rm -rf "$src.tmp"
    cp -r "$(cd "$mod" && go list -m -f '{{.Dir}}' "github.com/argoproj/argo-cd/$major")" "$src.tmp"
    chmod -R u+w "$src.tmp" && mv "$src.tmp" "$src"
  fi
  rm -rf "$src/ui/dist/app"
  cp -r "$bin/argocd-ui-$v" "$src/ui/dist/app"
  printf 'go %s\n\nuse %s\n\nreplace github.com/argoproj/argo-cd/%s %s => %s\n' \
    "$(cd "$mod" && go list -m -f '{{.GoVersion}}')" "$mod" "$major" "$v" "$src" >"$src.go.work"
  echo "$src.go.work"
}

# The spoke's controllers: cert-manager v1.19.4 (an own main over its registered controllers, as
# its cmd/controller is a module no proxy serves) and External Secrets Operator v0.16.2 (its own
# root command, linking only the AWS provider and the ECR generator; see the tools modules' docs).
# Their tools modules hold every module that Argo CD v3.4.7's build also compiles at its version,
# so about two thirds of their packages are the same as that build's (one compiles, one reuses).
cm="$tools/cert-manager-v1.19"
eso="$tools/external-secrets-v0.16"

# eso_workspace: a go.work that builds the ESO tools module against a copy of the ESO module
# ($bin/../src/external-secrets-v0.16.2; the module cache stays untouched) whose two register
# packages are replaced by the tools module's patch/ files. go build -overlay cannot do this:
# it refuses files beneath GOMODCACHE.
eso_workspace() {
  local src="$bin/../src/external-secrets-v0.16.2" dir
  if [ ! -f "$src/go.mod" ]; then
    mkdir -p "$(dirname "$src")"
    rm -rf "$src" "$src.tmp"
    # The ESO module alone (go build then fetches only the modules it compiles, not every
    # cloud SDK of ESO's graph).
    (cd "$eso" && go mod download github.com/external-secrets/external-secrets) || return 1
    dir="$(cd "$eso" && go list -m -f '{{.Dir}}' github.com/external-secrets/external-secrets)"
    if [ -z "$dir" ] || [ ! -f "$dir/go.mod" ]; then
      echo "the External Secrets module is not in the module cache after go mod download" >&2
      return 1
    fi
    cp -r "$dir" "$src.tmp" && chmod -R u+w "$src.tmp" && mv "$src.tmp" "$src" || return 1
  fi
  cp -r "$eso/patch/." "$src/" || return 1
  printf 'go %s\n\nuse %s\n\nreplace github.com/external-secrets/external-secrets v0.16.2 => %s\n' \
    "$(cd "$eso" && go list -m -f '{{.GoVersion}}')" "$eso" "$src" >"$src.go.work"
  echo "$src.go.work"
}
spoke_controllers() {
  build "$cm" cert-manager-controller "cert-manager-v1.19.4+main-$(cat "$cm/main.go" "$cm/go.mod" "$cm/go.sum" | sha256sum | cut -c1-12)" . ""
  local work
  work="$(eso_workspace)" || { say "preparing the External Secrets module failed (above)"; exit 1; }
  GOWORK="$work" build "$eso" external-secrets \
    "external-secrets-v0.16.2-aws-only+$(cat "$eso/main.go" "$eso/go.mod" "$eso/go.sum" "$eso"/patch/pkg/*/register/register.go | sha256sum | cut -c1-12)" . ""
}
# The web UIs build in the background while the Go builds that need no UI run (the spoke's
# controllers, kube-apiserver); each argocd then waits for its UI, which it embeds. On 2 cores
# this is no faster than one after the other (webpack uses both cores at times: make demo's first
# run had the v3.6.2 UI and cert-manager done 384 s after they began, against 179 + 199 s apart),
# but E2E_UI_ALSO uses it: it names more releases whose UI this job builds. make e2e builds
# v3.4.7's argocd beside v3.6.2's tests (test/e2e/run.sh), under nice, where the UI took 357 s
# and made that build, not the tests, end the suite phase; its UI is built here instead.
uis=("${versions[@]}")
for v in ${E2E_UI_ALSO:-}; do
  argocd_module "$v" >/dev/null
  uis+=("$v")
done
(for v in "${uis[@]}"; do "$root/hack/e2e/ui.sh" "$v" "$bin/argocd-ui-$v" || exit 1; done) &
ui_pid=$!
trap 'kill "$ui_pid" 2>/dev/null || true' EXIT

spoke_controllers

# From Argo CD v3.6.2's module, which pins it: the two share their compiled k8s.io packages
# (and those test/conformance-v3 compiled for make test).
kv=k8s.io/component-base/version
GOTOOLCHAIN=go1.27.3 build "$tools/argocd-v3.6" kube-apiserver "kubernetes-v1.37.0-argocd-v3.6.2-module" \
  k8s.io/kubernetes/cmd/kube-apiserver \
  "-X $kv.gitVersion=v1.37.0 -X $kv.gitMajor=1 -X $kv.gitMinor=37 -X $kv.gitTreeState=clean"

if ! wait "$ui_pid"; then
  say "building the Argo CD web UI failed (above)"
  exit 1
fi
trap - EXIT
for v in "${versions[@]}"; do
  major="${v%%.*}"
  av="github.com/argoproj/argo-cd/$major/common"
  stamp="argo-cd-$v-own-module+ui-$(cat "$bin/argocd-ui-$v.stamp")"
  if [ "$v" = v3.4.7 ]; then stamp="$stamp+engine-${engine_stamp:0:12}"; fi
  toolchain="$(argocd_toolchain "$v")"
  work="$(GOTOOLCHAIN="$toolchain" argocd_workspace "$v")"
  GOTOOLCHAIN="$toolchain" GOWORK="$work" build "$(argocd_module "$v")" "argocd-$v" "$stamp" "github.com/argoproj/argo-cd/$major/cmd" \
    "-X $av.version=${v#v} -X $av.gitTag=$v -X $av.gitTreeState=clean"
done

# --- CRD source modules (spoke CRDs) and the releases' install manifests ------------------
for m in github.com/cert-manager/cert-manager@v1.19.4 \
  github.com/external-secrets/external-secrets@v0.16.2 \
  sigs.k8s.io/node-feature-discovery@v0.17.3 \
  github.com/argoproj/argo-cd/v3@v3.4.7 \
  github.com/argoproj/argo-cd/v3@v3.6.2; do
  # Outside any module, so the tools module's go.sum is left alone. v3.6.2's go.mod names Go 1.27.
  (cd / && GOTOOLCHAIN=go1.27.3 go mod download "$m")
done
say "done in $SECONDS s; binaries in $bin"
