//go:build linux

package integration

import (
	"bufio"
	"errors"
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

// TestExitStatus: the command's own status passes through, a signal N
// becomes 128+N, a missing command 127 and a non-executable one 126.
func TestExitStatus(t *testing.T) {
	ws := workspace(t)
	writeFile(t, filepath.Join(ws, "not-executable"), "#!/bin/sh\necho should not run\n")
	cases := []struct {
		name   string
		mode   []string
		cmd    []string
		code   int
		signal int // 0: want "signal": null
	}{
		{"exit-7", readOnly, []string{"sh", "-c", "exit 7"}, 7, 0},
		{"exit-0", wsWrite, []string{"true"}, 0, 0},
		{"sigterm", readOnly, []string{"sh", "-c", "kill -TERM $$"}, 143, 15},
		{"sigkill", wsWrite, []string{"sh", "-c", "kill -KILL $$"}, 137, 9},
		{"danger-exit-7", danger, []string{"sh", "-c", "exit 7"}, 7, 0},
		{"danger-sigterm", danger, []string{"sh", "-c", "kill -TERM $$"}, 143, 15},
		{"not-found-in-path", readOnly, []string{"sbx-it-no-such-command"}, 127, 0},
		{"not-found-absolute", wsWrite, []string{"/nonexistent/sbx-it"}, 127, 0},
		{"not-executable", wsWrite, []string{"./not-executable"}, 126, 0},
		{"not-executable-danger", danger, []string{"./not-executable"}, 126, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, rep := run(t, ws, c.mode, c.cmd...)
			if out.code != c.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", out.code, c.code, out.stdout, out.stderr)
			}
			if strings.Contains(out.stdout, "should not run") {
				t.Error("the non-executable file was run")
			}
			if rep == nil {
				t.Fatal("no report written")
			}
			if rep.ExitCode != c.code {
				t.Errorf("report exit_code %d, want %d", rep.ExitCode, c.code)
			}
			switch {
			case c.signal == 0 && string(rep.raw["signal"]) != "null":
				t.Errorf("report signal %s, want null", rep.raw["signal"])
			case c.signal != 0 && (rep.Signal == nil || *rep.Signal != c.signal):
				t.Errorf("report signal %s, want %d", rep.raw["signal"], c.signal)
			}
		})
	}
}

// TestBadInput: every refusal is exit 125 with one line on stderr naming
// the field at fault, nothing run and nothing created (not even --report).
func TestBadInput(t *testing.T) {
	cases := []struct {
		name  string
		args  []string // between "run --report R" and "--"; nil cmd below
		cmd   []string
		field string
	}{
		{"unknown-flag", []string{"--bogus-flag"}, []string{"true"}, "bogus-flag"},
		{"unknown-mode", []string{"--mode", "full-access"}, []string{"true"}, "mode"},
		{"relative-missing-cwd", []string{"--cwd", "does/not/exist"}, []string{"true"}, "cwd"},
		{"cwd-is-a-file", []string{"--cwd", "a-file"}, []string{"true"}, "cwd"},
		{"empty-command", nil, []string{}, "command"},
		{"empty-command-name", nil, []string{""}, "command"},
		{"unknown-require", []string{"--require", "no-such-feature"}, []string{"true"}, "require"},
		{"missing-writable-root", []string{"--mode", "workspace-write", "--writable-root", "missing-root"}, []string{"true"}, "--writable-root[0]"},
		{"writable-root-in-read-only", []string{"--writable-root", "."}, []string{"true"}, "--writable-root"},
		{"missing-allow-write", []string{"--allow-write", "missing-path"}, []string{"true"}, "--allow-write[0]"},
		{"unknown-stdin", []string{"--stdin", "open"}, []string{"true"}, "--stdin"},
		{"pty-size-without-pty", []string{"--pty-size", "30x90"}, []string{"true"}, "--pty-size"},
		{"pty-size-zero", []string{"--pty", "--pty-size", "0x80"}, []string{"true"}, "--pty-size"},
		{"pty-size-malformed", []string{"--pty", "--pty-size", "30by90"}, []string{"true"}, "--pty-size"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ws := workspace(t)
			writeFile(t, filepath.Join(ws, "a-file"), "x\n")
			marker := filepath.Join(ws, "marker")
			cmd := c.cmd
			if len(cmd) > 0 && cmd[0] == "true" {
				cmd = []string{"touch", marker}
			}
			rp := filepath.Join(ws, "report.json")
			args := append(append([]string{"run", "--report", rp}, c.args...), "--")
			out := sbx(t, opts{args: append(args, cmd...), dir: ws})
			if out.code != 125 {
				t.Errorf("exit %d, want 125\nstderr: %s", out.code, out.stderr)
			}
			oneLine(t, "stderr", out.stderr)
			if !strings.Contains(out.stderr, c.field) {
				t.Errorf("stderr does not name %q: %q", c.field, out.stderr)
			}
			for _, p := range []string{rp, marker, filepath.Join(ws, "does"), filepath.Join(ws, "missing-root"), filepath.Join(ws, "missing-path")} {
				wantAbsent(p)(t)
			}
		})
	}
}

// TestReport checks the report of a plain workspace-write call: what was
// applied, with the Landlock features this ABI offers, and exactly the
// degradations this kernel and user have.
func TestReport(t *testing.T) {
	c := caps(t)
	ws := workspace(t)
	_, rep := probe(t, ws, wsOnly, "write", "f")
	for _, key := range []string{"exit_code", "signal", "mode", "enforcement", "degraded", "denials"} {
		if _, ok := rep.raw[key]; !ok {
			t.Errorf("report has no %q", key)
		}
	}
	if rep.ExitCode != 0 || string(rep.raw["signal"]) != "null" || rep.Mode != "workspace-write" {
		t.Errorf("exit_code %d signal %s mode %q, want 0, null, workspace-write", rep.ExitCode, rep.raw["signal"], rep.Mode)
	}
	e := rep.Enforcement
	if e.Platform != "linux" || !e.NoNewPrivs || !e.NewSession || !e.ClosedFDs {
		t.Errorf("enforcement %+v: want platform linux, no_new_privs, new_session, closed_fds", e)
	}
	switch {
	case c.abi == 0 && e.Landlock != nil:
		t.Errorf("enforcement.landlock %+v on a kernel without Landlock", e.Landlock)
	case c.abi > 0 && (e.Landlock == nil || e.Landlock.ABI != c.abi || !e.Landlock.FS):
		t.Errorf("enforcement.landlock %+v, want abi %d (the kernel's) and fs true", e.Landlock, c.abi)
	case c.abi > 0:
		l := e.Landlock
		if !slices.Equal(l.Features, c.landlockFeatures(false)) || !slices.Equal(l.Scopes, c.landlockScopes(false)) || l.NetTCP != c.landlockNetTCP(false) {
			t.Errorf("enforcement.landlock features %q scopes %q net_tcp %t, want %q %q %t for ABI %d",
				l.Features, l.Scopes, l.NetTCP, c.landlockFeatures(false), c.landlockScopes(false), c.landlockNetTCP(false), c.abi)
		}
	}
	if e.Seccomp == nil {
		t.Error("enforcement.seccomp missing")
	}
	if e.NetworkNamespace != c.namespaces || e.PIDNamespace != c.namespaces {
		t.Errorf("network_namespace %t pid_namespace %t, want %t (network off, namespaces possible: %t)",
			e.NetworkNamespace, e.PIDNamespace, c.namespaces, c.namespaces)
	}
	for _, key := range []string{"degraded", "denials"} {
		if v := string(rep.raw[key]); !strings.HasPrefix(v, "[") {
			t.Errorf("%s = %s, want a list", key, v)
		}
	}
	wantDegraded(t, rep, c.degraded(callShape{mode: "workspace-write"}))
}

// TestLaunch: how the command was started. Root restricts a launcher
// thread; an unprivileged caller needs a user namespace, hence the stage;
// without user namespaces the thread again, with no namespaces at all.
func TestLaunch(t *testing.T) {
	ws := workspace(t)
	_, rep := probe(t, ws, wsWrite, "read", "/etc/passwd")
	e := rep.Enforcement
	switch {
	case privileged():
		// Root with CAP_SYS_ADMIN (not root in a container's default
		// capability set, which needs a user namespace like anyone).
		if e.Launch != "thread" || e.UserNamespace || !e.PIDNamespace || !e.NetworkNamespace {
			t.Errorf("root: launch %q user_namespace %t pid_namespace %t network_namespace %t, want thread, false, true, true",
				e.Launch, e.UserNamespace, e.PIDNamespace, e.NetworkNamespace)
		}
	case has(t, "userns"):
		// Through an unprivileged server with its own user namespace the
		// call is a thread launch inside it (docs/serve.md, "Launches").
		launch := "stage"
		if viaServe && serveUserNS {
			launch = "thread"
		}
		if e.Launch != launch || !e.UserNamespace || !e.PIDNamespace || !e.NetworkNamespace {
			t.Errorf("unprivileged: launch %q user_namespace %t pid_namespace %t network_namespace %t, want %s, true, true, true",
				e.Launch, e.UserNamespace, e.PIDNamespace, e.NetworkNamespace, launch)
		}
	default:
		if e.Launch != "thread" || e.UserNamespace || e.PIDNamespace || e.NetworkNamespace || rep.degraded("netns") == "" || rep.degraded("pidns") == "" {
			t.Errorf("no user namespaces: launch %q user_namespace %t pid_namespace %t network_namespace %t degraded %+v, want thread, no namespaces, netns and pidns entries",
				e.Launch, e.UserNamespace, e.PIDNamespace, e.NetworkNamespace, rep.Degraded)
		}
	}
	_, rep = probe(t, ws, danger, "read", "/etc/passwd")
	if rep.Enforcement.Launch != "direct" || rep.Mode != "danger-full-access" {
		t.Errorf("danger-full-access: launch %q mode %q, want direct", rep.Enforcement.Launch, rep.Mode)
	}
	if rep.Enforcement.Landlock != nil || rep.Enforcement.Seccomp != nil || rep.Enforcement.NetworkNamespace || rep.Enforcement.PIDNamespace {
		t.Errorf("danger-full-access reports restrictions: %+v", rep.Enforcement)
	}
}

// startSbx starts `sbx run --cwd WS FLAGS -- sh -c SCRIPT` with stdout on a
// pipe and returns the process and the first line the script prints.
func startSbx(t *testing.T, ws string, flags []string, script string) (*exec.Cmd, string) {
	t.Helper()
	cmd := sbxRunCmd(ws, flags, script)
	return cmd, nextLine(t, startLines(t, cmd))
}

// sbxRunCmd is `sbx run --cwd WS FLAGS -- sh -c SCRIPT`, not started.
func sbxRunCmd(ws string, flags []string, script string) *exec.Cmd {
	cmd := exec.Command(sbxBin, append(append([]string{"run", "--cwd", ws}, flags...), "--", "sh", "-c", script)...)
	cmd.Env = baseEnv()
	return cmd
}

// startLines starts cmd and sends each line of its stdout, trimmed; the
// channel closes at the end of the output. cmd is killed when the test ends.
func startLines(t *testing.T, cmd *exec.Cmd) <-chan string {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		r := bufio.NewReader(stdout)
		for {
			l, err := r.ReadString('\n')
			if l != "" || err == nil {
				lines <- strings.TrimSpace(l)
			}
			if err != nil {
				return
			}
		}
	}()
	return lines
}

// nextLine returns the next line from startLines ("" once the output has
// ended), failing the test when none comes within 10s.
func nextLine(t *testing.T, lines <-chan string) string {
	t.Helper()
	select {
	case l := <-lines:
		return l
	case <-time.After(10 * time.Second):
		t.Fatal("the command printed nothing within 10s")
	}
	return ""
}

func waitExit(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
		return cmd.ProcessState.ExitCode()
	case <-time.After(10 * time.Second):
		t.Fatal("sbx did not exit within 10s")
	}
	return -1
}

// TestSignalForwarding: SIGTERM to sbx reaches the command, and sbx exits
// as the command did (143), as if the command had been run directly.
func TestSignalForwarding(t *testing.T) {
	for _, mode := range [][]string{wsWrite, danger} {
		t.Run(modeName(mode), func(t *testing.T) {
			cmd, line := startSbx(t, workspace(t), mode, "echo ready; exec sleep 30")
			if line != "ready" {
				t.Fatalf("got %q", line)
			}
			cmd.Process.Signal(syscall.SIGTERM)
			if code := waitExit(t, cmd); code != 143 {
				t.Errorf("exit %d, want 143", code)
			}
		})
	}
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
		return false
	}
	return notZombie(pid)
}

// aliveAs reports whether pid is alive and still runs exactly argv: in a
// VM pids are small and reused within milliseconds, so a bare pid check can
// mistake a new process for the one that died.
func aliveAs(pid int, argv ...string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return err == nil && string(b) == strings.Join(argv, "\x00")+"\x00" && alive(pid)
}

func notZombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}

// TestDeathOfTreeWithSbx: when sbx is killed, the whole command tree dies
// with it, including a setsid, double-forked child of the command (issues 2
// and 5: "death of the whole tree when sbx dies"): the command runs in its own PID
// namespace, whose init dies with sbx. The child is found on the host by a
// unique argument. Without user namespaces an unprivileged sbx has no PID
// namespace: the report says pidns, and the background child does survive,
// as that entry warns (--require pidns refuses to run: TestRequire).
func TestDeathOfTreeWithSbx(t *testing.T) {
	c := caps(t)
	for i, mode := range [][]string{wsWrite, readOnly} {
		t.Run(modeName(mode), func(t *testing.T) {
			arg := strconv.Itoa(300000 + os.Getpid()%10000*10 + i)
			ws := workspace(t)
			rp := filepath.Join(t.TempDir(), "report.json")
			// The child leaves the command's session (setsid) and its parent
			// exits (a double fork): only a PID namespace still holds it.
			cmd, line := startSbx(t, ws, append([]string{"--report", rp}, mode...),
				"setsid sh -c 'sleep "+arg+" </dev/null >/dev/null 2>&1 & :'; echo started; sleep 30")
			if line != "started" {
				t.Fatalf("got %q", line)
			}
			bg := findProcess(t, "sleep", arg)
			// The background sleep is ours to clean up whatever sbx does.
			t.Cleanup(func() { unix.Kill(bg, unix.SIGKILL) })
			cmd.Process.Kill()
			waitExit(t, cmd)
			deadline := time.Now().Add(3 * time.Second)
			survived := aliveAs(bg, "sleep", arg)
			for survived && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
				survived = aliveAs(bg, "sleep", arg)
			}
			if c.namespaces {
				if survived {
					t.Errorf("background child %d of the command survived SIGKILL of sbx: %s", bg, procInfo(bg))
				}
				return
			}
			// sbx was killed, so it wrote no report: ask a finished call.
			_, rep := run(t, ws, mode, "true")
			if rep.degraded("pidns") == "" || rep.Enforcement.PIDNamespace {
				t.Errorf("no PID namespace here, but the report has pid_namespace %t and degraded %+v", rep.Enforcement.PIDNamespace, rep.Degraded)
			}
			if !aliveAs(bg, "sleep", arg) {
				t.Errorf("background child %d died with sbx without a PID namespace: the pidns downgrade says it survives; update it", bg)
			} else {
				t.Logf("no PID namespace: background child %d survives SIGKILL of sbx, as degraded pidns says", bg)
			}
		})
	}
}

// procInfo describes pid for a failure message: its parent and PID
// namespace ids, and its parent's command line.
func procInfo(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return err.Error()
	}
	var info []string
	ppid := ""
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && (k == "PPid" || k == "NSpid" || k == "NSsid" || k == "State") {
			info = append(info, k+"="+strings.Join(strings.Fields(v), ","))
			if k == "PPid" {
				ppid = strings.TrimSpace(v)
			}
		}
	}
	if cl, err := os.ReadFile("/proc/" + ppid + "/cmdline"); err == nil {
		info = append(info, fmt.Sprintf("parent cmdline %q", strings.ReplaceAll(string(cl), "\x00", " ")))
	}
	if ns, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/pid"); err == nil {
		self, _ := os.Readlink("/proc/self/ns/pid")
		info = append(info, "pid ns "+ns+" (the test's: "+self+")")
	}
	return strings.Join(info, " ")
}

// findProcess returns the host pid of the live process whose argv is
// exactly argv, waiting up to 5 s for it to appear.
func findProcess(t *testing.T, argv ...string) int {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if aliveAs(pid, argv...) {
				return pid
			}
		}
	}
	t.Fatalf("no process %q found", argv)
	return 0
}

// TestReportToStdout: --report - and --report /dev/stdout append the report
// to sbx's standard output after the command's output, also when that is a
// file (reopening /dev/stdout would truncate it and lose the output).
func TestReportToStdout(t *testing.T) {
	for _, dest := range []string{"-", "/dev/stdout"} {
		t.Run(dest, func(t *testing.T) {
			out, err := os.Create(filepath.Join(t.TempDir(), "out"))
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			cmd := exec.Command(sbxBin, "run", "--report", dest, "--", "echo", "command output")
			var stderr strings.Builder
			cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = t.TempDir(), baseEnv(), out, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("sbx: %v: %s", err, stderr.String())
			}
			b, err := os.ReadFile(out.Name())
			if err != nil {
				t.Fatal(err)
			}
			text, report, ok := strings.Cut(string(b), "\n")
			if !ok || text != "command output" {
				t.Fatalf("stdout starts %q, want the command's output first:\n%s", text, b)
			}
			decodeReport(t, []byte(report))
		})
	}
}
