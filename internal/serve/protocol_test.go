package serve

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/journal"
	"github.com/sbx-sandbox/sbx/internal/profiles"
)

// TestProtocolErrors: every error has its stable code and kind, and the
// connection goes on after each.
func TestProtocolErrors(t *testing.T) {
	c := startClient(t, Options{MaxMessage: 4096})
	code, data := errorOf(t, "before initialize", c.call("session/open", map[string]any{"cwd": "/"}))
	if code != CodeNotInitialized || data["kind"] != KindNotInitialized {
		t.Errorf("before initialize: %d %v", code, data)
	}
	c.ok("initialize", map[string]any{"client": map[string]any{"name": "test"}})
	ws := t.TempDir()
	c.ok("session/open", map[string]any{"session_id": "live", "cwd": ws})
	for _, tt := range []struct {
		name, line, id string
		code           int
		kind, field    string
	}{
		{name: "malformed line", line: `{"jsonrpc": "2.0", "id": 1, `, id: "<nil>", code: CodeParse, kind: KindParse},
		{name: "not an object", line: `[1,2]`, id: "<nil>", code: CodeInvalidRequest, kind: KindInvalidRequest},
		{name: "no jsonrpc", line: `{"id": 7, "method": "initialize"}`, id: "7", code: CodeInvalidRequest, kind: KindInvalidRequest},
		{name: "unknown envelope key", line: `{"jsonrpc": "2.0", "id": 8, "method": "initialize", "extra": 1}`, id: "8", code: CodeInvalidRequest, kind: KindInvalidRequest},
		{name: "duplicate key", line: `{"jsonrpc": "2.0", "id": 9, "method": "initialize", "method": "exit"}`, id: "9", code: CodeInvalidRequest, kind: KindInvalidRequest},
		{name: "unknown method", line: `{"jsonrpc": "2.0", "id": 10, "method": "nope"}`, id: "10", code: CodeMethodNotFound, kind: KindMethodNotFound},
		{name: "missing cwd", line: `{"jsonrpc": "2.0", "id": 11, "method": "session/open", "params": {}}`, id: "11", code: CodeInvalidParams, kind: KindInvalidParams, field: "cwd"},
		{name: "unknown param", line: `{"jsonrpc": "2.0", "id": 12, "method": "session/open", "params": {"cwd": "/", "sandbox_Mode": "read-only"}}`, id: "12", code: CodeInvalidParams, kind: KindInvalidParams, field: "sandbox_Mode"},
		{name: "bad mode", line: `{"jsonrpc": "2.0", "id": 13, "method": "session/open", "params": {"cwd": "/", "sandbox_mode": "wide-open", "approval_policy": "never"}}`, id: "13", code: CodeInvalidParams, kind: KindInvalidParams, field: "sandbox_mode"},
		{name: "custom preset", line: `{"jsonrpc": "2.0", "id": 14, "method": "session/open", "params": {"cwd": "/", "preset": "custom"}}`, id: "14", code: CodeInvalidParams, kind: KindInvalidParams, field: "preset"},
		{name: "preset and mode", line: `{"jsonrpc": "2.0", "id": 15, "method": "session/open", "params": {"cwd": "/", "preset": "auto", "sandbox_mode": "read-only"}}`, id: "15", code: CodeInvalidParams, kind: KindInvalidParams, field: "preset"},
		{name: "unknown session", line: `{"jsonrpc": "2.0", "id": 16, "method": "turn/begin", "params": {"session_id": "nope"}}`, id: "16", code: CodeUnknownSession, kind: KindUnknownSession},
		{name: "too large", line: `{"jsonrpc": "2.0", "id": 17, "method": "initialize", "params": {"x": "` + strings.Repeat("x", 8192) + `"}}`, id: "<nil>", code: CodeTooLarge, kind: KindTooLarge},
		{name: "missing cwd dir", line: `{"jsonrpc": "2.0", "id": 18, "method": "session/open", "params": {"cwd": "` + ws + `/missing"}}`, id: "18", code: CodeInvalidParams, kind: KindInvalidParams, field: "cwd"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// "<nil>" is how the client files a response with a null id.
			m := c.wait(c.sendLine(tt.id, tt.line))
			code, data := errorOf(t, tt.name, m)
			if code != tt.code || data["kind"] != tt.kind {
				t.Errorf("got code %d kind %v, want %d %s: %v", code, data["kind"], tt.code, tt.kind, m)
			}
			if tt.field != "" && data["field"] != tt.field {
				t.Errorf("field %v, want %s", data["field"], tt.field)
			}
			// The connection goes on.
			c.ok("session/permissions", map[string]any{"session_id": "live"})
		})
	}
}

func TestSessionPinnedAtOpen(t *testing.T) {
	def := profiles.Builtin().Default()
	c := newClient(t, Options{Defaults: func() profiles.Preset { return def }})
	ws := t.TempDir()
	got := c.ok("session/open", map[string]any{"session_id": "a", "cwd": ws})
	if got["sandbox_mode"] != "workspace-write" || got["approval_policy"] != "on-request" || got["preset"] != "auto" {
		t.Fatalf("open: %v", got)
	}
	def, _ = profiles.Builtin().Select("read-only")
	got = c.ok("session/permissions", map[string]any{"session_id": "a"})["current"].(map[string]any)
	if got["sandbox_mode"] != "workspace-write" {
		t.Errorf("a changed default reached an open session: %v", got)
	}
	got = c.ok("session/open", map[string]any{"session_id": "b", "cwd": ws})
	if got["sandbox_mode"] != "read-only" {
		t.Errorf("a new session did not get the new default: %v", got)
	}
	if code, data := c.fail("session/open", map[string]any{"session_id": "a", "cwd": ws}); code != CodeConflict || data["kind"] != KindConflict {
		t.Errorf("reopen: %d %v", code, data)
	}
}

// TestSetPreset: one intent record, then a record only for each knob that
// really changes; custom is derived, never selectable.
func TestSetPreset(t *testing.T) {
	c := newClient(t, Options{})
	c.ok("session/open", map[string]any{"session_id": "s", "cwd": t.TempDir(), "preset": "auto"})
	got := c.ok("session/set_preset", map[string]any{"session_id": "s", "key": "read-only"})
	if got["sandbox_mode"] != "read-only" || got["approval_policy"] != "on-request" || got["preset"] != "read-only" {
		t.Errorf("set read-only: %v", got)
	}
	c.ok("session/set_preset", map[string]any{"session_id": "s", "key": "read-only"})
	c.ok("session/set_preset", map[string]any{"session_id": "s", "key": "full-access"})
	want := []string{journal.TypeSessionOpened, journal.TypePresetIntent, journal.TypeKnobChanged, journal.TypePresetIntent, journal.TypePresetIntent, journal.TypeKnobChanged, journal.TypeKnobChanged}
	if got := c.records("s"); !slices.Equal(got, want) {
		t.Errorf("records %v, want %v", got, want)
	}
	knobs := c.recordData("s", journal.TypeKnobChanged)
	if knobs[0]["knob"] != "sandbox_mode" || knobs[0]["from"] != "workspace-write" || knobs[0]["to"] != "read-only" {
		t.Errorf("first knob record %v", knobs[0])
	}
	if code, data := c.fail("session/set_preset", map[string]any{"session_id": "s", "key": "custom"}); code != CodeInvalidParams || data["field"] != "key" {
		t.Errorf("custom: %d %v", code, data)
	}
	perms := c.ok("session/permissions", map[string]any{"session_id": "s"})
	if len(perms["presets"].([]any)) != 3 || perms["default"] != "auto" || perms["current"].(map[string]any)["preset"] != "full-access" {
		t.Errorf("permissions: %v", perms)
	}
}

func TestTurns(t *testing.T) {
	c := newClient(t, Options{})
	c.ok("session/open", map[string]any{"session_id": "s", "cwd": t.TempDir()})
	if code, data := c.fail("exec", map[string]any{"session_id": "s", "turn_id": "t-x", "call_id": "c", "command": []string{"true"}, "cwd": "/"}); code != CodeNoOpenTurn || data["kind"] != KindNoOpenTurn {
		t.Errorf("exec without a turn: %d %v", code, data)
	}
	turn := c.ok("turn/begin", map[string]any{"session_id": "s"})["turn_id"].(string)
	if code, _ := c.fail("turn/begin", map[string]any{"session_id": "s"}); code != CodeConflict {
		t.Errorf("second turn/begin: %d", code)
	}
	if code, _ := c.fail("turn/end", map[string]any{"session_id": "s", "turn_id": "t-other"}); code != CodeNoOpenTurn {
		t.Errorf("turn/end of another turn: %d", code)
	}
	c.ok("turn/end", map[string]any{"session_id": "s", "turn_id": turn})
	if code, _ := c.fail("turn/end", map[string]any{"session_id": "s", "turn_id": turn}); code != CodeNoOpenTurn {
		t.Errorf("turn/end twice: %d", code)
	}
	if got, want := c.records("s"), []string{journal.TypeSessionOpened, journal.TypeTurnBegun, journal.TypeTurnEnded}; !slices.Equal(got, want) {
		t.Errorf("records %v, want %v", got, want)
	}
}

func TestShutdownExit(t *testing.T) {
	c := newClient(t, Options{})
	c.ok("shutdown", map[string]any{})
	if code, data := c.fail("session/open", map[string]any{"cwd": "/"}); code != CodeShuttingDown || data["kind"] != KindShuttingDown {
		t.Errorf("after shutdown: %d %v", code, data)
	}
	c.notify("exit", nil)
	if err := <-c.done; err != nil {
		t.Errorf("exit after shutdown: %v", err)
	}
	c = newClient(t, Options{})
	c.notify("exit", nil)
	if err := <-c.done; !errors.Is(err, ErrExitWithoutShutdown) {
		t.Errorf("exit without shutdown: %v", err)
	}
}

// TestLogFailureRefuses: what cannot be recorded is not done.
func TestLogFailureRefuses(t *testing.T) {
	failing := &MemLog{Fail: errors.New("disk full")}
	c := newClient(t, Options{OpenLog: func(string) (Log, error) { return failing, nil }})
	code, data := c.fail("session/open", map[string]any{"session_id": "s", "cwd": t.TempDir()})
	if code != CodeInternal || data["kind"] != KindInternal {
		t.Errorf("open with a failing log: %d %v", code, data)
	}
	if code, _ := c.fail("turn/begin", map[string]any{"session_id": "s"}); code != CodeUnknownSession {
		t.Errorf("a session whose opening was not recorded is open: %d", code)
	}
}

// TestChildSession: a child takes only the parent's explicit session
// override, never its grants, and its approval policy is pinned to never.
func TestChildSession(t *testing.T) {
	c := newClient(t, Options{})
	ws := t.TempDir()
	c.ok("session/open", map[string]any{"session_id": "p", "cwd": ws, "preset": "read-only"})
	c.ok("turn/begin", map[string]any{"session_id": "p"})
	out := t.TempDir()
	c.ok("grants/apply", map[string]any{"session_id": "p", "environment_id": "e",
		"requested": map[string]any{"file_system": map[string]any{"write": []string{out}}},
		"response":  map[string]any{"granted": map[string]any{"file_system": map[string]any{"write": []string{out}}}, "scope": "session"}})
	child := c.ok("session/open", map[string]any{"session_id": "k", "cwd": ws, "parent_session_id": "p", "environment_id": "e"})
	if child["sandbox_mode"] != "read-only" || child["approval_policy"] != "never" {
		t.Errorf("child of an explicit read-only parent: %v", child)
	}
	turn := c.ok("turn/begin", map[string]any{"session_id": "k"})["turn_id"].(string)
	res := c.ok("exec", map[string]any{"session_id": "k", "turn_id": turn, "call_id": "c", "cwd": ws,
		"command": []string{"sh", "-c", "echo x > " + out + "/f"}})
	if res["exit_code"] == 0.0 || ran(out) {
		t.Errorf("the child wrote with its parent's grant: %v", res)
	}
	if code, data := c.fail("session/set_preset", map[string]any{"session_id": "k", "key": "auto"}); code != CodeInvalidParams || data["field"] != "key" {
		t.Errorf("a child selected an asking preset: %d %v", code, data)
	}
	if code, data := c.fail("session/open", map[string]any{"cwd": ws, "parent_session_id": "p", "preset": "full-access"}); code != CodeInvalidParams || data["field"] != "preset" {
		t.Errorf("a child chose its own preset: %d %v", code, data)
	}
	if code, data := c.fail("session/open", map[string]any{"cwd": ws, "parent_session_id": "nope"}); code != CodeUnknownSession || data["field"] != "parent_session_id" {
		t.Errorf("unknown parent: %d %v", code, data)
	}
	// A parent under the deployment default has no override to hand down:
	// the child gets the default.
	c.ok("session/open", map[string]any{"session_id": "p2", "cwd": ws})
	child = c.ok("session/open", map[string]any{"cwd": ws, "parent_session_id": "p2"})
	if child["sandbox_mode"] != "workspace-write" || child["approval_policy"] != "never" {
		t.Errorf("child of a default parent: %v", child)
	}
}

// TestTurnGrantEndsWithTurn: a turn grant applies inside its turn only.
func TestTurnGrantEndsWithTurn(t *testing.T) {
	c := newClient(t, Options{})
	ws, turn := c.openTurn("s", map[string]any{"preset": "auto"})
	out := t.TempDir()
	grant := func() {
		c.ok("grants/apply", map[string]any{"session_id": "s",
			"requested": map[string]any{"file_system": map[string]any{"write": []string{out}}},
			"response":  map[string]any{"granted": map[string]any{"file_system": map[string]any{"write": []string{out, "/etc"}}}, "scope": "turn"}})
	}
	grant()
	write := func(turn, id string) float64 {
		return c.ok("exec", map[string]any{"session_id": "s", "turn_id": turn, "call_id": id, "cwd": ws, "exclude_tmp": true, "exclude_tmpdir": true,
			"command": []string{"sh", "-c", "echo x > " + out + "/f && ! echo y > /etc/sbx-serve-test"}})["exit_code"].(float64)
	}
	if code := write(turn, "c1"); code != 0 {
		t.Errorf("the turn grant did not apply (or /etc was granted beyond the request): exit %v", code)
	}
	c.ok("turn/end", map[string]any{"session_id": "s", "turn_id": turn})
	if code, _ := c.fail("grants/apply", map[string]any{"session_id": "s", "requested": map[string]any{"network": map[string]any{"enabled": true}},
		"response": map[string]any{"granted": map[string]any{}, "scope": "turn"}}); code != CodeNoOpenTurn {
		t.Errorf("a turn grant outside a turn: %d", code)
	}
	turn2 := c.ok("turn/begin", map[string]any{"session_id": "s"})["turn_id"].(string)
	os.Remove(filepath.Join(out, "f"))
	if code := write(turn2, "c2"); code == 0 {
		t.Error("the turn grant outlived its turn")
	}
}

// TestGrantsApplyErrors: the fields of a bad round trip are named inside
// params.
func TestGrantsApplyErrors(t *testing.T) {
	c := newClient(t, Options{})
	c.openTurn("s", map[string]any{})
	req := map[string]any{"network": map[string]any{"enabled": true}}
	for _, tt := range []struct {
		name   string
		params map[string]any
		field  string
	}{
		{"bad scope", map[string]any{"requested": req, "response": map[string]any{"granted": req, "scope": "forever"}}, "response.scope"},
		{"unknown response field", map[string]any{"requested": req, "response": map[string]any{"granted": req, "permissions": req}}, "response.permissions"},
		{"empty request", map[string]any{"requested": map[string]any{}, "response": map[string]any{"granted": req}}, "requested"},
		{"bad requested path", map[string]any{"requested": map[string]any{"file_system": map[string]any{"write": []string{""}}}, "response": map[string]any{"granted": req}}, "requested.file_system.write[0]"},
		{"no response", map[string]any{"requested": req}, "response"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.params["session_id"] = "s"
			code, data := c.fail("grants/apply", tt.params)
			if code != CodeInvalidParams || data["field"] != tt.field {
				t.Errorf("got %d %v, want invalid_params naming %s", code, data, tt.field)
			}
		})
	}
	// Unknown fields of granted are the client's, skipped and listed.
	got := c.ok("grants/apply", map[string]any{"session_id": "s", "requested": req,
		"response": map[string]any{"granted": map[string]any{"network": map[string]any{"enabled": true}, "macos": map[string]any{}}}})
	if ig, _ := got["ignored"].([]any); len(ig) != 1 || ig[0] != "granted.macos" {
		t.Errorf("ignored: %v", got)
	}
}
