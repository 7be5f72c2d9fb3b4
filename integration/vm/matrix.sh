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
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cache=${1:-/var/cache/sbx-kernels}
# 5.10: no Landlock; 6.1: ABI 2; 6.12: ABI 6; 7.2: ABI 10; 7.3: ABI 11.
suites=${SBX_VM_SUITES:-"bullseye-security bookworm-security bookworm-security:linux-image-6.12-amd64 sid trixie-backports"}

mkdir -p "$cache"
# shellcheck disable=SC2086
bash "$here/fetch-kernels.sh" "$cache" $suites

work=$(mktemp -d "${TMPDIR:-/tmp}/sbx-matrix.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/tests/bin"
(cd "$root" && CGO_ENABLED=0 go build -o "$work/tests/bin/sbx" ./cmd/sbx \
  && CGO_ENABLED=0 go build -o "$work/tests/bin/probe" ./integration/probe \
  && CGO_ENABLED=0 go test -c -o "$work/tests/bin/integration.test" ./integration)
cat > "$work/tests/run-all" <<'SCRIPT'
#!/bin/sh
# One kernel, four passes; prints a line per pass and fails if any failed.
export SBX_BIN=/tests/bin/sbx SBX_PROBE=/tests/bin/probe
cd /tmp
rc=0
pass() {
  label=$1; shift
  echo "@@PASS START $label"
  "$@" </dev/null > /tmp/pass.log 2>&1; r=$?
  grep -E '^(--- |ok|PASS|FAIL)|^ +--- (FAIL|SKIP)|SKIP' /tmp/pass.log
  [ $r -eq 0 ] || { grep -A30 -- '--- FAIL' /tmp/pass.log | head -120; rc=1; }
  echo "@@PASS RESULT $label $r"
}
t="/tests/bin/integration.test -test.v -test.count=1"
pass root $t
pass nobody su -s /bin/sh nobody -c "exec $t"
echo 0 > /proc/sys/user/max_user_namespaces
pass root-nouserns $t
pass nobody-nouserns su -s /bin/sh nobody -c "exec $t"
exit $rc
SCRIPT
chmod -R a+rx "$work/tests"
kernels=()
for d in "$cache"/*/; do [ -s "$d/vmlinuz" ] && kernels+=("${d%/}"); done
[ ${#kernels[@]} -gt 0 ] || { echo "no kernels in $cache" >&2; exit 1; }
bash "$here/run-kernel-matrix.sh" -t "${SBX_VM_TIMEOUT:-900}" ${SBX_VM_LOGDIR:+-l "$SBX_VM_LOGDIR"} "$work/tests" "${kernels[@]}"
