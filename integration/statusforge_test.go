//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStatusForged: the command cannot write its own result (issue 27 §3,
// DESIGN.md invariant 8). Under the unprivileged launch PID 1 of the call
// is sbx's stage, which reports the command's wait status on a pipe; the
// probe copies every pipe of PID 1 it can (/proc/1/fd/N, pidfd_getfd) and
// writes a forged status into it. Before the fix the stage was dumpable and
// sbx believed the first message: exit 3 was reported as 0, and a command
// that ran and wrote a file as 127 "no such file or directory". Root's
// thread launch has no such pipe (sbx reaps the command itself, and init
// holds every capability), nor has the unprivileged server's; with --pids
// the server takes the stage launch too, so both shapes run.
func TestStatusForged(t *testing.T) {
	for _, shape := range []struct {
		name string
		args []string
	}{
		{"plain", []string{"--mode", "workspace-write"}},
		{"limits", []string{"--mode", "workspace-write", "--pids", "256"}},
	} {
		t.Run(shape.name, func(t *testing.T) {
			t.Run("exit", func(t *testing.T) {
				ws := t.TempDir()
				out, rep := run(t, ws, shape.args, probeBin, "forge-status", "exit")
				r := parseProbe(t, out)
				t.Logf("forge-status exit -> %s", r)
				if r.OK {
					t.Errorf("the command reached PID 1's status pipe: %s", r)
				}
				if out.code != 3 || reportedExit(rep) != 3 {
					t.Fatalf("the command exited 3: sbx exit %d, report's exit %d\nstderr: %s", out.code, reportedExit(rep), out.stderr)
				}
			})
			t.Run("exec-failed", func(t *testing.T) {
				ws := t.TempDir()
				made := filepath.Join(ws, "ran")
				out, rep := run(t, ws, shape.args, probeBin, "forge-status", "exec-failed", made)
				r := parseProbe(t, out)
				t.Logf("forge-status exec-failed -> %s", r)
				if r.OK {
					t.Errorf("the command reached PID 1's status pipe: %s", r)
				}
				if _, err := os.Stat(made); err != nil {
					t.Fatalf("the command did not run: %v", err)
				}
				if out.code != 0 || reportedExit(rep) != 0 || strings.Contains(out.stderr, "no such file") {
					t.Fatalf("the command ran and exited 0: sbx exit %d, report's exit %d\nstderr: %s", out.code, reportedExit(rep), out.stderr)
				}
			})
			// A Go stage exits 2 on SIGTERM even as PID 1 (its runtime
			// handles the signal): that exit must not pass for the
			// command's. Root's init ignores the signal.
			t.Run("kill-init", func(t *testing.T) {
				ws := t.TempDir()
				out, rep := run(t, ws, shape.args, probeBin, "forge-status", "kill-init")
				t.Logf("sbx exit %d\nstdout: %s\nstderr: %s", out.code, out.stdout, out.stderr)
				switch {
				case out.code == 3 && reportedExit(rep) == 3:
				case out.code == 125 && strings.Contains(out.stderr, "not trustworthy"):
				default:
					t.Fatalf("want the command's exit 3, or sbx's own error (125, not trustworthy): sbx exit %d, report's exit %d\nstderr: %s", out.code, reportedExit(rep), out.stderr)
				}
			})
		})
	}
}

// reportedExit is the report's exit code, -1 without a report.
func reportedExit(rep *report) int {
	if rep == nil {
		return -1
	}
	return rep.ExitCode
}
