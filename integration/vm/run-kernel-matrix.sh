#!/bin/bash
# run-kernel-matrix.sh - (adapted for sbx from the shared VM tools) boot each given kernel in QEMU with a tiny busybox
# initramfs that runs every executable in TESTDIR (as children of /init),
# stream the serial console, and report PASS/FAIL per kernel by exit status.
#
# usage: run-kernel-matrix.sh [options] TESTDIR KERNEL...
#   KERNEL   a bzImage/vmlinuz file, a directory holding "vmlinuz" (as made by
#            fetch-kernels.sh), or a Debian linux-image-*/linux-binary-* .deb
#            (its vmlinuz is extracted to the temp dir; nothing is installed)
#   -a ACCEL auto|kvm|tcg (default auto: kvm only if /dev/kvm is usable AND the
#            CPU has vmx/svm, otherwise tcg - e.g. nested-PVM hosts lack both)
#   -m MB    guest memory (default 1024)      -s N  guest vCPUs (default 2)
#   -t SEC   per-kernel wall-clock timeout (default 600)
#   -b SEC   boot watchdog: retry (up to twice) if /init has not started after SEC (default 120)
#   -c ARGS  extra kernel cmdline, e.g. -c "lsm=landlock,lockdown,yama,apparmor"
#   -A ARGS  extra args for every test binary (*.test binaries also get -test.v)
#   -u       run the binaries as uid/gid 65534 (nobody) instead of root
#   -p CMD   shell command the guest runs as root before the binaries, e.g.
#            -p 'echo 0 > /proc/sys/user/max_user_namespaces' (no user namespaces)
#   -Q ARGS  extra qemu arguments (word-split), e.g. -Q "-cpu kvm64"
#   -l DIR   keep per-kernel console logs in DIR   -k  keep the temp work dir
# Needs: qemu-system-x86 busybox-static cpio (Debian packages). Exit status:
# 0 if every kernel booted and all binaries exited 0, else 1.
set -euo pipefail

ACCEL=auto MEM=1024 SMP=2 TIMEOUT=600 BOOT_TIMEOUT=120 CMDLINE_EXTRA="" TEST_ARGS="" QEMU_EXTRA="" LOGDIR="" KEEP=0 RUNAS="" PRE=""
while getopts "a:m:s:t:b:c:A:Q:l:p:ukh" o; do
  case $o in
    a) ACCEL=$OPTARG ;; m) MEM=$OPTARG ;; s) SMP=$OPTARG ;; t) TIMEOUT=$OPTARG ;; b) BOOT_TIMEOUT=$OPTARG ;;
    c) CMDLINE_EXTRA=$OPTARG ;; A) TEST_ARGS=$OPTARG ;; Q) QEMU_EXTRA=$OPTARG ;;
    l) LOGDIR=$OPTARG ;; k) KEEP=1 ;; u) RUNAS=nobody ;; p) PRE=$OPTARG ;; *) sed -n '2,26s/^# \{0,1\}//p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -ge 2 ] || { sed -n '2,26s/^# \{0,1\}//p' "$0"; exit 2; }
TESTDIR=$(realpath "$1"); shift
BUSYBOX=/bin/busybox   # from busybox-static; must be a static binary
for c in qemu-system-x86_64 cpio dpkg-deb file; do command -v $c >/dev/null || { echo "missing $c" >&2; exit 2; }; done
file -L "$BUSYBOX" 2>/dev/null | grep -q 'statically linked' || { echo "$BUSYBOX not static (apt-get install busybox-static)" >&2; exit 2; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/kmatrix.XXXXXX")
QPID="" TPID="" WPID=""
cleanup() { kill $QPID $TPID $WPID 2>/dev/null || true; [ $KEEP = 1 ] && echo "kept $WORK" || rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- accelerator choice -------------------------------------------------------
if [ "$ACCEL" = auto ]; then ACCEL=tcg
  [ -r /dev/kvm ] && [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo && ACCEL=kvm; fi
case $ACCEL in
  kvm) QACCEL=(-accel kvm -cpu host) ;;
  tcg) QACCEL=(-accel "tcg,thread=multi" -cpu max) ;;
  *) echo "bad -a $ACCEL" >&2; exit 2 ;;
esac

# --- build the initramfs (shared by all kernels) ------------------------------
R=$WORK/root
mkdir -p "$R"/{bin,etc,proc,sys,dev,tmp,root,run,tests,home/nobody}
mkdir -p "$R/var/tmp"; chmod 1777 "$R/var/tmp"   # as on a real system: every user may create there
printf 'root:x:0:0::/root:/bin/sh\nnobody:x:65534:65534::/home/nobody:/bin/sh\n' > "$R/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$R/etc/group"
cp "$BUSYBOX" "$R/bin/busybox"
cp -a "$TESTDIR"/. "$R/tests/"
N=0
for f in "$TESTDIR"/*; do   # the guest has no libc: warn about dynamic binaries
  [ -f "$f" ] && [ -x "$f" ] && N=$((N + 1)) || continue
  file -L "$f" | grep -q 'dynamically linked' && echo "WARNING: $f is dynamic (use CGO_ENABLED=0)" >&2
done
[ $N -gt 0 ] || { echo "no executable files in $TESTDIR" >&2; exit 2; }
cat > "$R/init" <<EOF
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin HOME=/root TMPDIR=/tmp
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
mkdir -p /dev/pts; mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts /dev/pts; ln -sf pts/ptmx /dev/ptmx 2>/dev/null
mount -t tmpfs -o mode=1777 tmp /tmp; mount -t securityfs sec /sys/kernel/security 2>/dev/null
mount -t cgroup2 cg /sys/fs/cgroup 2>/dev/null; ip link set lo up
echo "@@VMM BOOTED \$(uname -r) uptime=\$(cut -d' ' -f1 /proc/uptime)"
$PRE
cd /tests
for t in /tests/*; do
  [ -f "\$t" ] && [ -x "\$t" ] || continue
  n=\${t##*/}; a=""; case \$n in *.test) a="-test.v" ;; esac
  echo "@@VMM START \$n"
  if [ -n "$RUNAS" ]; then su -s /bin/sh $RUNAS -c "exec \$t \$a $TEST_ARGS" </dev/null 2>&1
  else "\$t" \$a $TEST_ARGS </dev/null 2>&1; fi   # child of init; output -> ttyS0
  echo "@@VMM RESULT \$n \$?"
done
echo "@@VMM DONE uptime=\$(cut -d' ' -f1 /proc/uptime)"
poweroff -f
EOF
chmod 755 "$R/init"
# Everything is root-owned except nobody's home, which is outside every
# writable root the tests use.
(cd "$R" && find . | grep -v '^./home/nobody$' | cpio -o -H newc -R 0:0 --quiet
 echo ./home/nobody | cpio -o -H newc -R 65534:65534 --quiet) > "$WORK/initrd.cpio"
echo "initramfs: $(du -h "$WORK/initrd.cpio" | cut -f1), accel=$ACCEL, smp=$SMP, mem=${MEM}M, user=${RUNAS:-root}"

# --- resolve a KERNEL argument to "label vmlinuz-path" ------------------------
resolve() {
  local k=$1 d
  [ -d "$k" ] && k=$k/vmlinuz
  if [[ $k == *.deb ]]; then
    d=$WORK/k/$(basename "$k" .deb); mkdir -p "$d"
    dpkg-deb --fsys-tarfile "$k" | tar -x -C "$d" --wildcards '*vmlinuz*' 2>/dev/null || true
    local v; v=$(find "$d" -type f -name 'vmlinuz*' | head -1)
    [ -n "$v" ] || { echo "no vmlinuz in $k (for 7.x debs pass linux-binary-*.deb)" >&2; return 1; }
    echo "$(dpkg-deb -f "$k" Package | sed -E 's/^linux-(image|binary)-//') $v"
  elif [ "$(basename "$k")" = vmlinuz ]; then echo "$(basename "$(dirname "$(realpath "$k")")") $k"
  else echo "$(basename "$k" | sed 's/^vmlinuz-//') $k"; fi
}

# --- what failed in one kernel's log: each failing pass's failed tests, each
# with its own log lines (from its "=== RUN", "=== CONT" or "=== NAME" to the
# next), panics and result lines, at most 60 lines, for the end of the output
# (a CI log's tail may be all its reader gets; the whole pass is above). The
# passing tests' t.Logf lines are left out: they are most of a -v log. -------
failures() {
  awk -v label="$1" '
    function keep(line) { if (n < 60) { buf = buf "[" label "] " line "\n"; n++ } }
    { sub(/\r$/, "") }
    /@@PASS START/ { buf = ""; n = 0; cur = ""; delete logs; next }
    /@@PASS RESULT/ {
      if ($4 != 0) { printf "[%s] %s\n%s", label, $0, buf }
      next
    }
    /^=== (RUN|CONT|NAME) / { cur = $3; if ($2 == "RUN") logs[cur] = ""; next }
    /^ *--- FAIL: / {
      name = $0; sub(/^ *--- FAIL: /, "", name); sub(/ .*/, "", name)
      keep($0)
      k = split(logs[name], l, "\n")
      for (i = 1; i < k; i++) keep(l[i])
      delete logs[name]
      next
    }
    /panic:|^FAIL|@@VMM RESULT [^ ]+ [1-9]/ && !/SKIP/ { keep($0); next }
    /^    / && cur != "" && length(logs[cur]) < 4000 { logs[cur] = logs[cur] $0 "\n" }
  ' "$2"
}

# --- boot one kernel once: sets QRC (qemu/timeout status) and WALL ------------
boot_once() {
  : > "$LOG"; local start=$EPOCHREALTIME
  # Serial console goes to $LOG; tail streams it live and exits with QEMU.
  # -no-reboot + panic=-1: a guest panic (e.g. init died) ends QEMU at once.
  timeout -k 5 "$TIMEOUT" qemu-system-x86_64 "${QACCEL[@]}" -machine q35 -smp "$SMP" -m "$MEM" \
    -nodefaults -no-reboot -display none -monitor none -serial file:"$LOG" \
    -kernel "$VML" -initrd "$WORK/initrd.cpio" $QEMU_EXTRA \
    -append "console=ttyS0 panic=-1 quiet loglevel=3 rdinit=/init $CMDLINE_EXTRA" \
    </dev/null >"$WORK/qemu.err" 2>&1 &
  QPID=$!
  tail -n +1 -f --pid=$QPID "$LOG" | sed -u "s/\r\$//; s/^/[$LABEL] /" &
  TPID=$!   # background + wait, so a SIGTERM/SIGINT trap fires at once
  # boot watchdog: stop QEMU if /init has not started within BOOT_TIMEOUT s
  ( for _ in $(seq "$BOOT_TIMEOUT"); do sleep 1; grep -aq '@@VMM BOOTED' "$LOG" && exit
      kill -0 $QPID 2>/dev/null || exit; done; echo "[$LABEL] no /init after ${BOOT_TIMEOUT}s"; kill $QPID ) &
  WPID=$!
  QRC=0; wait $QPID || QRC=$?; wait $TPID $WPID || true; QPID="" TPID="" WPID=""
  WALL=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.1f", b - a}')
  [ -s "$WORK/qemu.err" ] && sed "s/^/[$LABEL] qemu: /" "$WORK/qemu.err"
  sed -i 's/\r$//' "$LOG"
}

# --- boot each kernel (two retries if it never reached /init, or if the
# guest kernel itself oopsed: TCG has been seen to leave a stray int3 in
# kernel text it was patching, which no test can cause (sid's 7.2.13 did it
# at boot, 2026-12-07); the failed try's log is kept next to the retry's and
# the summary says which try it took) ---------------------------------------
SUMMARY=() DETAIL=() RC=0
for K in "$@"; do
  read -r LABEL VML < <(resolve "$K") || { SUMMARY+=("$K ERROR cannot-resolve"); RC=1; continue; }
  LOG=$WORK/$LABEL.log
  FIRST="" RETRIED=0
  for ATTEMPT in 1 2; do
    for TRY in 1 2 3; do
      echo "===== $LABEL ($ACCEL, try $TRY) ====="
      boot_once
      if ! grep -aq '@@VMM BOOTED' "$LOG"; then continue; fi
      if [ "$TRY" != 3 ] && ! grep -aq '@@VMM DONE' "$LOG" && grep -aqE 'Kernel panic|Oops: ' "$LOG"; then
        echo "===== $LABEL: the guest kernel oopsed before the run ended (see the log above); booting it again ====="
        [ -n "$LOGDIR" ] && mkdir -p "$LOGDIR" && cp "$LOG" "$LOGDIR/$LABEL.try$TRY.log"
        continue
      fi
      break
    done
    M=$WORK/markers; grep -ao '@@VMM [A-Z]* .*' "$LOG" > "$M" || true  # markers may follow unterminated output
    BOOT=$(sed -n 's/^@@VMM BOOTED .* uptime=//p' "$M" | head -1)
    RES=$(awk '/^@@VMM RESULT/ {printf "%s=%s ", $3, $4}' "$M")
    if [ -z "$BOOT" ]; then ST=NOBOOT                  # QEMU error or hang before /init
    elif ! grep -q '^@@VMM DONE' "$M"; then ST=ERROR   # guest died or timed out mid-run
      [ "$QRC" = 124 ] && ST=TIMEOUT
    elif awk '/^@@VMM RESULT/ && $4 != 0 {f=1} END {exit !f}' "$M"; then ST=FAIL
    else ST=PASS; fi
    # A test that failed (not the boot, not the guest) runs once more, all
    # passes of the kernel: one that passes then is a flake, FLAKY in the
    # summary with what failed, and does not fail the matrix; two failures
    # do. (SBX_VM_RETRY_FAILED=0: no second run.)
    if [ "$ST" = FAIL ] && [ "$ATTEMPT" = 1 ] && [ "${SBX_VM_RETRY_FAILED:-1}" = 1 ]; then
      FIRST=$(failures "$LABEL" "$LOG") RETRIED=1
      [ -n "$FIRST" ] || FIRST="[$LABEL] (no failure lines found: the first run's whole log is above)"
      [ -n "$LOGDIR" ] && mkdir -p "$LOGDIR" && cp "$LOG" "$LOGDIR/$LABEL.failed.log"
      echo "===== $LABEL: tests failed (see above); running the kernel once more to tell a flake from a failure ====="
      continue
    fi
    break
  done
  [ "$ST" = PASS ] || RC=1
  if [ "$ST" = PASS ] && [ "$RETRIED" = 1 ]; then
    ST=FLAKY
    DETAIL+=("[$LABEL] FLAKY: failed on the first run, passed on the second; the first run's failures:"$'\n'"$FIRST")
  fi
  SUMMARY+=("$(printf '%-26s %-7s %s try=%s boot=%ss wall=%ss %s' "$LABEL" "$ST" "$ACCEL" "$TRY" "${BOOT:-?}" "$WALL" "$RES")")
  case $ST in PASS | FLAKY) ;; *) DETAIL+=("$(failures "$LABEL" "$LOG")") ;; esac
  [ -n "$LOGDIR" ] && mkdir -p "$LOGDIR" && cp "$LOG" "$LOGDIR/"
done

echo; echo "===== summary (boot = guest uptime when /init started) ====="
printf '%s\n' "${SUMMARY[@]}"
if [ ${#DETAIL[@]} -gt 0 ]; then
  echo; echo "===== what failed (each failing pass's failures, flakes included; its whole log is above) ====="
  printf '%s\n' "${DETAIL[@]}"
fi
exit $RC
