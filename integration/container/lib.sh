# lib.sh — what the container pass (run.sh) and the Kubernetes stage
# (integration/kube/run.sh, and the image of deploy/kubernetes/build-image.sh)
# share. Sourced, not run.
#
#   sbx_base_rootfs DIR   busybox (every applet), /etc/passwd and /etc/group
#                         with root, user (1000) and nobody, /tmp and
#                         /var/tmp mode 1777, /root, /home/user (1000's),
#                         mount points for /proc, /sys, /dev
#   sbx_podman_setup      sets podman_opts (podman's global options),
#                         runtime and ulimit_opts (run's --ulimit options,
#                         empty when podman's defaults can be raised to)
#
# Nothing here is pulled from a registry: busybox is Debian's busybox-static
# and sbx is built with CGO_ENABLED=0, so the tree runs on any kernel that
# sbx supports, with no libc.

sbx_base_rootfs() {
  local base=$1 applet
  mkdir -p "$base"/{bin,sbin,usr/bin,usr/sbin,etc,tmp,var/tmp,proc,sys,dev,root,home/user}
  chmod 1777 "$base/tmp" "$base/var/tmp"
  chmod 700 "$base/root"
  cp /bin/busybox "$base/bin/busybox"
  for applet in $(/bin/busybox --list-full); do
    [ -e "$base/$applet" ] || ln -s /bin/busybox "$base/$applet"
  done
  cat > "$base/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/bin/sh
user:x:1000:1000:user:/home/user:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/sh
PASSWD
  cat > "$base/etc/group" <<'GROUP'
root:x:0:
user:x:1000:
nogroup:x:65534:
GROUP
  chown 1000:1000 "$base/home/user"
}

sbx_podman_setup() {
  # No systemd needed: cgroupfs, events to a file.
  podman_opts=(--cgroup-manager=cgroupfs --events-backend=file)
  # crun (Debian 12's 1.8.1) refuses a hybrid cgroup layout whose v2
  # hierarchy has controllers ("cgroups in hybrid mode not supported");
  # runc runs there.
  runtime=${SBX_CT_RUNTIME:-crun}
  if [ -z "${SBX_CT_RUNTIME:-}" ] && [ "$(stat -fc %T /sys/fs/cgroup)" != cgroup2fs ] \
    && [ -n "$(cat /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null)" ]; then
    runtime=runc
  fi
  podman_opts+=(--runtime "$runtime")
  # Rootful podman raises RLIMIT_NOFILE and RLIMIT_NPROC to 1048576 in the
  # container; a root without CAP_SYS_RESOURCE (an outer sandbox, as on the
  # CI machine) cannot, so the container keeps the limits it is started
  # with (podman caps NPROC at kernel.pid_max itself).
  ulimit_opts=()
  if [ $(( 0x$(awk '/^CapEff:/ {print $2}' /proc/self/status) >> 24 & 1 )) = 0 ]; then
    local nproc pidmax
    nproc=$(ulimit -Hu); pidmax=$(cat /proc/sys/kernel/pid_max)
    { [ "$nproc" = unlimited ] || [ "$nproc" -gt "$pidmax" ]; } && nproc=$pidmax
    ulimit_opts=(--ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" --ulimit "nproc=$nproc:$nproc")
  fi
}
