#!/usr/bin/env bash
# matrix.sh — run the integration suite on real Debian kernels in QEMU.
#
# usage: integration/vm/matrix.sh [KERNEL_CACHE_DIR]   (default /var/cache/sbx-kernels)
#
# Fetches the kernels once per machine (Debian's archive only), builds the
# suite as static binaries, and boots each kernel once. Inside, one script runs
# the suite four times: as root and as nobody, then both again with user
# namespaces disabled (standing for a container or a distribution that
# forbids them). Exit status 0 means every pass on every kernel passed.
# Needs: qemu-system-x86 busybox-static cpio (Debian packages).
#
# Environment (all optional; see README.md):
#   SBX_VM_KERNELS  space-separated kernel versions or prefixes to boot, e.g.
#                   "5.10 6.1" (default: every kernel in the cache)
#   SBX_VM_PASSES   passes to run, a subset of "root nobody root-nouserns
#                   nobody-nouserns root-serve nobody-serve" (default: the
#                   first four, in that order); a -serve pass is root's or
#                   nobody's with SBX_IT_VIA=serve: run()'s calls go through
#                   one sbx serve (integration/doc.go)
#   SBX_VM_RUN      a -test.run pattern for the suite (default: everything)
#   SBX_VM_LOGDIR   keep each kernel's full console log in this directory
#   SBX_VM_TIMEOUT  per-kernel wall-clock limit in seconds (default 900)
#   SBX_VM_SUITES   Debian suites to fetch kernels from (see fetch-kernels.sh)
#   SBX_VM_NOFETCH  1: use the cache as it is, without asking Debian's archive
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cache=${1:-/var/cache/sbx-kernels}
# 5.10: no Landlock; 6.1: ABI 2; 6.12: ABI 6; 7.2: ABI 10; 7.3: ABI 11.
suites=${SBX_VM_SUITES:-"bullseye-security bookworm-security bookworm-security:linux-image-6.12-amd64 sid trixie-backports"}
passes=${SBX_VM_PASSES:-"root nobody root-nouserns nobody-nouserns"}
for p in $passes; do
  case $p in root|nobody|root-nouserns|nobody-nouserns|root-serve|nobody-serve) ;; *) echo "SBX_VM_PASSES: unknown pass $p" >&2; exit 2 ;; esac
done

mkdir -p "$cache"
if [ "${SBX_VM_NOFETCH:-0}" != 1 ]; then
  # shellcheck disable=SC2086
  bash "$here/fetch-kernels.sh" "$cache" $suites
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/sbx-matrix.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/tests/bin"
(cd "$root" && CGO_ENABLED=0 go build -o "$work/tests/bin/sbx" ./cmd/sbx \
  && CGO_ENABLED=0 go build -o "$work/tests/bin/probe" ./integration/probe \
  && CGO_ENABLED=0 go test -c -o "$work/tests/bin/integration.test" ./integration)
# The guest's configuration, read by run-all (a file, so that no quoting
# survives into the heredoc below).
{
  echo "PASSES='$passes'"
  echo "RUN='${SBX_VM_RUN:-}'"
} > "$work/tests/bin/config"
cat > "$work/tests/run-all" <<'SCRIPT'
#!/bin/sh
# One kernel, up to four passes; prints the result lines of each pass (the
# whole log of a failing one) and fails if any failed.
. /tests/bin/config
export SBX_BIN=/tests/bin/sbx SBX_PROBE=/tests/bin/probe
# The guest is busybox only: the tests that need these programs skip, saying
# so; anywhere else a missing one fails them.
export SBX_IT_ABSENT_TOOLS="bash git curl pip3 go cargo make gcc python3 node npm"
cd /tmp
rc=0
# -test.short: the race tests run fewer rounds under TCG (raceRounds).
t="/tests/bin/integration.test -test.v -test.count=1 -test.short${RUN:+ -test.run='$RUN'}"
userns=$(cat /proc/sys/user/max_user_namespaces)
pass() {
  label=$1; shift
  start=$(cut -d' ' -f1 /proc/uptime)
  echo "@@PASS START $label"
  "$@" </dev/null > /tmp/pass.log 2>&1; r=$?
  if [ $r -eq 0 ]; then
    grep -E '^(--- |ok|PASS|FAIL|integration: via serve)|^ +--- (FAIL|SKIP)|SKIP|@@CAPS' /tmp/pass.log
  else
    cat /tmp/pass.log; rc=1
  fi
  echo "@@PASS RESULT $label $r $(awk -v a="$start" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN {printf "%.1fs", b - a}')"
}
for p in $PASSES; do
  case $p in *-nouserns) echo 0 ;; *) echo "$userns" ;; esac > /proc/sys/user/max_user_namespaces
  # A -serve pass leaves out the TestServe tests: they start servers of
  # their own whatever SBX_IT_VIA says, and ran in the other passes.
  via= skip=
  case $p in *-serve) via="SBX_IT_VIA=serve " skip=" -test.skip=^TestServe" ;; esac
  case $p in
    root*) pass "$p" sh -c "${via}exec $t$skip" ;;
    nobody*) pass "$p" su -s /bin/sh nobody -c "${via}exec $t$skip" ;;
  esac
done
exit $rc
SCRIPT
chmod -R a+rx "$work/tests"
kernels=()
for d in "$cache"/*/; do
  [ -s "$d/vmlinuz" ] || continue
  v=$(basename "$d")
  if [ -n "${SBX_VM_KERNELS:-}" ]; then
    # "6.1" is 6.1.0-57-amd64, not 6.12.x
    m=0; for k in $SBX_VM_KERNELS; do case $v in "$k" | "$k".* | "$k"-* | "$k"+*) m=1 ;; esac; done
    [ $m = 1 ] || continue
  fi
  kernels+=("${d%/}")
done
[ ${#kernels[@]} -gt 0 ] || { echo "no kernels in $cache${SBX_VM_KERNELS:+ matching $SBX_VM_KERNELS}" >&2; exit 1; }
bash "$here/run-kernel-matrix.sh" -t "${SBX_VM_TIMEOUT:-900}" ${SBX_VM_LOGDIR:+-l "$SBX_VM_LOGDIR"} "$work/tests" "${kernels[@]}"
