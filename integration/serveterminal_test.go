//go:build linux

package integration

import (
	"os"
	"os/exec"
	"testing"
)

// TestServeTerminalNotGranted: a server started from a terminal, its stderr
// left there (as an agent's CLI leaves it), does not give its calls that
// terminal. The calls' streams are the server's pipes; the terminal is the
// user's, and opening it would let a sandboxed command read what the user
// types into the agent and write to their screen. The plan used to take
// the terminals behind sbx's own fds 0-2, the server's. A write the
// workspace allows still works, and `sbx run` on a terminal keeps its own
// (TestPTYDevices, TestRunKeepsTerminal).
func TestServeTerminalNotGranted(t *testing.T) {
	if requireWriteRestriction(t) {
		t.Skip("no Landlock: device opens are not restricted (only writes through the supervisor)")
	}
	_, slave := openPTY(t)
	tty := slave.Name()
	if r := probeDirect(t, nil, "write", tty); !r.OK {
		t.Fatalf("baseline: writing %s without sbx: %s", tty, r)
	}
	cmd := exec.Command(sbxBin, "serve", "--state-dir", t.TempDir())
	cmd.Stderr = slave
	s := startServerCmd(t, cmd)
	s.ok("initialize", nil)
	ws := workspace(t)
	turn := s.session("s", ws, map[string]any{"preset": "auto"})
	res := s.ok("exec", execParams("s", turn, "c1", ws, "sh", "-c", "echo ok > inside.txt; exec 3<>"+tty))
	if res["exit_code"] == 0.0 {
		t.Errorf("a call opened the server's terminal %s: %v", tty, res)
	}
	if b, _ := os.ReadFile(ws + "/inside.txt"); string(b) != "ok\n" {
		t.Errorf("the allowed write in the workspace did not happen: %q (%v)", b, res)
	}
}

// TestRunKeepsTerminal: `sbx run` whose stdin is a terminal hands it to the
// command, which may reopen it by name (as tty(1) names it, or a pager does),
// while another terminal stays closed.
func TestRunKeepsTerminal(t *testing.T) {
	if requireWriteRestriction(t) {
		t.Skip("no Landlock: device opens are not restricted (only writes through the supervisor)")
	}
	_, slave := openPTY(t)
	_, other := openPTY(t)
	paths := [2]string{slave.Name(), other.Name()}
	ws := workspace(t)
	for i, wantErrno := range []string{"", "EACCES"} {
		args := append(append([]string{"run", "--cwd", ws}, wsWrite...), "--", probeBin, "write", paths[i])
		out := sbx(t, opts{args: args, dir: ws, stdinF: slave})
		if out.code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", out.code, out.stdout, out.stderr)
		}
		r := parseProbe(t, out)
		t.Logf("probe write %s (stdin %s) -> %s", paths[i], paths[0], r)
		want(t, r, wantErrno)
	}
}
