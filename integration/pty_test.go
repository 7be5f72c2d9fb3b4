//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestPTYExec: with "pty" the command runs on a fresh terminal of the
// requested size, which is its stdin and its controlling terminal, and the
// report says so.
func TestPTYExec(t *testing.T) {
	ws := workspace(t)
	out, res := execJSON(t, ws, `{"command": ["sh", "-c", "tty; test -t 0 && echo stdin-is-a-tty; stty size; echo err >&2"],
		"cwd": `+jsonString(ws)+`, "pty": {"rows": 33, "cols": 101}}`)
	if res == nil || out.code != 0 {
		t.Fatalf("exit %d stdout %q stderr %q", out.code, out.stdout, out.stderr)
	}
	want := regexp.MustCompile(`^/dev/pts/[0-9]+\r\nstdin-is-a-tty\r\n33 101\r\nerr\r\n$`)
	if !want.MatchString(res.Stdout) || res.Stderr != "" || res.ExitCode != 0 {
		t.Errorf("stdout %q stderr %q exit %d, want a /dev/pts path, a tty stdin, 33 101 and err merged", res.Stdout, res.Stderr, res.ExitCode)
	}
	if !res.Enforcement.PTY {
		t.Errorf("enforcement.pty false under a pty")
	}
	_, plain := execJSON(t, ws, `{"command": ["sh", "-c", "test -t 0 || echo no-tty"], "cwd": `+jsonString(ws)+`}`)
	if plain == nil || plain.Stdout != "no-tty\n" || plain.Enforcement.PTY {
		t.Errorf("without pty: %+v, want no terminal and enforcement.pty false", plain)
	}
}

// TestPTYCtrlC: a Ctrl-C typed into the terminal of `sbx run --pty` is
// SIGINT to the command's foreground process group, and the report says
// signal 2; the size from --pty-size is what the command sees.
func TestPTYCtrlC(t *testing.T) {
	ws := workspace(t)
	rp := filepath.Join(t.TempDir(), "report.json")
	stdinR, stdin, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	cmd := sbxRunCmd(ws, []string{"--pty", "--pty-size", "40x120", "--report", rp}, "echo $(stty size) ready; exec sleep 100")
	cmd.Stdin = stdinR
	line := nextLine(t, startLines(t, cmd))
	stdinR.Close()
	if line != "40 120 ready" {
		t.Fatalf("got %q, want 40 120 ready", line)
	}
	start := time.Now()
	if _, err := stdin.Write([]byte{0x03}); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, cmd); code != 130 {
		t.Errorf("exit %d, want 130 (SIGINT)", code)
	}
	t.Logf("Ctrl-C to exit: %v", time.Since(start))
	rep := readReport(t, rp)
	if rep.Signal == nil || *rep.Signal != 2 || rep.SignalName != "SIGINT" || !rep.Enforcement.PTY {
		t.Errorf("report signal %v %q pty %t, want 2 SIGINT true", rep.raw["signal"], rep.SignalName, rep.Enforcement.PTY)
	}
}

// TestPTYDevices: under --pty the command's own terminal works (by fd and
// as /dev/tty), while other terminals and devices stay denied by Landlock:
// a new pty from /dev/ptmx, another pty's slave (which this user could
// write without the sandbox), /dev/kmsg; TIOCSTI on the pty stays EPERM.
// Read-only mode still refuses writes.
func TestPTYDevices(t *testing.T) {
	if requireWriteRestriction(t) {
		t.Skip("no Landlock: device opens are not restricted (only writes through the supervisor)")
	}
	_, other := openPTY(t)
	otherPath := other.Name()
	if r := probeDirect(t, nil, "write", otherPath); !r.OK {
		t.Fatalf("baseline: writing %s without sbx: %s", otherPath, r)
	}
	for _, mode := range [][]string{readOnly, wsWrite} {
		t.Run(modeName(mode), func(t *testing.T) {
			ws := workspace(t)
			args := append([]string{"--pty"}, mode...)
			if r, rep := probe(t, ws, args, "write", "/dev/tty"); !r.OK || !rep.Enforcement.PTY {
				t.Errorf("own terminal as /dev/tty: %s (pty %t), want ok", r, rep.Enforcement.PTY)
			}
			r, _ := probe(t, ws, args, "tiocsti")
			want(t, r, "EPERM")
			for _, dev := range []string{"/dev/ptmx", otherPath, "/dev/kmsg"} {
				if _, err := os.Stat(dev); err != nil {
					// A container's /dev has no /dev/kmsg: a write
					// would create a file, not open a device.
					t.Logf("%s not checked: %v", dev, err)
					continue
				}
				if r, _ := probe(t, ws, args, "write", dev); r.OK || r.Errno != "EACCES" {
					t.Errorf("write %s under --pty: %s, want EACCES", dev, r)
				}
			}
		})
	}
	ws := workspace(t)
	file := filepath.Join(ws, "new.txt")
	if r, _ := probe(t, ws, append([]string{"--pty"}, readOnly...), "create", file); r.OK || r.Errno != "EACCES" {
		t.Errorf("create in read-only under --pty: %s, want EACCES", r)
	}
	wantAbsent(file)(t)
}

// TestPTYOnTerminal: when sbx's stdin is its controlling terminal, the
// command's pty takes that terminal's size and follows its changes
// (SIGWINCH), sbx's terminal is raw while the command runs (keys reach the
// command as typed), and sbx puts it back as it found it.
func TestPTYOnTerminal(t *testing.T) {
	master, slave := openPTY(t)
	fd := int(slave.Fd())
	if err := unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: 50, Col: 132}); err != nil {
		t.Fatal(err)
	}
	before, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	ws := workspace(t)
	cmd := sbxRunCmd(ws, []string{"--pty"},
		"stty size; if stty -a | grep -q -- -icanon; then echo raw; fi; while read x; do stty size; done; echo bye")
	cmd.Stdin = slave
	// sbx leads a session whose terminal is slave, as in a terminal window.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	lines := startLines(t, cmd)
	next := func() string { return nextLine(t, lines) }
	if l := next(); l != "50 132" {
		t.Fatalf("first line %q, want the terminal's size 50 132", l)
	}
	during, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if during.Lflag&(unix.ICANON|unix.ECHO|unix.ISIG) != 0 {
		t.Errorf("sbx's terminal is not raw while the command runs: lflag %#x", during.Lflag)
	}
	if err := unix.IoctlSetWinsize(int(master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 60, Col: 140}); err != nil {
		t.Fatal(err)
	}
	// Each Enter makes the command print its size; the SIGWINCH relay is
	// asynchronous, so press it until the new size shows.
	deadline := time.Now().Add(5 * time.Second)
	for {
		if time.Now().After(deadline) {
			t.Fatal("the command never saw the new size 60 140")
		}
		master.Write([]byte("\r"))
		l := next()
		for l == "" && time.Now().Before(deadline) { // the echo of Enter (or the end)
			l = next()
		}
		if l == "60 140" {
			break
		}
		if l != "50 132" {
			t.Fatalf("line %q, want a size (raw: the command's own pty was raw)", l)
		}
		time.Sleep(20 * time.Millisecond)
	}
	master.Write([]byte{0x04})
	if code := waitExit(t, cmd); code != 0 {
		t.Errorf("exit %d after Ctrl-D, want 0", code)
	}
	after, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if *after != *before {
		t.Errorf("terminal mode not restored:\nbefore %+v\nafter  %+v", before, after)
	}
}

// TestStdin: exec "stdin" reaches the command on pipes and on a pty; sbx
// run passes its stdin by default and --stdin close gives end-of-file.
func TestStdin(t *testing.T) {
	ws := workspace(t)
	_, res := execJSON(t, ws, `{"command": ["cat"], "cwd": `+jsonString(ws)+`, "stdin": "héllo\nworld"}`)
	if res == nil || res.Stdout != "héllo\nworld" {
		t.Errorf("exec stdin through cat: %+v", res)
	}
	_, res = execJSON(t, ws, `{"command": ["sh", "-c", "read l; echo got:$l; cat; echo eof"], "cwd": `+jsonString(ws)+`, "stdin": "one\n", "pty": {}}`)
	if res == nil || !strings.HasSuffix(res.Stdout, "got:one\r\neof\r\n") {
		t.Errorf("exec stdin on a pty: %+v, want got:one then eof", res)
	}
	pass := sbx(t, opts{args: []string{"run", "--cwd", ws, "--", "cat"}, dir: ws, stdin: strings.NewReader("passed")})
	if pass.code != 0 || pass.stdout != "passed" {
		t.Errorf("run stdin pass: exit %d stdout %q", pass.code, pass.stdout)
	}
	closed := sbx(t, opts{args: []string{"run", "--cwd", ws, "--stdin", "close", "--", "sh", "-c", "cat; echo eof"}, dir: ws, stdin: strings.NewReader("not for the command")})
	if closed.code != 0 || closed.stdout != "eof\n" {
		t.Errorf("run --stdin close: exit %d stdout %q, want eof only", closed.code, closed.stdout)
	}
	piped := sbx(t, opts{args: []string{"run", "--cwd", ws, "--pty", "--", "sh", "-c", "cat; echo eof"}, dir: ws, stdin: strings.NewReader("piped")})
	// The terminal echoes the input, cat prints it, and the end of the pipe
	// is typed as Ctrl-D.
	if piped.code != 0 || piped.stdout != "pipedpipedeof\r\n" {
		t.Errorf("run --pty with piped stdin: exit %d stdout %q, want echo, cat's copy, eof", piped.code, piped.stdout)
	}
	closedPTY := sbx(t, opts{args: []string{"run", "--cwd", ws, "--pty", "--stdin", "close", "--", "sh", "-c", "cat; echo eof"}, dir: ws, stdin: strings.NewReader("not for the command")})
	if closedPTY.code != 0 || !strings.HasSuffix(closedPTY.stdout, "eof\r\n") || strings.Contains(closedPTY.stdout, "not for") {
		t.Errorf("run --pty --stdin close: exit %d stdout %q, want eof only", closedPTY.code, closedPTY.stdout)
	}
}
