package serve

import (
	"github.com/sbx-sandbox/sbx/internal/journal"
	"slices"
	"testing"
	"time"
)

// TestSessionCloseRefusals: bad params name the field, an unknown session
// is unknown_session, and nothing is closed by a refused request.
func TestSessionCloseRefusals(t *testing.T) {
	c := newClient(t, Options{})
	c.openTurn("s", map[string]any{"preset": "auto"})
	for _, tt := range []struct {
		name   string
		params map[string]any
		code   int
		field  string
	}{
		{"no session_id", map[string]any{}, CodeInvalidParams, "session_id"},
		{"unknown field", map[string]any{"session_id": "s", "force": true}, CodeInvalidParams, "force"},
		{"wrong type", map[string]any{"session_id": 1}, CodeInvalidParams, ""},
		{"unknown session", map[string]any{"session_id": "nope"}, CodeUnknownSession, ""},
	} {
		code, data := c.fail("session/close", tt.params)
		if code != tt.code || (tt.field != "" && data["field"] != tt.field) {
			t.Errorf("%s: %d %v", tt.name, code, data)
		}
	}
	if got := c.records("s"); !slices.Equal(got, []string{journal.TypeSessionOpened, journal.TypeTurnBegun}) {
		t.Errorf("records after refused closes: %v", got)
	}
	c.ok("session/permissions", map[string]any{"session_id": "s"})
}

// TestSessionClose: session/close settles the pending approval cancelled
// (recorded, and withdrawn from the client with $/cancelRequest), kills
// the running call, ends the open turn, records session/closed last, and
// the session is unknown afterwards; its id is not opened again.
func TestSessionClose(t *testing.T) {
	c, _ := clientServer(t, Options{})
	ws, turn := c.openTurn("s", map[string]any{"preset": "auto"})
	c.openTurn("other", map[string]any{"preset": "auto"})
	sleeper := c.start("exec", map[string]any{"session_id": "s", "turn_id": turn, "call_id": "sleeper", "cwd": ws, "stream": true,
		"command": []string{"sh", "-c", "sleep 30 & echo started; wait"}})
	c.note("exec/output")
	out := t.TempDir()
	asker := c.start("exec", escalating("s", turn, "asker", ws, out))
	req := c.note("approval/requested")
	start := time.Now()
	if m := c.call("session/close", map[string]any{"session_id": "s"}); m["error"] != nil || m["result"] != nil {
		t.Fatalf("session/close: %v", m)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("took %v", time.Since(start))
	}
	if w := c.note("$/cancelRequest")["params"].(map[string]any); w["id"] != req["id"] {
		t.Errorf("$/cancelRequest %v, want %v", w, req["id"])
	}
	if m := c.wait(sleeper); m["error"] != nil || m["result"].(map[string]any)["aborted"] != true {
		t.Errorf("the running call: %v", m)
	}
	cancelled(t, c.wait(asker), OutcomeAbortedBeforeDispatch)
	if d := c.recordData("s", journal.TypeApprovalDecided); len(d) != 1 || d[0]["outcome"] != "cancelled" || ran(out) {
		t.Errorf("decided %v ran=%v", d, ran(out))
	}
	recs := c.records("s")
	if n := len(recs); n < 2 || recs[n-2] != journal.TypeTurnEnded || recs[n-1] != journal.TypeSessionClosed {
		t.Errorf("records %v: want turn/ended, session/closed last", recs)
	}
	c.answer(req["id"], allowed("s", req["params"].(map[string]any)["approval_id"].(string)))
	c.refused(RefusedExpired)
	for _, m := range []struct {
		method string
		params map[string]any
	}{
		{"exec", map[string]any{"session_id": "s", "turn_id": turn, "call_id": "x", "cwd": ws, "command": []string{"true"}}},
		{"turn/begin", map[string]any{"session_id": "s"}},
		{"session/permissions", map[string]any{"session_id": "s"}},
		{"session/set_preset", map[string]any{"session_id": "s", "key": "read-only"}},
		{"session/close", map[string]any{"session_id": "s"}},
	} {
		if code, data := c.fail(m.method, m.params); code != CodeUnknownSession || data["session_id"] != "s" {
			t.Errorf("%s after close: %d %v", m.method, code, data)
		}
	}
	if code, _ := c.fail("session/open", map[string]any{"session_id": "s", "cwd": ws}); code != CodeConflict {
		t.Errorf("reopen a closed id: %d", code)
	}
	if got := c.records("s"); !slices.Equal(got, recs) {
		t.Errorf("records changed after the close: %v", got)
	}
	// The other session is untouched.
	c.ok("session/permissions", map[string]any{"session_id": "other"})
}

// TestRestoreClosed: a session whose log ends with session/closed is not
// rebuilt by a restarted server, and its id stays taken.
func TestRestoreClosed(t *testing.T) {
	c := newClient(t, Options{})
	ws, _ := c.openTurn("s", map[string]any{"preset": "auto"})
	c.ok("session/open", map[string]any{"session_id": "kept", "cwd": ws})
	c.call("session/close", map[string]any{"session_id": "s"})
	before := replayed(c.logs, "s", "kept")
	logs := &MemLogs{}
	for _, js := range before {
		for _, rec := range js.Records {
			logs.Get(js.ID).Append(rec)
		}
	}
	srv := New(Options{OpenLog: logs.Open, Logf: t.Logf})
	if problems := srv.Restore(before); len(problems) > 0 {
		t.Fatalf("restore: %v", problems)
	}
	c2 := connect(t, srv, logs)
	c2.ok("initialize", nil)
	if code, _ := c2.fail("session/permissions", map[string]any{"session_id": "s"}); code != CodeUnknownSession {
		t.Errorf("a closed session was rebuilt: %d", code)
	}
	if code, _ := c2.fail("session/open", map[string]any{"session_id": "s", "cwd": ws}); code != CodeConflict {
		t.Errorf("reopen a closed id after restart: %d", code)
	}
	if n := len(logs.Get("s").Records()); n != len(before[0].Records) {
		t.Errorf("the closed log was appended to: %d records, had %d", n, len(before[0].Records))
	}
	c2.ok("session/permissions", map[string]any{"session_id": "kept"})
}

// TestShutdownSettlesApprovals: shutdown settles a pending approval
// cancelled (recorded, withdrawn with $/cancelRequest): the call is
// denied, nothing waits for the answer timeout, and a later answer is
// expired.
func TestShutdownSettlesApprovals(t *testing.T) {
	c, _ := clientServer(t, Options{})
	ws, turn := c.openTurn("s", map[string]any{"preset": "auto"})
	out := t.TempDir()
	pending := c.start("exec", escalating("s", turn, "c1", ws, out))
	req := c.note("approval/requested")
	c.ok("shutdown", nil)
	if w := c.note("$/cancelRequest")["params"].(map[string]any); w["id"] != req["id"] {
		t.Errorf("$/cancelRequest %v", w)
	}
	if code, data := errorOf(t, "exec", c.wait(pending)); code != CodeDenied || data["outcome"] != "cancelled" || ran(out) {
		t.Errorf("%d %v ran=%v", code, data, ran(out))
	}
	if d := c.recordData("s", journal.TypeApprovalDecided); len(d) != 1 || d[0]["outcome"] != "cancelled" {
		t.Errorf("decided %v", d)
	}
	c.answer(req["id"], allowed("s", req["params"].(map[string]any)["approval_id"].(string)))
	c.refused(RefusedExpired)
}
