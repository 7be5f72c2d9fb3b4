#!/usr/bin/env bash
# run.sh — the Kubernetes stage: the manifests of deploy/kubernetes played
# with `podman kube play`, rootful and rootless, with the real sbx under the
# real kernel in real pods. Called by integration/container/run.sh (which
# installs podman and makes the rootless user); runs alone as well.
#
# usage: integration/kube/run.sh        (as root, on Debian 12 with Go and podman)
#
# It checks, and prints @@KUBE RESULT <mode> <check> PASS|FAIL for each:
#   manifests      every securityContext of the manifests is the least one
#                  docs/kubernetes.md documents (its two yaml blocks), and
#                  nothing is privileged: no privileged: true, no added
#                  capability, no host namespace, no procMount
#   sidecar        sidecar.yaml: the example runtime container's calls
#                  through the sidecar's socket (integration/kube/client)
#                  give the host's exit codes and denials, and each call's
#                  report lists exactly the downgrades docs/kubernetes.md
#                  names for the shape (its kube:downgrades table)
#   node           the same for daemonset.yaml and runtime-pod.yaml. podman
#                  4.3 cannot play a DaemonSet ("YAML document does not
#                  contain any supported kube kind"): the DaemonSet's pod
#                  template is played as a Pod. Its hostPaths are moved
#                  under this run's temporary directory (the rootless user
#                  cannot make /run/sbx, and a test leaves the host's alone)
# The host's calls are made by the same client against `sbx serve --listen`
# run by the rootless user on the host, in a directory of its home (outside
# /tmp, which workspace-write makes writable).
#
# Environment (all optional):
#   SBX_KUBE_MODES  a subset of "rootful rootless"
#   SBX_CT_USER     the host user of the rootless mode (default sbxtest)
#   SBX_CT_RUNTIME  the OCI runtime (see integration/container/lib.sh)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
modes=${SBX_KUBE_MODES:-"rootful rootless"}
ctuser=${SBX_CT_USER:-sbxtest}
deploy=$root/deploy/kubernetes
doc=$root/docs/kubernetes.md
tag=localhost/sbx:kube

[ "$(id -u)" = 0 ] || { echo "kube/run.sh: must run as root (rootful podman, runuser)" >&2; exit 2; }
command -v go >/dev/null || PATH=$PATH:/usr/local/go/bin
command -v podman >/dev/null || { echo "kube/run.sh: podman missing (integration/container/run.sh installs it)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "kube/run.sh: python3 missing (it writes the containerd-like seccomp profile)" >&2; exit 2; }
id -u "$ctuser" >/dev/null 2>&1 || { echo "kube/run.sh: no user $ctuser (integration/container/run.sh makes it)" >&2; exit 2; }
cthome=$(getent passwd "$ctuser" | cut -d: -f6)
. "$root/integration/container/lib.sh"
sbx_podman_setup

work=$(mktemp -d /tmp/sbx-kube.XXXXXX)
chmod 755 "$work"
mkdir -p "$work/xdg" "$work/bin" && chown "$ctuser:" "$work/xdg" && chmod 700 "$work/xdg"
hostdir=$(runuser -u "$ctuser" -- mktemp -d "$cthome/.sbx-kube.XXXXXX")
# The rootless user's podman: its own storage, a runtime directory of ours.
rootless=(runuser -u "$ctuser" -- env HOME="$cthome" XDG_RUNTIME_DIR="$work/xdg" CONTAINERS_CONF="$work/containers.conf" podman)
# down MODE: remove the pods and the volumes the manifests make (kube play
# names an emptyDir's volume after it, and keeps it after the pod).
down() {
  local p=(podman)
  [ "$1" = rootless ] && p=("${rootless[@]}")
  for pod in sbx-sidecar sbx-node sbx-runtime; do "${p[@]}" "${podman_opts[@]}" pod rm -f "$pod" >/dev/null 2>&1 || true; done
  "${p[@]}" "${podman_opts[@]}" volume rm -f sbx-sidecar-socket sbx-sidecar-state sbx-sidecar-workspace sbx-sidecar-tmp sbx-node-tmp >/dev/null 2>&1 || true
}
cleanup() {
  # The image is imported into root's storage whatever the modes.
  podman "${podman_opts[@]}" rmi -f "$tag" >/dev/null 2>&1 || true
  for m in $modes; do
    down "$m"
    [ "$m" = rootless ] && { "${rootless[@]}" "${podman_opts[@]}" rmi -f "$tag" >/dev/null 2>&1 || true; }
    # The rootless pods' files belong to sub-uids; podman unshare removes them.
    if [ "$m" = rootless ] && [ -d "$work/rootless" ]; then
      (cd / && "${rootless[@]}" unshare rm -rf "$work/rootless") 2>/dev/null || true
    fi
  done
  # Rootless podman's pause process (it holds the user's namespaces) was
  # started by this run: the one whose XDG_RUNTIME_DIR is ours.
  for pid in $(pgrep -u "$ctuser" -x catatonit || true); do
    if tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null | grep -qx "XDG_RUNTIME_DIR=$work/xdg"; then
      kill "$pid" 2>/dev/null || true
    fi
  done
  rm -rf "$work" "$hostdir"
}
# The run's status is its own, whatever a step of the cleanup returns.
trap 'r=$?; cleanup; exit $r' EXIT

# podman kube play has no --ulimit: the container pass's limits (lib.sh)
# go through a containers.conf of this run.
{
  echo '[containers]'
  printf 'default_ulimits = ['
  sep=
  for ((i = 1; i < ${#ulimit_opts[@]}; i += 2)); do printf '%s"%s"' "$sep" "${ulimit_opts[$i]}"; sep=', '; done
  echo ']'
} > "$work/containers.conf"
chmod 644 "$work/containers.conf"
export CONTAINERS_CONF=$work/containers.conf

rc=0
summary=()
result() { # mode check PASS|FAIL seconds
  echo "@@KUBE RESULT $1 $2 $3 (${4}s)"
  summary+=("$3 kube-$1-$2 ${4}s")
  [ "$3" = PASS ] || rc=1
}
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}'; }

# --- the manifests' securityContext against docs/kubernetes.md -----------

# blocks FILE: each securityContext block of FILE, dedented, the lines of a
# block joined by "|", one block a line.
blocks() {
  awk '
    function flush() { if (b != "") print b; b = ""; ind = -1 }
    BEGIN { ind = -1 }
    {
      match($0, /^ */); n = RLENGTH
      if (ind >= 0 && (n > ind || $0 ~ /^ *$/) && $0 !~ /^ *#/) { b = b (b == "" ? "" : "|") substr($0, ind + 3); next }
      if (ind >= 0) flush()
      if ($0 ~ /^ *securityContext: *$/) ind = n
    }
    END { flush() }' "$1"
}
# docblock NAME: the yaml block of docs/kubernetes.md after <!-- kube:NAME -->.
docblock() {
  awk -v m="<!-- kube:$1 -->" '$0 == m {f = 1; next} f && /^```yaml/ {g = 1; next} g && /^```/ {exit} g' "$doc" | paste -sd'|'
}
start=$(date +%s.%N)
res=PASS
podsc=$(docblock pod-securityContext)
ctsc=$(docblock container-securityContext)
[ -n "$podsc" ] && [ -n "$ctsc" ] || { echo "docs/kubernetes.md: no kube:pod-securityContext or kube:container-securityContext block"; res=FAIL; }
for f in "$deploy"/*.yaml; do
  name=$(basename "$f")
  images=$(grep -cE '^ +image:' "$f")
  npod=0; nct=0
  while IFS= read -r b; do
    if [ "$b" = "$podsc" ]; then npod=$((npod + 1))
    elif [ "$b" = "$ctsc" ]; then nct=$((nct + 1))
    else echo "$name: a securityContext that docs/kubernetes.md does not document: $b"; res=FAIL
    fi
  done < <(blocks "$f")
  [ "$npod" = 1 ] || { echo "$name: $npod pod securityContexts, want 1"; res=FAIL; }
  [ "$nct" = "$images" ] || { echo "$name: $nct container securityContexts for $images containers"; res=FAIL; }
  # Never privileged, whatever the docs say.
  if grep -nE 'privileged: *true|allowPrivilegeEscalation: *true|add:|host(Network|PID|IPC|Users): *true|procMount|runAsUser: *0\b|Unconfined' "$f"; then
    echo "$name: the lines above ask for more than the least securityContext"; res=FAIL
  fi
done
case "$ctsc" in *'privileged: false'*'allowPrivilegeEscalation: false'*'drop: ["ALL"]'*) ;; *) echo "the documented container securityContext is not unprivileged: $ctsc"; res=FAIL ;; esac
case "$podsc" in *'runAsNonRoot: true'*'type: RuntimeDefault'*) ;; *) echo "the documented pod securityContext is not non-root with a named seccomp profile: $podsc"; res=FAIL ;; esac
for m in $modes; do result "$m" manifests "$res" "$(since "$start")"; done

# --- the image, the host's calls -------------------------------------------

echo "kube/run.sh: building the image and the client"
(cd "$root" && CGO_ENABLED=0 go build -o "$work/bin/sbx" ./cmd/sbx \
  && CGO_ENABLED=0 go build -o "$work/bin/sbx-kube-client" ./integration/kube/client)
chmod 755 "$work/bin" "$work/bin"/*
SBX_IMAGE_TAR=$work/sbx.tar "$deploy/build-image.sh" "$tag" "$work/bin/sbx-kube-client"
chmod 644 "$work/sbx.tar"

# strip LINES: the client's lines without their downgrades and namespaces
# (the host's are not the pod's: that is the point of the downgrade table).
strip() { sed 's/,"degraded":\[[^]]*\]//; s/,"namespaces":"[a-z,]*"//'; }
# degraded LINE: the line's downgrades, comma-separated ("none" when none).
degraded() { sed -n 's/.*"degraded":\[\([^]]*\)\].*/\1/p' <<<"$1" | tr -d '"' | sed 's/^$/none/'; }
# documented SHAPE MODE ABI: the namespaces and the downgrades
# docs/kubernetes.md names for them ("mount,pid,net procfs"), the downgrades in
# its order; one marked "(ABI < 9)" only when the kernel's Landlock ABI is
# below 9.
documented() {
  awk -F'|' -v s="$1" -v m="$2" -v abi="$3" '
    $0 == "<!-- kube:downgrades -->" {f = 1; next} /^<!-- \/kube:downgrades -->/ {f = 0}
    f {
      for (i = 2; i <= 5; i++) gsub(/^ +| +$|`/, "", $i)
      if ($2 != s || $3 != m) next
      gsub(/ /, "", $4); printf "%s ", $4
      n = split($5, d, / *, */); out = ""
      for (j = 1; j <= n; j++) {
        if (d[j] ~ /\(ABI < 9\)$/) { if (abi >= 9) continue; sub(/ *\(ABI < 9\)$/, "", d[j]) }
        out = out (out == "" ? "" : ",") d[j]
      }
      print (out == "" ? "none" : out)
    }' "$doc"
}

runuser -u "$ctuser" -- sh -c '
  cd "$1" && mkdir run vol && chmod 700 run
  "$2/sbx" serve --listen "$1/run/sbx.sock" --ephemeral 2>"$1/serve.log" & pid=$!
  "$2/sbx-kube-client" "$1/run/sbx.sock" "$1/vol" > "$1/host.out"; r=$?
  kill $pid; wait $pid 2>/dev/null; exit $r' sh "$hostdir" "$work/bin" \
  || { echo "kube/run.sh: the host's calls failed:"; cat "$hostdir/serve.log"; exit 1; }
echo "kube/run.sh: on the host (sbx serve as $ctuser):"
cat "$hostdir/host.out"
strip < "$hostdir/host.out" > "$work/host.want"
[ "$(grep -c '"exit_code":0,"stdout":"hello\\n","denials":\[\]' "$work/host.want")" = 1 ] && grep -q '"name":"denied","exit_code":1,"stdout":"","denials":\["create VOLUME/outside.txt"\]' "$work/host.want" \
  || { echo "kube/run.sh: the host's results are not one allowed call and one denied write"; exit 1; }

# judge MODE SHAPE OUT: the pod's lines against the host's and the docs;
# prints PASS or FAIL, and on stderr why.
judge() {
  local line want got ok=PASS
  if ! strip < "$3" | diff -u "$work/host.want" - >&2; then
    echo "$1 $2: the pod's calls differ from the host's (above: - host, + pod)" >&2; ok=FAIL
  fi
  want=$(documented "$2" "$1" "$(sed -n 's/.*"landlock_abi":\([0-9]*\).*/\1/p' "$3" | head -1)")
  [ -n "$want" ] || { echo "docs/kubernetes.md names no downgrades for $2 $1" >&2; ok=FAIL; }
  while IFS= read -r line; do
    got="$(sed -n 's/.*"namespaces":"\([a-z,]*\)".*/\1/p' <<<"$line") $(degraded "$line")"
    [ "$got" = "$want" ] || { echo "$1 $2: a call's namespaces and downgrades are '$got', docs/kubernetes.md names '$want': $line" >&2; ok=FAIL; }
  done < "$3"
  echo "$ok"
}

# --- the pods ---------------------------------------------------------------

# A cluster that forbids more: containerd's and Docker's default seccomp
# profiles let a process make namespaces only with CAP_SYS_ADMIN (clone and
# unshare with a CLONE_NEW* flag refused, clone3 ENOSYS, no mount), where
# podman's (and CRI-O's: containers-common's) allow them. This profile is
# podman's with those rules of theirs. podman 4.3's kube play ignores
# securityContext.seccompProfile (it plays RuntimeDefault whatever it says):
# the pod names it with the annotation seccomp.security.alpha.kubernetes.io/pod
# that kube play reads, relative to --seccomp-profile-root.
mkdir -p "$work/seccomp"
python3 - /usr/share/containers/seccomp.json "$work/seccomp/containerd-like.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
strict = {"clone", "clone3", "unshare", "setns", "mount", "umount", "umount2", "pivot_root"}
for r in p["syscalls"]:
    r["names"] = [n for n in r["names"] if n not in strict]
p["syscalls"] = [r for r in p["syscalls"] if r["names"]]
ns = 0x7E020000  # CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET
p["syscalls"][:0] = [
    {"names": ["clone"], "action": "SCMP_ACT_ALLOW", "args": [{"index": 0, "value": ns, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}]},
    {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38},
]
json.dump(p, open(sys.argv[2], "w"))
PY
chmod -R a+rX "$work/seccomp"

# sidecar MODE SHAPE YAML [PLAY-OPTION...]: play the sidecar pod of YAML,
# judge its runtime container's lines, remove the pod and its volumes.
sidecar() {
  local m=$1 shape=$2 yaml=$3 out=$d/$2.out ok=PASS start
  shift 3
  start=$(date +%s.%N)
  if "${P[@]}" "${play[@]}" "$@" "$yaml" >"$d/play.log" 2>&1 \
    && timeout 120 "${P[@]}" wait sbx-sidecar-runtime >/dev/null; then
    "${P[@]}" logs sbx-sidecar-runtime > "$out" 2>&1
    echo "kube/run.sh: $m $shape:"; cat "$out"
    ok=$(judge "$m" "$shape" "$out")
    # The durable log is on the pod's volume.
    "${P[@]}" exec sbx-sidecar-sbx sh -c 'ls /var/lib/sbx/s-*.log' >/dev/null 2>&1 \
      || { echo "$m $shape: no session log in /var/lib/sbx"; ok=FAIL; }
    if [ "$shape" = sidecar ]; then
      # A server killed and restarted in the same pod (its socket left in
      # the emptyDir) serves again, from the same durable log: the runtime,
      # started again, gets the same results.
      # (podman pod start: a rootless pod's infra container may have
      # stopped with it.) The runtime's log then holds both of its runs.
      if "${P[@]}" kill --signal KILL sbx-sidecar-sbx >/dev/null && "${P[@]}" pod start sbx-sidecar >/dev/null \
        && timeout 120 "${P[@]}" wait sbx-sidecar-runtime >/dev/null; then
        "${P[@]}" logs sbx-sidecar-runtime 2>&1 | tail -n +"$(($(wc -l < "$out") + 1))" > "$out.again"
        echo "kube/run.sh: $m $shape, after the server's restart:"; cat "$out.again"
        [ "$(judge "$m" "$shape" "$out.again")" = PASS ] || ok=FAIL
      else
        echo "$m $shape: the pod did not start again"; "${P[@]}" logs sbx-sidecar-sbx 2>&1 | tail -5; ok=FAIL
      fi
    fi
  else
    cat "$d/play.log"; "${P[@]}" logs sbx-sidecar-sbx 2>&1 | tail -20; ok=FAIL
  fi
  down "$m"
  result "$m" "$shape" "$ok" "$(since "$start")"
}

for m in $modes; do
  p=(podman); [ "$m" = rootless ] && p=("${rootless[@]}")
  P=("${p[@]}" "${podman_opts[@]}")
  # Rootless pods get no network: slirp4netns needs /dev/net/tun, which an
  # outer sandbox (the CI machine's) may refuse; the calls go over a unix
  # socket and sbx's calls have the network off anyway. Rootful pods keep
  # podman's bridge, as a cluster's pods have a network.
  play=(kube play); [ "$m" = rootless ] && play+=(--network none)
  d=$work/$m
  mkdir -p "$d/play"
  if [ "$m" = rootless ]; then
    chown -R "$ctuser:" "$d"
    SBX_IMAGE_FROM_TAR=$work/sbx.tar SBX_IMAGE_PODMAN="${rootless[*]} ${podman_opts[*]}" "$deploy/build-image.sh" "$tag"
  fi
  down "$m" # what an interrupted run left
  # kube play looks for a directory named as the image to build in its
  # working directory: an empty one of ours.
  cd "$d/play"

  # The sidecar, under podman's default seccomp profile and under the
  # containerd-like one.
  sidecar "$m" sidecar "$deploy/sidecar.yaml"
  sed 's|^  labels:|  annotations:\n    seccomp.security.alpha.kubernetes.io/pod: localhost/containerd-like.json\n  labels:|' \
    "$deploy/sidecar.yaml" > "$d/sidecar-strict.yaml"
  chmod 644 "$d/sidecar-strict.yaml"
  sidecar "$m" sidecar-strict "$d/sidecar-strict.yaml" --seccomp-profile-root "$work/seccomp"

  # The node's server: the DaemonSet's pod template as a Pod, its hostPaths
  # under $d/node, owned by the pods' uid 1000.
  start=$(date +%s.%N)
  node=$d/node
  mkdir -p "$node/run-sbx" "$node/state" "$node/workspaces"
  if [ "$m" = rootless ]; then
    chown -R "$ctuser:" "$node"
    (cd / && "${rootless[@]}" unshare chown -R 1000:1000 "$node/run-sbx" "$node/state" "$node/workspaces")
  else
    chown 1000:1000 "$node/run-sbx" "$node/state" "$node/workspaces"
  fi
  hostpaths="s|path: /run/sbx,|path: $node/run-sbx,|; s|path: /var/lib/sbx,|path: $node/state,|; s|path: /var/lib/sbx-workspaces,|path: $node/workspaces,|"
  awk 'BEGIN {print "apiVersion: v1"; print "kind: Pod"}
    /^  template:$/ {t = 1; next}
    t && /^    / {print substr($0, 5); next}
    t && /^  [^ ]/ {t = 0}' "$deploy/daemonset.yaml" | sed "$hostpaths" > "$d/node-pod.yaml"
  sed "$hostpaths" "$deploy/runtime-pod.yaml" > "$d/runtime-pod.yaml"
  chmod 644 "$d"/*.yaml
  out=$d/node.out
  ok=PASS
  if "${P[@]}" "${play[@]}" "$d/node-pod.yaml" >"$d/play.log" 2>&1 \
    && "${P[@]}" "${play[@]}" "$d/runtime-pod.yaml" >>"$d/play.log" 2>&1 \
    && timeout 120 "${P[@]}" wait sbx-runtime-runtime >/dev/null; then
    "${P[@]}" logs sbx-runtime-runtime > "$out" 2>&1
    echo "kube/run.sh: $m node:"; cat "$out"
    ok=$(judge "$m" node "$out")
    ls "$node/state"/s-*.log >/dev/null 2>&1 || { echo "$m node: no session log in the node's state directory"; ok=FAIL; }
  else
    cat "$d/play.log"; "${P[@]}" logs sbx-node-sbx 2>&1 | tail -20; ok=FAIL
  fi
  down "$m"
  result "$m" node "$ok" "$(since "$start")"
  cd /
done

echo "== kube summary"
printf '%s\n' "${summary[@]}"
exit $rc
