#!/usr/bin/env bash
# Runs the end-to-end suite on each Argo CD release named, all at the same time (most of a test
# is waiting on reconciliation, and each test has its own hub), each output line prefixed with
# its release. Prints each release's wall time; fails if any release failed. A release runs only
# the tests E2E_RUN_<release> names (go test -run), when that is set: E2E_RUN_v3_4_7=… for v3.4.7.
#   test/e2e/run.sh VERSION... -- GO_TEST_RUN_FLAGS... (-v, -count, -timeout, -parallel, -run)
# Each release's binaries come from hack/e2e/install.sh (a no-op when cached). The first release's
# are built before any test starts, at full priority, with every release's web UI; every other
# release builds its argocd under nice 19 beside the first release's tests, then runs. The suite leaves a third of the 2 cores
# idle, most of it in stretches where a test waits on a controller's requeue (docs/e2e.md), and
# at nice 19 the build takes only the CPU the hubs leave, so their timing stays as it was.
set -uo pipefail
cd "$(dirname "$0")/../.."
versions=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do versions+=("$1"); shift; done
shift || true
go="${GO:-go}"
if [ ${#versions[@]} -eq 0 ]; then echo "run.sh: no Argo CD release named" >&2; exit 2; fi
# The other releases' web UIs build in the first install, before the tests: beside them, under
# nice, v3.4.7's UI took 357 s and made its build, not the tests, end the suite phase.
E2E_UI_ALSO="${versions[*]:1}" ARGOCD_VERSION="${versions[0]}" hack/e2e/install.sh || exit 1
status="$(mktemp -d)"
trap 'rm -rf "$status"' EXIT
# One test binary for every release: two go test processes would each compile and link it.
# Without go test's vet (make vet covers the harness); the binary takes go test's run flags
# as -test.NAME, and runs in the package's folder, as go test runs it.
# No DWARF (-ldflags=-w): a quarter less link time, and nothing reads it.
"$go" test -c -vet=off -ldflags=-w -tags e2e -o "$status/e2e.test" ./test/e2e/ || exit 1
args=()
for a in "$@"; do
  case "$a" in
  -test.*) args+=("$a") ;;
  -*) args+=("-test.${a#-}") ;;
  *) args+=("$a") ;;
  esac
done
# Each release its own slice of the loopback ports below the ephemeral range (test/e2e/proc.go):
# two test processes cannot see which ports the other has picked but not yet bound.
slot=0
width=$(( (32768 - 20000) / ${#versions[@]} ))
for v in "${versions[@]}"; do
  lo=$(( 20000 + slot * width ))
  slot=$(( slot + 1 ))
  (
    start=$SECONDS
    export E2E_PORT_RANGE="$lo-$(( lo + width ))"
    # E2E_RUN_<version, dots as underscores> narrows that release to the tests it names (-run).
    var="E2E_RUN_${v//./_}"
    only=()
    if [ -n "${!var:-}" ]; then only=(-test.run "${!var}"); fi
    rc=0
    if [ "$v" != "${versions[0]}" ]; then
      ARGOCD_VERSION="$v" nice -n 19 hack/e2e/install.sh 2>&1 || rc=$?
      echo "=== Argo CD $v binaries ready after $((SECONDS - start)) s"
    fi
    if [ "$rc" = 0 ]; then
      (cd test/e2e && ARGOCD_VERSION="$v" "$status/e2e.test" "${args[@]}" "${only[@]}") 2>&1
      rc=$?
    fi
    echo "=== e2e on Argo CD $v: exit $rc after $((SECONDS - start)) s"
    echo "$rc" >"$status/$v"
  ) | tee "$status/$v.out" | sed -u "s/^/[$v] /" &
done
wait
failed=""
for v in "${versions[@]}"; do
  [ "$(cat "$status/$v" 2>/dev/null)" = 0 ] || failed="$failed $v"
done
if [ -n "$failed" ]; then
  # The parallel tests' output is interleaved and long, and CI may keep only its end: repeat,
  # last, the final 40 lines each failed test printed (go test -v names the test before its
  # lines: === RUN / CONT / NAME), without the hub's log tails, which come after the failure
  # and would push it out (their first line, naming the folder they are in, stays).
  for v in $failed; do
    echo "=== what failed on Argo CD $v"
    awk '
      /^=== (RUN|CONT|NAME|PAUSE) / { cur = $3; sub(/\/.*/, "", cur); next }
      /^ *--- FAIL: / {
        t = $3; sub(/\/.*/, "", t)
        if (!(t in shown)) {
          shown[t] = 1
          for (i = (n[t] > 40 ? n[t] - 39 : 1); i <= n[t]; i++) print line[t, i]
        }
        print; next
      }
      cur != "" && skip && /^        / { next }
      { skip = 0 }
      cur != "" && /^ +[^ ]+\.go:[0-9]+: e2e logs in / { skip = 1 }
      cur != "" { line[cur, ++n[cur]] = $0 }
    ' "$status/$v.out" | sed "s/^/[$v] /"
  done
  echo "=== e2e failed on Argo CD$failed"
  exit 1
fi
echo "=== e2e passed on Argo CD ${versions[*]}"
