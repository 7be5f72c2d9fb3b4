//go:build linux

package integration

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServeUserNSFastPath: an unprivileged sbx serve makes one user
// namespace at start-up and launches every call from a launcher thread
// inside it, as root's server does: the report says thread, no stage runs,
// the command holds no capability, and each call has network, PID, mount,
// UTS and IPC namespaces of its own, inside the one user namespace that
// all the server's calls share. Killing the inner server with SIGKILL ends
// the calls and the outer sbx.
func TestServeUserNSFastPath(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("SKIP: root's sbx serve launches from the launcher thread without a user namespace (test.sh runs it as the unprivileged user)")
	}
	if runtime.GOARCH != "amd64" {
		t.Skip("SKIP: the fast path needs the thread launch's PID namespace init, x86-64 code")
	}
	Require(t, "userns")
	Require(t, "private-procfs")
	s := startServer(t)
	init := s.ok("initialize", nil)
	sun, _ := init["capabilities"].(map[string]any)["server_user_namespace"].(map[string]any)
	if sun["available"] != true {
		t.Fatalf("initialize: server_user_namespace %v", sun)
	}
	ws := workspace(t)
	turn := s.session("s", ws, map[string]any{"preset": "auto"})
	ns := "for n in user net pid mnt uts ipc; do readlink /proc/self/ns/$n; done"
	// The two calls overlap (c1 waits for c2's file): a namespace's inode
	// number is reused once it is gone.
	info := "grep ^Cap /proc/self/status; " + ns
	c1 := s.start("exec", execParams("s", turn, "c1", ws, "sh", "-c", info+"; touch c1-runs; while [ ! -e c2-ran ]; do sleep 0.01; done"))
	waitForPath(t, filepath.Join(ws, "c1-runs"))
	r2 := s.ok("exec", execParams("s", turn, "c2", ws, "sh", "-c", info+"; touch c2-ran"))
	r1 := s.get(c1)["result"].(map[string]any)
	for _, r := range []map[string]any{r1, r2} {
		if r["exit_code"] != 0.0 {
			t.Fatalf("call: %v", r)
		}
	}
	out1, out2 := strings.Fields(r1["stdout"].(string)), strings.Fields(r2["stdout"].(string))
	enf := r1["enforcement"].(map[string]any)
	if enf["launch"] != "thread" || enf["user_namespace"] != true || enf["pid_namespace"] != true || enf["network_namespace"] != true {
		t.Errorf("enforcement: %v", enf)
	}
	// The kernel's own gaps (an older Landlock ABI) are reported as by
	// sbx run; none may be of the namespaces the fast path gives.
	for _, d := range r1["degraded"].([]any) {
		if f := d.(map[string]any)["feature"]; f == "pidns" || f == "netns" || f == "mountns" || f == "mask" || f == "procfs" {
			t.Errorf("degraded: %v", d)
		}
	}
	// CapInh, CapPrm, CapEff, CapBnd, CapAmb: name and value each.
	if len(out1) != 16 || len(out2) != 16 {
		t.Fatalf("output: %q / %q", out1, out2)
	}
	for i := 0; i < 10; i += 2 {
		if out1[i+1] != "0000000000000000" {
			t.Errorf("the command holds capabilities: %s %s", out1[i], out1[i+1])
		}
	}
	self := map[string]string{}
	for _, n := range []string{"user", "net", "pid", "mnt", "uts", "ipc"} {
		self[n], _ = os.Readlink("/proc/self/ns/" + n)
	}
	for i, n := range []string{"user", "net", "pid", "mnt", "uts", "ipc"} {
		a, b := out1[10+i], out2[10+i]
		if a == self[n] {
			t.Errorf("%s namespace is the test's own: %s", n, a)
		}
		if n == "user" {
			if a != b {
				t.Errorf("the calls are in different user namespaces (a stage per call?): %s %s", a, b)
			}
			continue
		}
		if a == b {
			t.Errorf("two calls share the %s namespace %s", n, a)
		}
	}
	// No stage: the inner server's only children while a call runs are
	// the call's init and command, none of them an sbx __stage.
	inner := childrenOf(t, s.cmd.Process.Pid)
	if len(inner) != 1 {
		t.Fatalf("outer sbx serve has children %v, want the inner server", inner)
	}
	marker := fmt.Sprintf("%d.%d", 6000+os.Getpid()%1000, time.Now().UnixNano()%1000)
	p := execParams("s", turn, "c3", ws, "sh", "-c", "sleep "+marker+" & echo started; wait")
	p["stream"] = true
	s.start("exec", p)
	<-s.notes
	for _, c := range childrenOf(t, inner[0]) {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", c))
		if strings.Contains(string(cmdline), "__stage") {
			t.Errorf("a stage runs: %q", cmdline)
		}
	}
	// A danger-full-access call is launched by the outer sbx serve, in the
	// user's own namespace, as sbx run launches it: root's files are
	// root's, setuid-root programs work. exec/cancel still kills it.
	fturn := s.session("f", ws, map[string]any{"preset": "full-access"})
	fres := s.ok("exec", execParams("f", fturn, "f1", ws, "sh", "-c", "stat -c %u /; readlink /proc/self/ns/user; grep ^CapEff /proc/self/status"))
	if got, want := fres["stdout"], "0\n"+self["user"]+"\nCapEff:\t0000000000000000\n"; got != want || fres["enforcement"].(map[string]any)["user_namespace"] != false {
		t.Errorf("danger-full-access call: stdout %q, want %q; enforcement %v", got, want, fres["enforcement"])
	}
	fmarker := fmt.Sprintf("%d.%d", 7000+os.Getpid()%1000, time.Now().UnixNano()%1000)
	pending := s.start("exec", execParams("f", fturn, "f2", ws, "sleep", fmarker))
	for deadline := time.Now().Add(10 * time.Second); len(pidsOf("sleep", fmarker)) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the danger-full-access sleep does not run")
		}
	}
	s.ok("exec/cancel", map[string]any{"call_id": "f2"})
	if m := s.get(pending); m["result"] == nil || m["result"].(map[string]any)["aborted"] != true {
		t.Errorf("cancelled danger-full-access call: %v", m)
	}
	if pids := pidsOf("sleep", fmarker); len(pids) > 0 {
		t.Errorf("the cancelled danger-full-access call still runs: %v", pids)
	}
	// The inner server killed: its calls die, the ones the outer launched
	// too, and the outer exits.
	p = execParams("f", fturn, "f3", ws, "sh", "-c", "sleep "+fmarker+" & echo started; wait")
	p["stream"] = true
	s.start("exec", p)
	<-s.notes
	syscall.Kill(inner[0], syscall.SIGKILL)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the outer sbx serve outlived the inner one")
	}
	if code := s.exitCode(); code != 128+9 {
		t.Errorf("outer sbx serve exit status %d, want 137", code)
	}
	for _, m := range []string{marker, fmarker} {
		for deadline := time.Now().Add(5 * time.Second); len(pidsOf("sleep", m)) > 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("a call outlived the SIGKILLed inner server: %v", pidsOf("sleep", m))
			}
		}
	}
}

// childrenOf lists pid's children.
func childrenOf(t *testing.T, pid int) []int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		n, _ := strconv.Atoi(f)
		out = append(out, n)
	}
	return out
}

// TestServeUserNSPeerRoot: an unprivileged sbx serve --listen serves from
// its user namespace, where root's uid is not mapped: SO_PEERCRED gives
// root as the overflow uid, and root is refused (docs/serve.md), while the
// server's own uid is served.
func TestServeUserNSPeerRoot(t *testing.T) {
	if !isRoot() {
		t.Skip("SKIP: needs root, to start the server as another uid and connect as root")
	}
	u, err := user.Lookup("sbxtest")
	if err != nil {
		t.Skip("SKIP: no user sbxtest to run the unprivileged server as")
	}
	Require(t, "userns")
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	dir, err := os.MkdirTemp("", "sbx-serve-peer-userns-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	os.Chown(dir, uid, gid)
	sock := filepath.Join(dir, "sbx.sock")
	cmd := exec.Command(sbxBin, "serve", "--listen", sock, "--state-dir", filepath.Join(dir, "state"))
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
	waitForPath(t, sock)
	as := peerClientAs(t, dir, sock)
	got := as(uid, gid)
	if !strings.HasPrefix(got, "answered:") || !strings.Contains(got, `"server_user_namespace":{"available":true`) {
		t.Fatalf("the server's own uid: %s (stderr %s)", got, stderr.String())
	}
	if got := as(0, 0); !strings.HasPrefix(got, "answered:") || !strings.Contains(got, `"code":-32004`) || strings.Contains(got, `"result"`) {
		t.Errorf("root was served by the unprivileged server: %s", got)
	}
	time.Sleep(100 * time.Millisecond)
	if !strings.Contains(stderr.String(), "refused a connection: uid 65534") || !strings.Contains(stderr.String(), "overflow uid") {
		t.Errorf("the refusal was not logged as root's overflow uid: %q", stderr.String())
	}
}

// TestServeUserNSFallback: where no user namespace can be made (sbx serve
// inside sbx run, whose seccomp filter and Landlock domain refuse one), an
// unprivileged server says why in initialize and serves as before: each
// call falls back as sbx run's does, its lost layers reported.
func TestServeUserNSFallback(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("SKIP: root's sbx serve makes no user namespace (test.sh runs it as the unprivileged user)")
	}
	// Without user namespaces at all the server never tries one: there
	// is no failed attempt to fall back from (TestServeUserNSFastPath
	// skips the same way).
	Require(t, "userns")
	ws := workspace(t)
	s := startServerCmd(t, exec.Command(sbxBin, "run", "--mode", "workspace-write", "--network", "--cwd", ws, "--", sbxBin, "serve", "--ephemeral"))
	init := s.ok("initialize", nil)
	sun, _ := init["capabilities"].(map[string]any)["server_user_namespace"].(map[string]any)
	if sun["available"] != false || sun["detail"] == "" {
		t.Errorf("initialize: server_user_namespace %v", sun)
	}
	turn := s.session("s", ws, map[string]any{"preset": "auto"})
	res := s.ok("exec", execParams("s", turn, "c1", ws, "true"))
	enf := res["enforcement"].(map[string]any)
	if res["exit_code"] != 0.0 || enf["user_namespace"] != false {
		t.Errorf("call: %v", res)
	}
	var features []string
	for _, d := range res["degraded"].([]any) {
		features = append(features, d.(map[string]any)["feature"].(string))
	}
	if !slices.Contains(features, "pidns") || !slices.Contains(features, "netns") {
		t.Errorf("the call's lost namespaces are not reported: %v", features)
	}
	if !strings.Contains(s.stderr.String(), "sbx serve: user namespace:") {
		t.Errorf("the server did not say why it has no user namespace: %q", s.stderr.String())
	}
}
