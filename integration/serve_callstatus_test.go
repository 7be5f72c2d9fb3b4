//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestServeCallStatus: call/status over the real binary with a durable
// state directory: a finished call's exit code, a running call, an unknown
// id; and after the server is killed with a call running, the restarted
// server says lost of it (from its log), finished of the one before, and
// session/permissions names the open turn, then none after the restart.
func TestServeCallStatus(t *testing.T) {
	state := t.TempDir()
	ws := workspace(t)
	s := startServer(t, "--state-dir", state)
	s.ok("initialize", nil)
	turn := s.session("s", ws, map[string]any{"preset": "auto"})
	if got := s.ok("session/permissions", map[string]any{"session_id": "s"})["turn_id"]; got != turn {
		t.Errorf("session/permissions turn_id %v, want %s", got, turn)
	}
	s.ok("exec", execParams("s", turn, "c1", ws, "sh", "-c", "exit 7"))
	status := func(s *server, id string) map[string]any {
		t.Helper()
		return s.ok("call/status", map[string]any{"session_id": "s", "call_id": id})
	}
	if got := status(s, "c1"); got["status"] != "finished" || got["exit_code"] != 7.0 || got["outcome"] != "exited" {
		t.Errorf("c1: %v", got)
	}
	if got := status(s, "nope"); got["status"] != "unknown" {
		t.Errorf("an unknown call: %v", got)
	}
	marker := filepath.Join(ws, "started")
	s.start("exec", execParams("s", turn, "c2", ws, "sh", "-c", "touch "+marker+"; sleep 60"))
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("c2 never started")
		}
	}
	if got := status(s, "c2"); got["status"] != "running" {
		t.Errorf("c2 while it runs: %v", got)
	}
	s.cmd.Process.Kill() // no goodbye: its log is what the next server has
	<-s.exited
	s2 := startServer(t, "--state-dir", state)
	s2.ok("initialize", nil)
	if got := status(s2, "c2"); got["status"] != "lost" {
		t.Errorf("c2 after the restart: %v", got)
	}
	if got := status(s2, "c1"); got["status"] != "finished" || got["exit_code"] != 7.0 {
		t.Errorf("c1 after the restart: %v", got)
	}
	if got, ok := s2.ok("session/permissions", map[string]any{"session_id": "s"})["turn_id"]; ok {
		t.Errorf("the dead server's turn is still named: %v", got)
	}
}
