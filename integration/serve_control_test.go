//go:build linux

package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// sbx serve's own paths are control plane (issue 27 §1): its state
// directory (the logs whose grants a restarted server replays, and the
// panel's token) is masked in every call it launches, and its socket's
// directory is read-only, both by mounts, even where they lie inside the
// call's writable root. The tests use only what busybox has, so the
// kernel matrix runs them as they are; where no mount namespace can be
// made (the nouserns passes, unprivileged) they check that the report
// says so instead.

// controlScript tries, from inside a call whose cwd holds state/ (the
// server's state directory) and run/ (its socket's directory), everything
// the call must not do there, and one write it must still make. It prints
// a word for each that succeeded.
const controlScript = `
ls -A state | sed 's/^/STATE-LISTS:/'
(echo x > state/planted.log) 2>/dev/null && echo WROTE-STATE
cat state/*.log >/dev/null 2>&1 && echo READ-STATE
(mkdir state/d) 2>/dev/null && echo MKDIR-STATE
(touch run/planted) 2>/dev/null && echo WROTE-RUN
rm -f run/s.sock 2>/dev/null; test -S run/s.sock || echo UNLINKED-SOCKET
(mv run run2) 2>/dev/null && echo RENAMED-RUN
(chmod 0777 run) 2>/dev/null && echo CHMOD-RUN
(echo x >> approve.sh) 2>/dev/null && echo WROTE-APPROVER
(echo x >> guard.json) 2>/dev/null && echo WROTE-GUARD
echo ok > other.txt && echo WROTE-OTHER
`

// TestServeControlPaths: a call through sbx serve --listen whose session's
// cwd holds the server's state directory and socket's directory, its
// --approver program and the session's guard file can neither read nor
// write the first nor change the others; the call's other writes work,
// and its report says what was taken away and why. Fails on the code
// before the fix: the call read the session's log, planted a log file,
// unlinked the socket, rewrote the approver and the guard.
func TestServeControlPaths(t *testing.T) {
	ws := workspace(t)
	state, run := filepath.Join(ws, "state"), filepath.Join(ws, "run")
	for _, d := range []string{state, run} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	sock := filepath.Join(run, "s.sock")
	approver, guard := filepath.Join(ws, "approve.sh"), filepath.Join(ws, "guard.json")
	if os.WriteFile(approver, []byte("#!/bin/sh\necho '{\"outcome\":\"rejected\"}'\n"), 0o755) != nil || os.WriteFile(guard, []byte("{}\n"), 0o644) != nil {
		t.Fatal("write the approver and the guard")
	}
	cmd := exec.Command(sbxBin, "serve", "--listen", sock, "--state-dir", state, "--answerers", "client,approver", "--approver", approver)
	cmd.Env = baseEnv()
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
	waitForPath(t, sock)
	p := dialServe(t, sock)
	p.ok("initialize", nil)
	p.ok("session/open", map[string]any{"session_id": "s", "cwd": ws, "preset": "auto", "guard": guard})
	turn := p.ok("turn/begin", map[string]any{"session_id": "s"})["turn_id"].(string)
	if _, err := os.Stat(filepath.Join(state, "s.log")); err != nil {
		t.Fatalf("the session has no log to protect: %v", err)
	}
	res := p.ok("exec", execParams("s", turn, "c1", ws, "sh", "-c", controlScript))
	if !expect(t, "mountns") {
		degradedMask(t, res)
		return
	}
	if got := res["stdout"]; got != "WROTE-OTHER\n" {
		t.Errorf("the call's stdout: %q; want only WROTE-OTHER (stderr %q)", got, res["stderr"])
	}
	for _, p := range []string{filepath.Join(state, "planted.log"), filepath.Join(state, "d"), filepath.Join(run, "planted"), filepath.Join(ws, "run2")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was made from inside the call", p)
		}
	}
	if fi, err := os.Lstat(sock); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Errorf("the server's socket is gone: %v", err)
	}
	if fi, err := os.Stat(run); err != nil {
		t.Errorf("run/: %v", err)
	} else if fi.Mode().Perm() != 0o700 {
		t.Errorf("run/: mode %v; want 0700 still", fi.Mode())
	}
	if b, err := os.ReadFile(guard); err != nil || string(b) != "{}\n" {
		t.Errorf("the session's guard file: %q %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "other.txt")); err != nil || string(b) != "ok\n" {
		t.Errorf("the allowed write: %q %v", b, err)
	}
	b, _ := json.Marshal(res["permissions"])
	for _, want := range []string{"sbx serve's state directory (control plane): masked", "the directory of sbx serve's socket (control plane): read-only",
		"sbx serve's --approver program (control plane): read-only", "the session's guard file (control plane): read-only"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the report's permissions do not say %q: %s", want, b)
		}
	}
	// A later client still reaches the server at the same path: the
	// call did not replace its socket.
	q := dialServe(t, sock)
	q.ok("initialize", nil)
}

// TestServeWebTokenUnreadable: the file holding the panel's URL and token
// (in the state directory, or with --ephemeral a directory of the
// server's own) cannot be read by a call of that server, even a call
// whose cwd holds it; the token is not on standard error (a file here,
// which calls can read).
func TestServeWebTokenUnreadable(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"state dir", nil},
		{"ephemeral", []string{"--ephemeral"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := startWeb(t, tt.args...)
			w.ok("initialize", nil)
			ws := workspace(t)
			turn := w.session("s", ws, map[string]any{"preset": "auto"})
			dir := filepath.Dir(w.urlFile)
			script := `cat "$1" 2>/dev/null; ls -A "$2" 2>/dev/null; echo done`
			res := w.ok("exec", execParams("s", turn, "c1", ws, "sh", "-c", script, "sh", w.urlFile, dir))
			if !expect(t, "mountns") {
				degradedMask(t, res)
				return
			}
			if got := res["stdout"]; got != "done\n" {
				t.Errorf("the call read %s or listed %s: %q", w.urlFile, dir, got)
			}
			if strings.Contains(w.stderr.String(), w.token) {
				t.Errorf("the token is on standard error: %s", w.stderr)
			}
		})
	}
}

// degradedMask checks that a call without a mount namespace reports the
// control paths' mounts as degraded (mask), not silently missing.
func degradedMask(t *testing.T, res map[string]any) {
	t.Helper()
	b, _ := json.Marshal(res["degraded"])
	if !strings.Contains(string(b), `"feature":"mask"`) {
		t.Errorf("no mount namespace, and no mask degradation reported: %s", b)
	}
}

// TestServeStateDirUnsafe: an existing --state-dir that others could
// write (mode 0777, 0770, or another uid's) is refused, 125, saying why:
// its logs hold grants a restarted server replays (issue 27 §6). A 0700
// and a 0755 one of the server's own user are used.
func TestServeStateDirUnsafe(t *testing.T) {
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize"}` + "\n"
	mk := func(mode os.FileMode) string {
		d := filepath.Join(t.TempDir(), "state")
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return d
	}
	for _, tt := range []struct {
		name string
		dir  string
		want string // in stderr; "" = served
	}{
		{"0777", mk(0o777), "writable by its group or others"},
		{"0770", mk(0o770), "writable by its group or others"},
		{"sticky 01777", mk(0o1777), "writable by its group or others"},
		{"0700", mk(0o700), ""},
		{"0755", mk(0o755), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := sbx(t, opts{args: []string{"serve", "--state-dir", tt.dir}, stdin: strings.NewReader(initialize)})
			if tt.want == "" {
				if out.code != 0 || !strings.Contains(out.stdout, `"result"`) {
					t.Errorf("exit %d stdout %q stderr %q; want it served", out.code, out.stdout, out.stderr)
				}
				return
			}
			if out.code != 125 || out.stdout != "" || !strings.Contains(out.stderr, "--state-dir") || !strings.Contains(out.stderr, tt.want) {
				t.Errorf("exit %d stdout %q stderr %q; want 125 naming --state-dir and %q, nothing served", out.code, out.stdout, out.stderr, tt.want)
			}
		})
	}
	t.Run("another owner", func(t *testing.T) {
		if os.Geteuid() != 0 {
			// Only root can give a directory away; unprivileged, a system
			// directory another uid owns (root's) stands for one. The
			// server in its user namespace would see root as the overflow
			// uid, nobody's: the check is made before it enters it.
			other := otherOwnersDir(t, os.Geteuid())
			out := sbx(t, opts{args: []string{"serve", "--state-dir", other}, stdin: strings.NewReader(initialize)})
			if out.code != 125 || out.stdout != "" || !regexp.MustCompile(regexp.QuoteMeta(other)+` is owned by uid [0-9]+, not by this server's uid [0-9]+`).MatchString(out.stderr) {
				t.Errorf("--state-dir %s: exit %d stdout %q stderr %q; want 125: owned by another uid", other, out.code, out.stdout, out.stderr)
			}
			return
		}
		// A server run as nobody serves from its own user namespace,
		// where root's files read as the overflow uid: nobody's own. The
		// check must be the host's, before that namespace is entered (the
		// kernel matrix's nobody pass served / until it was).
		other := otherOwnersDir(t, 65534)
		nobody := exec.Command(sbxBin, "serve", "--state-dir", other)
		nobody.Env = []string{"PATH=/usr/bin:/bin", "HOME=/"}
		nobody.Stdin = strings.NewReader(initialize)
		nobody.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		if b, err := nobody.CombinedOutput(); nobody.ProcessState == nil || nobody.ProcessState.ExitCode() != 125 ||
			!regexp.MustCompile(regexp.QuoteMeta(other)+` is owned by uid [0-9]+, not by this server's uid 65534`).Match(b) {
			t.Errorf("--state-dir %s as uid 65534: %v, output %q; want 125: owned by another uid", other, err, b)
		}
		d := mk(0o700)
		if err := os.Chown(d, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		out := sbx(t, opts{args: []string{"serve", "--state-dir", d}, stdin: strings.NewReader(initialize)})
		if out.code != 125 || out.stdout != "" || !strings.Contains(out.stderr, "is owned by uid 65534, not by this server's uid 0") {
			t.Errorf("exit %d stdout %q stderr %q; want 125: owned by uid 65534", out.code, out.stdout, out.stderr)
		}
	})
}

// otherOwnersDir is a system directory that uid does not own and that its
// group and others cannot write: one a server of uid must refuse as its
// state directory for its owner alone (/ where root owns it).
func otherOwnersDir(t *testing.T, uid int) string {
	t.Helper()
	for _, d := range []string{"/", "/proc", "/dev", "/etc", "/usr"} {
		var st unix.Stat_t
		if unix.Stat(d, &st) == nil && int(st.Uid) != uid && st.Mode&0o022 == 0 {
			return d
		}
	}
	t.Fatalf("no directory among /, /proc, /dev, /etc, /usr that uid %d does not own and others cannot write", uid)
	return ""
}
