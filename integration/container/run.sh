#!/usr/bin/env bash
# run.sh — run sbx's integration suite inside podman containers, with the
# runtime's default seccomp profile, masked /proc paths and capability set.
#
# usage: integration/container/run.sh        (as root, on Debian 12 with Go)
#
# Three passes, each in a fresh directory rootfs of static binaries (busybox,
# sbx, the probe, the integration test binary; no image registry needed):
#   rootful-root     rootful podman, container root (no CAP_SYS_ADMIN)
#   rootful-user     rootful podman, uid 1000 inside (no capabilities)
#   rootless-root    rootless podman run by the host user sbxtest, container
#                    root (all capabilities, but of a user namespace)
# Each prints PASS or FAIL; the exit status is non-zero if any failed. Then
# the Kubernetes stage, integration/kube/run.sh (SBX_CT_KUBE=0 skips it).
# Installs podman uidmap slirp4netns fuse-overlayfs busybox-static with
# apt-get when missing, and creates the host user sbxtest with subordinate
# ids when missing. See README.md.
#
# Environment (all optional):
#   SBX_CT_PASSES  a subset of "rootful-root rootful-user rootless-root"
#   SBX_CT_RUN     a -test.run pattern (default: the whole suite; "core" for
#                  the core cases below)
#   SBX_CT_LOGDIR  keep each pass's full -test.v log here
#   SBX_CT_USER    the host user for the rootless pass (default sbxtest)
#   SBX_CT_KUBE    0: no Kubernetes stage
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
passes=${SBX_CT_PASSES:-"rootful-root rootful-user rootless-root"}
for p in $passes; do
  case $p in rootful-root|rootful-user|rootless-root) ;; *) echo "SBX_CT_PASSES: unknown pass $p" >&2; exit 2 ;; esac
done
# The core cases (issue #13 §5): writes outside and inside the roots, the
# .git carve-out, the network off, capabilities and host escapes, the
# host's environments, the degradation report and --require, the process
# tree's death.
core='^(TestFileSystem|TestGitCarveOuts|TestCarveOutCreate|TestHostLoopbackNetworkOff|TestLocalServerInsideNetworkOff|TestSocketFamilies|TestCapabilitiesDropped|TestHostEscapes|TestHostEnvironUnreadable|TestDegradedReport|TestRequire|TestDeathOfTreeWithSbx|TestTimeoutKillsTree)$'
run=${SBX_CT_RUN:-}
[ "$run" = core ] && run=$core
ctuser=${SBX_CT_USER:-sbxtest}

[ "$(id -u)" = 0 ] || { echo "run.sh: must run as root (rootful podman, apt-get, useradd)" >&2; exit 2; }
command -v go >/dev/null || PATH=$PATH:/usr/local/go/bin

# Debian packages, installed once.
need=()
for pkg in podman uidmap slirp4netns fuse-overlayfs busybox-static runc; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "run.sh: installing ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

# The rootless pass's host user, with subordinate ids for its container.
if ! id -u "$ctuser" >/dev/null 2>&1; then
  useradd -m -s /bin/sh "$ctuser"
fi
for f in /etc/subuid /etc/subgid; do
  grep -q "^$ctuser:" "$f" 2>/dev/null || echo "$ctuser:200000:65536" >> "$f"
done
cthome=$(getent passwd "$ctuser" | cut -d: -f6)
[ -d "$cthome" ] || { mkdir -p "$cthome"; chown "$ctuser:" "$cthome"; }

work=$(mktemp -d /tmp/sbx-container.XXXXXX)
chmod 755 "$work"
cleanup() {
  # Rootless passes leave files owned by sub-uids; podman unshare removes them.
  [ -d "$work/rootless-root" ] && runuser -u "$ctuser" -- env HOME="$cthome" XDG_RUNTIME_DIR="$work/xdg" \
    podman unshare rm -rf "$work/rootless-root" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# The base rootfs (lib.sh, shared with integration/kube): busybox for
# every applet, root, the unprivileged user 1000 and nobody, with homes
# outside /tmp; and the suite's static binaries.
base=$work/base
. "$here/lib.sh"
sbx_base_rootfs "$base"
mkdir -p "$base/tests/bin"
echo "run.sh: building static binaries"
(cd "$root" && CGO_ENABLED=0 go build -o "$base/tests/bin/sbx" ./cmd/sbx \
  && CGO_ENABLED=0 go build -o "$base/tests/bin/probe" ./integration/probe \
  && CGO_ENABLED=0 go test -c -o "$base/tests/bin/integration.test" ./integration)
printf "RUN='%s'\n" "$run" > "$base/tests/bin/config"
cat > "$base/tests/run-pass" <<'SCRIPT'
#!/bin/sh
# One pass inside the container: the suite, its result lines (the whole log
# when it failed) and the environment sbx saw.
. /tests/bin/config
export SBX_BIN=/tests/bin/sbx SBX_PROBE=/tests/bin/probe PATH=/bin:/sbin:/usr/bin:/usr/sbin
# Only busybox here: the tests that run these say so and skip.
export SBX_IT_ABSENT_TOOLS="bash git curl pip3 go cargo make gcc python3 node npm"
cd /tmp
echo "@@ENV uid=$(id -u) $(grep -E '^(CapEff|Seccomp):' /proc/self/status | tr -s '\t\n' '  ')uid_map=$(tr -s ' \n' ' ' < /proc/self/uid_map)"
if [ -n "$RUN" ]; then
  /tests/bin/integration.test -test.v -test.count=1 -test.run="$RUN" </dev/null > /tmp/pass.log 2>&1
else
  /tests/bin/integration.test -test.v -test.count=1 </dev/null > /tmp/pass.log 2>&1
fi
r=$?
if [ $r -eq 0 ]; then
  grep -E '^(--- |ok|PASS|FAIL)|^ +--- (FAIL|SKIP)|SKIP|@@CAPS' /tmp/pass.log
else
  cat /tmp/pass.log
fi
[ -d /tests/log ] && cp /tmp/pass.log /tests/log/pass.log
exit $r
SCRIPT
chmod -R a+rX "$base/tests"
chmod 755 "$base/tests/run-pass"
mkdir -p "$work/xdg" && chown "$ctuser:" "$work/xdg" && chmod 700 "$work/xdg"

# podman's global options, the OCI runtime and the ulimits (lib.sh).
sbx_podman_setup
run_opts=(--rm --network none --workdir /tmp "${ulimit_opts[@]}")
echo "run.sh: podman $(podman --version | awk '{print $3}'), runtime $runtime"

rc=0
summary=()
for p in $passes; do
  rfs=$work/$p
  cp -a "$base" "$rfs"
  [ -n "${SBX_CT_LOGDIR:-}" ] && mkdir -p "$rfs/tests/log" && chmod 777 "$rfs/tests/log"
  start=$(date +%s.%N)
  echo "@@PASS START $p"
  set +e
  case $p in
    rootful-root)
      podman "${podman_opts[@]}" run "${run_opts[@]}" --rootfs "$rfs" /tests/run-pass ;;
    rootful-user)
      podman "${podman_opts[@]}" run "${run_opts[@]}" --user 1000:1000 --rootfs "$rfs" /tests/run-pass ;;
    rootless-root)
      # The rootfs belongs to the container's root, the host user.
      chown -R "$ctuser:" "$rfs"
      (cd / && runuser -u "$ctuser" -- env HOME="$cthome" XDG_RUNTIME_DIR="$work/xdg" \
        podman "${podman_opts[@]}" run "${run_opts[@]}" --rootfs "$rfs" /tests/run-pass) ;;
  esac
  r=$?
  set -e
  secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
  if [ -n "${SBX_CT_LOGDIR:-}" ] && [ -f "$rfs/tests/log/pass.log" ]; then
    mkdir -p "$SBX_CT_LOGDIR" && cp "$rfs/tests/log/pass.log" "$SBX_CT_LOGDIR/$p.log"
  fi
  if [ $r -eq 0 ]; then res=PASS; else res=FAIL; rc=1; fi
  echo "@@PASS RESULT $p $res (exit $r, ${secs}s)"
  summary+=("$res $p ${secs}s")
done
# The Kubernetes stage (integration/kube/run.sh): deploy/kubernetes's
# manifests under podman kube play, rootful and rootless, with the podman,
# the runtime choice and the rootless user set up above, and the rootfs
# builder of lib.sh. SBX_CT_KUBE=0 skips it.
if [ "${SBX_CT_KUBE:-1}" != 0 ]; then
  start=$(date +%s.%N)
  echo "@@PASS START kube"
  set +e
  SBX_CT_USER=$ctuser bash "$root/integration/kube/run.sh"
  r=$?
  set -e
  secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
  if [ $r -eq 0 ]; then res=PASS; else res=FAIL; rc=1; fi
  echo "@@PASS RESULT kube $res (exit $r, ${secs}s)"
  summary+=("$res kube ${secs}s")
fi
echo "== summary"
printf '%s\n' "${summary[@]}"
exit $rc
