package serve

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sbx-sandbox/sbx/internal/journal"
)

// callStatus asks call/status of session s.
func (c *client) callStatus(s, callID string) map[string]any {
	c.t.Helper()
	return c.ok("call/status", map[string]any{"session_id": s, "call_id": callID})
}

// TestCallStatus: call/status says a call is running while it is in
// flight, finished with its exit code or outcome after, unknown for an
// id the session never had; a restarted server says lost of a call its
// predecessor never finished; session/permissions names the open turn.
func TestCallStatus(t *testing.T) {
	c := newClient(t, Options{})
	ws, turn := c.openTurn("s", map[string]any{"preset": "auto"})
	if got := c.ok("session/permissions", map[string]any{"session_id": "s"})["turn_id"]; got != turn {
		t.Errorf("session/permissions turn_id %v, want %s", got, turn)
	}
	if got := c.callStatus("s", "nope"); got["status"] != "unknown" || got["call_id"] != "nope" {
		t.Errorf("an unknown call: %v", got)
	}
	c.ok("exec", map[string]any{"session_id": "s", "turn_id": turn, "call_id": "c1", "cwd": ws, "command": []string{"sh", "-c", "exit 3"}})
	if got := c.callStatus("s", "c1"); got["status"] != "finished" || got["exit_code"] != 3.0 || got["outcome"] != "exited" {
		t.Errorf("a finished call: %v", got)
	}
	// "running" holds from the call's admission, before its command starts:
	// the test waits for the command itself (its file), so that the
	// cancel below aborts a started command rather than cancelling a call
	// that never ran.
	started := filepath.Join(ws, "started")
	pending := c.start("exec", map[string]any{"session_id": "s", "turn_id": turn, "call_id": "c2", "cwd": ws, "command": []string{"sh", "-c", "touch started; exec sleep 30"}})
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := os.Stat(started)
		if st := c.callStatus("s", "c2")["status"]; err == nil && st == "running" {
			break
		} else if st != "running" && st != "unknown" || time.Now().After(deadline) {
			t.Fatalf("c2 not running (its command started: %v): %v", err == nil, c.callStatus("s", "c2"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The server dies here, c2 running: a restarted one settles it lost.
	var before []journal.Record
	before = append(before, c.logs.Get("s").Records()...)
	logs := &MemLogs{}
	for _, rec := range before {
		logs.Get("s").Append(rec)
	}
	c.ok("exec/cancel", map[string]any{"call_id": "c2"})
	c.wait(pending)
	if got := c.callStatus("s", "c2"); got["status"] != "finished" || got["outcome"] != "aborted" {
		t.Errorf("a cancelled call: %v", got)
	}
	srv := New(Options{OpenLog: logs.Open, Logf: t.Logf})
	if problems := srv.Restore([]journal.Session{{ID: "s", Records: before}}); len(problems) > 0 {
		t.Fatalf("restore: %v", problems)
	}
	c2 := connect(t, srv, logs)
	c2.ok("initialize", nil)
	if got := c2.callStatus("s", "c2"); got["status"] != "lost" || got["outcome"] != "lost" {
		t.Errorf("a call the dead server left running: %v", got)
	}
	if got := c2.callStatus("s", "c1"); got["status"] != "finished" || got["exit_code"] != 3.0 {
		t.Errorf("a call finished before the restart: %v", got)
	}
	if got, ok := c2.ok("session/permissions", map[string]any{"session_id": "s"})["turn_id"]; ok {
		t.Errorf("the dead server's turn is still named: %v", got)
	}
	if code, _ := c2.fail("call/status", map[string]any{"session_id": "s"}); code != CodeInvalidParams {
		t.Errorf("call/status without call_id: %d", code)
	}
	if code, _ := c2.fail("call/status", map[string]any{"session_id": "other", "call_id": "c1"}); code != CodeUnknownSession {
		t.Errorf("call/status of an unknown session: %d", code)
	}
}
