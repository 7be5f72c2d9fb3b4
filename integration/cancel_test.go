//go:build linux

package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cancelReport is what the cancellation tests read of a report or result.
type cancelReport struct {
	ExitCode       int    `json:"exit_code"`
	KilledBy       string `json:"killed_by"`
	KilledBySignal string `json:"killed_by_signal"`
	CallID         string `json:"call_id"`
}

func readCancelReport(t *testing.T, b []byte) cancelReport {
	t.Helper()
	var r cancelReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("report: %v\n%s", err, b)
	}
	return r
}

// TestKillGraceFlag: --kill-grace sets the time between the relayed
// SIGTERM and the kill of a command that ignores it, and the report says
// which signal ended the call.
func TestKillGraceFlag(t *testing.T) {
	ws := workspace(t)
	rp := filepath.Join(t.TempDir(), "report.json")
	cmd, line := startSbx(t, ws, []string{"--report", rp, "--kill-grace", "300ms"}, "trap '' TERM; echo ready; sleep 30")
	if line != "ready" {
		t.Fatalf("got %q", line)
	}
	start := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	if code := waitExit(t, cmd); code != 137 {
		t.Errorf("exit %d, want 137 (SIGKILL after the grace period)", code)
	}
	// The default grace is 2 s; 300 ms plus the start of the kill.
	if d := time.Since(start); d < 250*time.Millisecond || d > 1500*time.Millisecond {
		t.Errorf("killed after %v, want about 300ms", d)
	}
	b := mustRead(t, rp)
	if r := readCancelReport(t, b); r.KilledBy != "signal" || r.KilledBySignal != "SIGTERM" {
		t.Errorf("killed_by %q killed_by_signal %q, want signal, SIGTERM", r.KilledBy, r.KilledBySignal)
	}
}

// TestInterruptKilledBy: a SIGINT relayed to a command that dies of it
// (or ends soon after) is a signal-driven end; one the command ignores and
// outlives by more than the grace period is not.
func TestInterruptKilledBy(t *testing.T) {
	for _, tt := range []struct {
		name, script string
		want         cancelReport
	}{
		{"dies of it", "echo ready; exec sleep 30", cancelReport{ExitCode: 130, KilledBy: "signal", KilledBySignal: "SIGINT"}},
		{"ignores it and goes on", "trap '' INT; echo ready; sleep 1; exit 4", cancelReport{ExitCode: 4}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rp := filepath.Join(t.TempDir(), "report.json")
			cmd, line := startSbx(t, workspace(t), []string{"--report", rp, "--kill-grace", "200ms"}, tt.script)
			if line != "ready" {
				t.Fatalf("got %q", line)
			}
			cmd.Process.Signal(syscall.SIGINT)
			if code := waitExit(t, cmd); code != tt.want.ExitCode {
				t.Errorf("exit %d, want %d", code, tt.want.ExitCode)
			}
			if r := readCancelReport(t, mustRead(t, rp)); r != tt.want {
				t.Errorf("report %+v, want %+v", r, tt.want)
			}
		})
	}
}

// TestExecKillGrace: sbx exec told to stop relays SIGTERM, kills the tree
// kill_grace_ms later, and still writes the result, with the call_id (on
// the streamed events too).
func TestExecKillGrace(t *testing.T) {
	ws := workspace(t)
	req := `{"command": ["sh", "-c", "trap '' TERM; echo ready; sleep 30"], "cwd": ` + jsonString(ws) + `, "kill_grace_ms": 300, "call_id": "c-cancel", "stream": true}`
	cmd := exec.Command(sbxBin, "exec")
	cmd.Env = baseEnv()
	cmd.Stdin = strings.NewReader(req)
	lines := startLines(t, cmd)
	if l := nextLine(t, lines); l != `{"event":"output","stream":"stdout","data":"ready\n","call_id":"c-cancel"}` {
		t.Fatalf("first line %q, want the ready event", l)
	}
	start := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	last := nextLine(t, lines)
	if code := waitExit(t, cmd); code != 0 {
		t.Errorf("sbx exec exit %d, want 0 (the result is written)", code)
	}
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Errorf("killed after %v, want about 300ms", d)
	}
	r := readCancelReport(t, []byte(last))
	if r != (cancelReport{ExitCode: 137, KilledBy: "signal", KilledBySignal: "SIGTERM", CallID: "c-cancel"}) {
		t.Errorf("result %+v, want 137, signal, SIGTERM, c-cancel", r)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
