package serve

import (
	"fmt"
	"github.com/sbx-sandbox/sbx/internal/journal"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// restarted is a client of a new server restored from the log c's server
// wrote for session id, as if that one had died.
func restarted(t *testing.T, c *client, id string) *client {
	t.Helper()
	before := replayed(c.logs, id)
	logs := &MemLogs{}
	for _, rec := range before[0].Records {
		logs.Get(id).Append(rec)
	}
	srv := New(Options{OpenLog: logs.Open, Logf: t.Logf})
	if problems := srv.Restore(before); len(problems) > 0 {
		t.Fatalf("restore: %v", problems)
	}
	c2 := connect(t, srv, logs)
	c2.ok("initialize", nil)
	return c2
}

// wantGrantStands: session's grants/apply of a write outside stands, and
// its next exec writes there.
func wantGrantStands(t *testing.T, c *client, session, turn, ws string) {
	t.Helper()
	out := t.TempDir()
	if got := c.ok("grants/apply", grantOut(session, out)); got["withheld"] != nil {
		t.Errorf("%s: the grant was withheld: %v", session, got)
	}
	if res := c.ok("exec", writeMarker(session, turn, "stands", ws, out)); res["exit_code"] != 0.0 || !ran(out) {
		t.Fatalf("%s: the stored grant did not apply: %v", session, res)
	}
}

// grantOut is a grants/apply of a session-scoped write to out.
func grantOut(session, out string) map[string]any {
	return map[string]any{"session_id": session, "environment_id": "e",
		"requested": map[string]any{"file_system": map[string]any{"write": []string{out}}},
		"response":  map[string]any{"granted": map[string]any{"file_system": map[string]any{"write": []string{out}}}, "scope": "session"}}
}

// writeMarker is an exec of session's turn that writes out/marker.
func writeMarker(session, turn, call, ws, out string) map[string]any {
	return map[string]any{"session_id": session, "turn_id": turn, "call_id": call, "cwd": ws, "environment_id": "e",
		"command": []string{"sh", "-c", "echo x > " + out + "/marker"}}
}

// TestGrantUnderNever: under never, grants/apply yields the empty turn
// grant Codex yields for request_permissions (seed 003 §1.2), says so, and
// records it so that a restarted server replays no grant either; a
// delegated child (pinned to never, seed 000 §12) so gains nothing. An
// asking session's grant keeps working.
func TestGrantUnderNever(t *testing.T) {
	c := newClient(t, Options{})
	ws, turn := c.openTurn("n", map[string]any{"sandbox_mode": "read-only", "approval_policy": "never", "environment_id": "e"})
	out := t.TempDir()
	got := c.ok("grants/apply", grantOut("n", out))
	if got["scope"] != "turn" || got["withheld"] != withheldNever || got["turn_id"] != turn {
		t.Errorf("grant under never: %v", got)
	}
	if p, _ := got["permissions"].(map[string]any); len(p) != 0 && (p["file_system"] != nil || p["network"] != nil) {
		t.Errorf("grant under never has permissions: %v", got)
	}
	res := c.ok("exec", writeMarker("n", turn, "c1", ws, out))
	if res["exit_code"] == 0.0 || ran(out) {
		t.Fatalf("a never session wrote with a grant it applied: %v", res)
	}
	if d := c.recordData("n", journal.TypeGrantApplied); len(d) != 1 || d[0]["withheld"] != withheldNever {
		t.Errorf("recorded %v, want the withheld grant", d)
	}
	// A malformed response stays an error under never.
	bad := grantOut("n", out)
	bad["response"] = map[string]any{"granted": map[string]any{}, "scope": "forever"}
	if code, data := c.fail("grants/apply", bad); code != CodeInvalidParams || data["field"] != "response.scope" {
		t.Errorf("bad scope under never: %d %v", code, data)
	}

	// After a restart the log replays no grant.
	c2 := restarted(t, c, "n")
	turn2 := c2.ok("turn/begin", map[string]any{"session_id": "n"})["turn_id"].(string)
	if res := c2.ok("exec", writeMarker("n", turn2, "c2", ws, out)); res["exit_code"] == 0.0 || ran(out) {
		t.Fatalf("a replayed never session wrote with a grant: %v", res)
	}

	// A delegated child gains nothing through grants/apply; its parent,
	// which asks, keeps the grant it applies.
	pws, pturn := c.openTurn("p", map[string]any{"preset": "read-only", "environment_id": "e"})
	child := c.ok("session/open", map[string]any{"session_id": "k", "cwd": pws, "parent_session_id": "p", "environment_id": "e"})
	if child["approval_policy"] != "never" {
		t.Fatalf("child: %v", child)
	}
	kturn := c.ok("turn/begin", map[string]any{"session_id": "k"})["turn_id"].(string)
	kout := t.TempDir()
	if got := c.ok("grants/apply", grantOut("k", kout)); got["withheld"] != withheldNever {
		t.Errorf("child's grant: %v", got)
	}
	if res := c.ok("exec", writeMarker("k", kturn, "c3", pws, kout)); res["exit_code"] == 0.0 || ran(kout) {
		t.Fatalf("a child wrote with a grant it applied: %v", res)
	}
	wantGrantStands(t, c, "p", pturn, pws)
}

// TestGrantScopeAndDenyRead: stored grants belong to the session that
// applied them (a new session naming the same environment_id starts with
// none), and a read granted inside a requested deny_read is shown in the
// grant but never effective (docs/serve.md, Grants).
func TestGrantScopeAndDenyRead(t *testing.T) {
	c := newClient(t, Options{})
	ws, turn := c.openTurn("a", map[string]any{"preset": "read-only", "environment_id": "e"})
	out := t.TempDir()
	c.ok("grants/apply", grantOut("a", out))
	if res := c.ok("exec", writeMarker("a", turn, "c1", ws, out)); res["exit_code"] != 0.0 || !ran(out) {
		t.Fatalf("the granted session could not write: %v", res)
	}
	if err := os.Remove(filepath.Join(out, "marker")); err != nil {
		t.Fatal(err)
	}
	ws2, turn2 := c.openTurn("b", map[string]any{"preset": "read-only", "environment_id": "e"})
	if res := c.ok("exec", writeMarker("b", turn2, "c2", ws2, out)); res["exit_code"] == 0.0 || ran(out) {
		t.Fatalf("a new session with the same environment_id wrote with another session's grant: %v", res)
	}

	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.MkdirAll(secret, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(secret, "f"), []byte("hidden\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := c.ok("grants/apply", map[string]any{"session_id": "b", "environment_id": "e",
		"requested": map[string]any{"file_system": map[string]any{"read": []string{dir}, "deny_read": []string{secret}}},
		"response":  map[string]any{"granted": map[string]any{"file_system": map[string]any{"read": []string{secret}}}, "scope": "turn"}})
	fs, _ := got["permissions"].(map[string]any)["file_system"].(map[string]any)
	if r, _ := fs["read"].([]any); len(r) != 1 || r[0] != secret {
		t.Errorf("the granted read is not shown: %v", got)
	}
	res := c.ok("exec", map[string]any{"session_id": "b", "turn_id": turn2, "call_id": "c3", "cwd": ws2, "environment_id": "e",
		"command": []string{"cat", filepath.Join(secret, "f")}})
	if res["exit_code"] == 0.0 || strings.Contains(res["stdout"].(string), "hidden") {
		t.Errorf("a read granted inside a requested deny_read was effective: %v", res)
	}
}

// TestGrantKey: a connection that says at initialize that it speaks
// Codex's names (capabilities.grant_key "permissions") sends Codex's
// RequestPermissionsResponse unchanged; within that connection "granted"
// is an unknown field, within a default one "permissions" is; the choice
// cannot change on the connection.
func TestGrantKey(t *testing.T) {
	c := newClient(t, Options{})
	ws, turn := c.openTurn("s", map[string]any{"preset": "read-only", "environment_id": "e"})
	codex := connect(t, c.srv, c.logs)
	caps := codex.ok("initialize", map[string]any{"capabilities": map[string]any{"grant_key": "permissions"}})["capabilities"].(map[string]any)
	if caps["grant_key"] != "permissions" {
		t.Errorf("initialize capabilities: %v", caps)
	}
	out := t.TempDir()
	codexParams := map[string]any{"session_id": "s", "environment_id": "e",
		"requested": map[string]any{"file_system": map[string]any{"write": []string{out}}},
		"response":  map[string]any{"permissions": map[string]any{"file_system": map[string]any{"write": []string{out}}}, "scope": "turn", "strict_auto_review": false}}
	// The other spelling is refused on each connection, and grants nothing.
	if code, data := c.fail("grants/apply", codexParams); code != CodeInvalidParams || data["field"] != "response.permissions" {
		t.Errorf("permissions on a granted connection: %d %v", code, data)
	}
	if code, data := codex.fail("grants/apply", grantOut("s", out)); code != CodeInvalidParams || data["field"] != "response.granted" {
		t.Errorf("granted on a permissions connection: %d %v", code, data)
	}
	both := grantOut("s", out)
	both["response"].(map[string]any)["permissions"] = both["response"].(map[string]any)["granted"]
	for _, conn := range []*client{c, codex} {
		if code, _ := conn.fail("grants/apply", both); code != CodeInvalidParams {
			t.Errorf("both spellings at once: %d", code)
		}
	}
	if res := c.ok("exec", writeMarker("s", turn, "c0", ws, out)); res["exit_code"] == 0.0 || ran(out) {
		t.Fatalf("a refused spelling granted: %v", res)
	}
	got := codex.ok("grants/apply", codexParams)
	if got["scope"] != "turn" || got["withheld"] != nil {
		t.Errorf("Codex's response: %v", got)
	}
	if res := codex.ok("exec", writeMarker("s", turn, "c1", ws, out)); res["exit_code"] != 0.0 || !ran(out) {
		t.Fatalf("Codex's grant did not apply: %v", res)
	}
	// Unknown fields of the grant are named under the connection's key.
	lenient := map[string]any{"session_id": "s", "environment_id": "e",
		"requested": map[string]any{"file_system": map[string]any{"write": []string{out}}},
		"response":  map[string]any{"permissions": map[string]any{"macos": map[string]any{}}, "scope": "turn"}}
	if got := codex.ok("grants/apply", lenient); fmt.Sprint(got["ignored"]) != "[permissions.macos]" {
		t.Errorf("ignored: %v", got["ignored"])
	}
	// Fixed at the first initialize: repeating it is fine, changing it is not.
	codex.ok("initialize", map[string]any{"capabilities": map[string]any{"grant_key": "permissions"}})
	if code, data := codex.fail("initialize", map[string]any{"capabilities": map[string]any{"grant_key": "granted"}}); code != CodeInvalidParams || data["field"] != "capabilities.grant_key" {
		t.Errorf("changed grant key: %d %v", code, data)
	}
	if code, data := c.fail("initialize", map[string]any{"capabilities": map[string]any{"grant_key": "permissions"}}); code != CodeInvalidParams || data["field"] != "capabilities.grant_key" {
		t.Errorf("changed the default grant key: %d %v", code, data)
	}
	d := connect(t, c.srv, c.logs)
	for _, bad := range []any{"Permissions", "codex", true} {
		if code, data := d.fail("initialize", map[string]any{"capabilities": map[string]any{"grant_key": bad}}); code != CodeInvalidParams || data["field"] != "capabilities.grant_key" {
			t.Errorf("grant_key %v: %d %v", bad, code, data)
		}
	}
}
