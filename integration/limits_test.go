//go:build linux

package integration

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// resources is the report's resources object.
type resources struct {
	Mechanism       string  `json:"mechanism"`
	MemoryBytes     int64   `json:"memory_bytes"`
	Pids            int     `json:"pids"`
	CPUs            float64 `json:"cpus"`
	PeakMemoryBytes int64   `json:"peak_memory_bytes"`
	PeakSource      string  `json:"peak_memory_source"`
	CPUTimeMS       int64   `json:"cpu_time_ms"`
	OOMKills        int     `json:"oom_kills"`
}

// limitMechanism is what must enforce a limit of controller ctl for this
// user here, worked out independently of sbx: root uses a v2 controller
// its cgroup2 mount offers, else a mounted v1 one; an unprivileged user
// with user namespaces gets the stage's rlimit fallback (memory and pids
// only); anything else enforces nothing and must say so.
func limitMechanism(t *testing.T, ctl string) string {
	t.Helper()
	v2, v1 := cgroupMounts(t)
	// Root with CAP_SYS_ADMIN gets the thread launch and a call cgroup;
	// root in a container's default capability set gets a stage in a user
	// namespace, as an unprivileged user does.
	if privileged() {
		if v2 != "" {
			b, _ := os.ReadFile(filepath.Join(v2, "cgroup.controllers"))
			if slices.Contains(strings.Fields(string(b)), ctl) {
				return "cgroup-v2"
			}
		}
		if v1[ctl] {
			return "cgroup-v1"
		}
		return "none"
	}
	// RLIMIT_NPROC counts per user namespace from Linux 5.14; before, it
	// would count the user's processes host-wide, and sbx does not use it.
	major, minor := kernelVersion(t)
	// The kernel exempts the host's uid 0 from RLIMIT_NPROC (root in a
	// rootful container, whose uid map is the identity).
	nproc := (major > 5 || major == 5 && minor >= 14) && !hostRootUID(t)
	if caps(t).namespaces && (ctl == "memory" || ctl == "pids" && nproc) {
		return "rlimit"
	}
	return "none"
}

// hostRootUID reports whether the test's uid is uid 0 in the user
// namespace above its own, read from /proc/self/uid_map.
func hostRootUID(t *testing.T) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		t.Fatal(err)
	}
	uid := os.Getuid()
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var in, out, n int
		if _, err := fmt.Sscan(line, &in, &out, &n); err == nil && uid >= in && uid < in+n {
			return out+uid-in == 0
		}
	}
	return false
}

func memTotal(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	var kib int64
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
			fmt.Sscanf(strings.TrimSpace(v), "%d", &kib)
		}
	}
	return kib << 10
}

// cgroupMounts returns the cgroup2 mount point and the v1 controllers
// mounted, from /proc/self/mountinfo.
func cgroupMounts(t *testing.T) (string, map[string]bool) {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v2, v1 := "", map[string]bool{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		pre, post, _ := strings.Cut(s.Text(), " - ")
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if len(fields) < 5 || len(tail) < 3 {
			continue
		}
		if slices.Contains(strings.Split(fields[5], ","), "ro") {
			// A container's cgroup mounts are read-only: sbx makes no
			// call group there.
			continue
		}
		switch tail[0] {
		case "cgroup2":
			v2 = fields[4]
		case "cgroup":
			for _, o := range strings.Split(tail[2], ",") {
				v1[o] = true
			}
		}
	}
	return v2, v1
}

// TestMemoryLimit: a 1 GiB (256 MiB on small machines) allocation under a 64 MiB limit is killed by the
// kernel's OOM killer in the call's memory cgroup (killed_by memory), or,
// with the rlimit fallback, fails to allocate; a small one succeeds.
func TestMemoryLimit(t *testing.T) {
	dd := needTool(t, "dd")
	ws := workspace(t)
	mech := limitMechanism(t, "memory")
	// 1 GiB as the issue asks, where the machine has room for the
	// allocation itself (the 1 GiB guests of the VM matrix refuse it with
	// ENOMEM before any limit is reached).
	bs := "1G"
	if memTotal(t) < 4<<30 {
		bs = "256M"
	}
	out, rep := run(t, ws, []string{"--memory", "64M"}, dd, "if=/dev/zero", "of=/dev/null", "bs="+bs, "count=1")
	if rep == nil {
		t.Fatalf("no report; exit %d stderr %s", out.code, out.stderr)
	}
	if rep.Resources.Mechanism != mech || rep.Resources.MemoryBytes != 64<<20 {
		t.Fatalf("resources %+v, want mechanism %s and memory_bytes %d", rep.Resources, mech, 64<<20)
	}
	switch mech {
	case "cgroup-v1", "cgroup-v2":
		if out.code != 137 || rep.KilledBy != "memory" || rep.Resources.OOMKills < 1 {
			t.Errorf("exit %d killed_by %q oom_kills %d, want 137, memory, >=1\nstderr: %s", out.code, rep.KilledBy, rep.Resources.OOMKills, out.stderr)
		}
		if rep.degraded("limits") != "" {
			t.Errorf("a cgroup enforced the limit, but degraded says: %s", rep.degraded("limits"))
		}
	case "rlimit":
		if out.code == 0 || rep.Signal != nil || rep.KilledBy != "" {
			t.Errorf("exit %d signal %v killed_by %q: want dd to fail its allocation by itself\nstderr: %s", out.code, rep.Signal, rep.KilledBy, out.stderr)
		}
		if !strings.Contains(rep.degraded("limits"), "RLIMIT_AS") {
			t.Errorf("the rlimit fallback must be reported degraded, got %+v", rep.Degraded)
		}
	default:
		if rep.degraded("limits") == "" {
			t.Errorf("nothing enforces the limit here, but degraded does not say so: %+v", rep.Degraded)
		}
		t.Logf("no memory cgroup and no rlimit fallback here (%+v): only the downgrade is checked", rep.Degraded)
		return
	}
	// Within the limit the same command works.
	out, rep = run(t, ws, []string{"--memory", "64M"}, dd, "if=/dev/zero", "of=/dev/null", "bs=1M", "count=16")
	if out.code != 0 || rep.KilledBy != "" {
		t.Errorf("16 MiB under a 64 MiB limit: exit %d killed_by %q\nstderr: %s", out.code, rep.KilledBy, out.stderr)
	}
	if rep.Resources.PeakMemoryBytes <= 0 || rep.Resources.PeakMemoryBytes > 64<<20 {
		t.Errorf("peak_memory_bytes %d, want in (0, 64 MiB]", rep.Resources.PeakMemoryBytes)
	}
}

// TestPidsLimit: under --pids the shell cannot start more processes than
// allowed, a fork bomb is contained (its forks fail at the limit), and a
// few processes within the limit work.
func TestPidsLimit(t *testing.T) {
	ws := workspace(t)
	mech := limitMechanism(t, "pids")
	if mech == "none" {
		_, rep := run(t, ws, []string{"--pids", "16"}, "true")
		if rep.degraded("limits") == "" {
			t.Errorf("nothing enforces --pids here, but degraded does not say so: %+v", rep.Degraded)
		}
		if rep.Resources.Mechanism != "none" {
			// Root in a rootful container: an RLIMIT_NPROC the kernel
			// does not apply to the host's uid 0 is no mechanism.
			t.Errorf("nothing enforces --pids here, but the report says mechanism %q: %+v", rep.Resources.Mechanism, rep.Degraded)
		}
		out, _ := run(t, ws, []string{"--pids", "16", "--require", "limits"}, "true")
		if out.code != 125 {
			t.Errorf("--require limits with nothing to enforce them: exit %d, want 125", out.code)
		}
		t.Log("no pids cgroup and no rlimit fallback here: only the downgrade is checked (no fork bomb without a limit)")
		return
	}
	out, rep := run(t, ws, []string{"--pids", "16"}, "sh", "-c", "i=0; while [ $i -lt 64 ]; do sleep 30 & i=$((i+1)); done; echo all started")
	if out.code == 0 || strings.Contains(out.stdout, "all started") || !strings.Contains(strings.ToLower(out.stderr), "fork") {
		t.Errorf("64 background processes under --pids 16: exit %d stdout %q stderr %q, want a fork failure", out.code, out.stdout, out.stderr)
	}
	if rep.Resources.Mechanism != mech || rep.Resources.Pids != 16 {
		t.Errorf("resources %+v, want mechanism %s pids 16", rep.Resources, mech)
	}
	out, _ = run(t, ws, []string{"--pids", "16"}, "sh", "-c", "for i in 1 2 3 4; do sleep 0.1 & done; wait; echo ok")
	if out.code != 0 || out.stdout != "ok\n" {
		t.Errorf("4 processes under --pids 16: exit %d stdout %q stderr %q", out.code, out.stdout, out.stderr)
	}
	start := time.Now()
	// Every process waits for its two children, so the tree grows until
	// its forks fail at the limit; then it collapses (a shell whose fork
	// fails exits) or the timeout ends it.
	out, rep = run(t, ws, []string{"--pids", "32", "--timeout", "2s"}, "sh", "-c", "f() { f | f; }; f")
	if rep == nil || out.code == 0 || !strings.Contains(strings.ToLower(out.stderr), "fork") {
		t.Errorf("fork bomb: exit %d stderr %.300q: want fork failures", out.code, out.stderr)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("fork bomb under --pids 32 took %v to end", d)
	}
}

// TestCPULimit: a busy loop under --cpus 0.2 for 1.5 s of wall time gets
// about 0.3 s of CPU; unlimited it would get 1.5 s.
func TestCPULimit(t *testing.T) {
	ws := workspace(t)
	mech := limitMechanism(t, "cpu")
	out, rep := run(t, ws, []string{"--cpus", "0.2", "--timeout", "1500ms"}, "sh", "-c", "while :; do :; done")
	if rep.Resources.Mechanism != mech {
		t.Fatalf("resources %+v, want mechanism %s", rep.Resources, mech)
	}
	if mech == "none" {
		if rep.degraded("limits") == "" {
			t.Errorf("nothing enforces --cpus here, but degraded does not say so: %+v", rep.Degraded)
		}
		return
	}
	if !rep.TimedOut {
		t.Fatalf("the loop ended by itself: exit %d stderr %s", out.code, out.stderr)
	}
	if rep.Resources.CPUTimeMS <= 0 || rep.Resources.CPUTimeMS > 800 {
		t.Errorf("cpu_time_ms %d under --cpus 0.2 for 1.5 s, want (0, 800]", rep.Resources.CPUTimeMS)
	}
}

// TestLimitsRequire: --require limits runs where every asked limit is
// enforced by a cgroup and refuses (125) where one is not.
func TestLimitsRequire(t *testing.T) {
	ws := workspace(t)
	enforced := strings.HasPrefix(limitMechanism(t, "memory"), "cgroup") && strings.HasPrefix(limitMechanism(t, "pids"), "cgroup")
	out, _ := run(t, ws, []string{"--memory", "256M", "--pids", "64", "--require", "limits"}, "true")
	if enforced && out.code != 0 || !enforced && out.code != 125 {
		t.Errorf("--require limits: exit %d (cgroups enforce: %t)\nstderr: %s", out.code, enforced, out.stderr)
	}
}

func TestLimitsBadInput(t *testing.T) {
	ws := workspace(t)
	marker := filepath.Join(ws, "marker")
	for _, c := range []struct {
		args  []string
		field string
	}{
		{[]string{"--memory", "12Q"}, "-memory"},
		{[]string{"--memory", "100"}, "--memory"},
		{[]string{"--pids", "-1"}, "pids"},
		{[]string{"--cpus", "-0.5"}, "cpus"},
		{[]string{"--timeout", "-1s"}, "--timeout"},
	} {
		out, _ := run(t, ws, append([]string{"--mode", "workspace-write"}, c.args...), "touch", marker)
		if out.code != 125 || !strings.Contains(out.stderr, c.field) {
			t.Errorf("%q: exit %d stderr %q, want 125 naming %s", c.args, out.code, out.stderr, c.field)
		}
		oneLine(t, strings.Join(c.args, " "), out.stderr)
	}
	for _, c := range []struct{ limits, field string }{
		{`{"memory_bytes": -5}`, "memory_bytes"},
		{`{"memroy_bytes": 5}`, "limits.memroy_bytes"},
		{`{"pids": "many"}`, "limits.pids"},
	} {
		out, _ := execJSON(t, ws, `{"command": ["touch", `+jsonString(marker)+`], "cwd": `+jsonString(ws)+`, "sandbox_mode": "workspace-write", "limits": `+c.limits+`}`)
		if out.code != 125 || !strings.Contains(out.stderr, c.field) {
			t.Errorf("limits %s: exit %d stderr %q, want 125 naming %s", c.limits, out.code, out.stderr, c.field)
		}
	}
	wantAbsent(marker)(t)
}

// TestTimeoutKillsTree: when the timeout ends a call, processes the command
// moved out of its process group (setsid) and double-forked away are gone
// too, checked from outside, in every mode.
func TestTimeoutKillsTree(t *testing.T) {
	c := caps(t)
	for i, mode := range [][]string{wsWrite, danger} {
		t.Run(modeName(mode), func(t *testing.T) {
			arg := strconv.Itoa(400000 + os.Getpid()%10000*10 + i)
			ws := workspace(t)
			started := filepath.Join(ws, "started")
			// The escapee's stdio is not sbx's: where it survives (no PID
			// namespace, no cgroup) it must not hold the test's pipes open.
			script := "setsid sh -c 'sleep " + arg + " </dev/null >/dev/null 2>&1 & echo $! > started' </dev/null >/dev/null 2>&1; sleep 30"
			out, rep := run(t, ws, append([]string{"--timeout", "1s"}, mode...), "sh", "-c", script)
			if !rep.TimedOut || rep.KilledBy != "timeout" || out.code != 137 {
				t.Fatalf("timed_out %t killed_by %q exit %d, want true, timeout, 137", rep.TimedOut, rep.KilledBy, out.code)
			}
			if _, err := os.Stat(started); err != nil {
				t.Fatalf("the escapee never started: %v\nstderr: %s", err, out.stderr)
			}
			pid := 0
			entries, _ := os.ReadDir("/proc")
			for _, e := range entries {
				if n, err := strconv.Atoi(e.Name()); err == nil && aliveAs(n, "sleep", arg) {
					pid = n
				}
			}
			// What can end an escapee: a PID namespace (sandboxed modes with
			// namespaces), or a call cgroup (cgroup.kill), which sbx makes
			// where it can write the cgroup2 mount (root, not in a
			// container's read-only cgroup mount).
			v2, _ := cgroupMounts(t)
			callGroup := v2 != "" && unix.Access(v2, unix.W_OK) == nil
			canKill := callGroup || c.namespaces && modeName(mode) != modeName(danger)
			if pid != 0 {
				syscall.Kill(pid, syscall.SIGKILL)
				if canKill {
					t.Errorf("the setsid, double-forked sleep %d survived the timeout: %s", pid, procInfo(pid))
				} else {
					t.Logf("no PID namespace and no cgroup for this user: the escapee survives, as documented")
				}
			}
		})
	}
}

// TestStopGrace: SIGTERM to sbx is relayed; a command that ignores it is
// killed after the grace period, and the report says killed_by signal.
func TestStopGrace(t *testing.T) {
	ws := workspace(t)
	rp := filepath.Join(t.TempDir(), "report.json")
	cmd, line := startSbx(t, ws, []string{"--report", rp}, "trap '' TERM; echo ready; sleep 30")
	if line != "ready" {
		t.Fatalf("got %q", line)
	}
	start := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	if code := waitExit(t, cmd); code != 137 {
		t.Errorf("exit %d, want 137 (SIGKILL after the grace period)", code)
	}
	if d := time.Since(start); d < time.Second {
		t.Errorf("killed after %v: the command got no grace period", d)
	}
	if rep := readReport(t, rp); rep == nil || rep.KilledBy != "signal" {
		t.Errorf("report %+v, want killed_by signal", rep)
	}
}

// TestParentDeath: when the process that started sbx ends, sbx ends the
// command and reports killed_by parent-death.
func TestParentDeath(t *testing.T) {
	ws := workspace(t)
	rp := filepath.Join(t.TempDir(), "report.json")
	parent := exec.Command("sh", "-c", `"$0" run --cwd "$1" --report "$2" -- sleep 30 & sleep 0.5`, sbxBin, ws, rp)
	parent.Env = baseEnv()
	if err := parent.Run(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(rp); err == nil && len(b) > 0 && strings.HasSuffix(string(b), "}\n") {
			rep := decodeReport(t, b)
			if rep.KilledBy != "parent-death" {
				t.Errorf("killed_by %q, want parent-death", rep.KilledBy)
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("sbx did not end the command within 10 s of its parent's death")
}
