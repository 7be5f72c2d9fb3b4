package serve

import (
	"slices"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/journal"
)

// granular is Codex's {"granular": {...}} with the given categories true.
func granular(on ...string) map[string]any {
	g := map[string]any{"sandbox_approval": false, "rules": false, "mcp_elicitations": false}
	for _, c := range on {
		g[c] = true
	}
	return map[string]any{"granular": g}
}

// escalatingRO is escalating for a read-only session (where /tmp is not
// writable anyway, and exclude_tmp means nothing).
func escalatingRO(session, turn, callID, ws, out string) map[string]any {
	m := escalating(session, turn, callID, ws, out)
	delete(m, "exclude_tmp")
	delete(m, "exclude_tmpdir")
	return m
}

// TestGranularSession: a session opened under Codex's granular policy
// echoes it as given, derives custom, names the categories sbx has no
// prompt for, and survives a restart; sandbox_approval gates escalation
// prompts and request_permissions gates grants/apply, each denying without
// asking, with its own text, when false.
func TestGranularSession(t *testing.T) {
	r := newRace(escalate.AllowedOnce, true)
	c := newClient(t, Options{Answerer: r})
	ws := t.TempDir()
	got := c.ok("session/open", map[string]any{"session_id": "g", "cwd": ws, "sandbox_mode": "read-only", "environment_id": "e",
		"approval_policy": granular("rules", "mcp_elicitations")})
	g, _ := got["approval_policy"].(map[string]any)["granular"].(map[string]any)
	if len(g) != 5 || g["rules"] != true || g["sandbox_approval"] != false || g["request_permissions"] != false || got["preset"] != "custom" {
		t.Errorf("echo: %v", got)
	}
	if na, _ := got["approval_not_applying"].([]any); len(na) != 3 {
		t.Errorf("approval_not_applying: %v", got["approval_not_applying"])
	}
	turn := c.ok("turn/begin", map[string]any{"session_id": "g"})["turn_id"].(string)
	out := t.TempDir()
	// sandbox_approval false: the escalation is denied without asking.
	m := c.call("exec", escalatingRO("g", turn, "c1", ws, out))
	code, data := errorOf(t, "exec", m)
	if code != CodeDenied || data["outcome"] != "never" || ran(out) {
		t.Errorf("escalation under sandbox_approval false: %d %v", code, data)
	}
	if msg, _ := m["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "sandbox_approval is false") {
		t.Errorf("denial text: %v", m)
	}
	select {
	case q := <-r.asked:
		t.Errorf("asked under sandbox_approval false: %+v", q)
	default:
	}
	// request_permissions false: grants/apply yields the empty grant.
	if res := c.ok("grants/apply", grantOut("g", out)); res["withheld"] != withheldGranular {
		t.Errorf("grant under request_permissions false: %v", res)
	}
	if res := c.ok("exec", writeMarker("g", turn, "c2", ws, out)); res["exit_code"] == 0.0 || ran(out) {
		t.Fatalf("wrote with a withheld grant: %v", res)
	}

	// Both true: the escalation is asked, the grant stands.
	ws2 := t.TempDir()
	c.ok("session/open", map[string]any{"session_id": "h", "cwd": ws2, "sandbox_mode": "read-only", "environment_id": "e",
		"approval_policy": granular("sandbox_approval", "request_permissions")})
	turn2 := c.ok("turn/begin", map[string]any{"session_id": "h"})["turn_id"].(string)
	out2 := t.TempDir()
	ch := c.start("exec", escalatingRO("h", turn2, "c3", ws2, out2))
	<-r.asked
	r.release <- struct{}{}
	if m := c.wait(ch); m["error"] != nil || !ran(out2) {
		t.Errorf("asked escalation under sandbox_approval true: %v", m)
	}
	wantGrantStands(t, c, "h", turn2, ws2)

	// A restart rebuilds the granular policy exactly.
	c2 := restarted(t, c, "g")
	cur := c2.ok("session/permissions", map[string]any{"session_id": "g"})["current"].(map[string]any)
	if g2, _ := cur["approval_policy"].(map[string]any)["granular"].(map[string]any); g2["rules"] != true || g2["mcp_elicitations"] != true || g2["sandbox_approval"] != false {
		t.Errorf("restored: %v", cur)
	}
	// A preset replaces it, and a restart replays the change.
	c2.ok("session/set_preset", map[string]any{"session_id": "g", "key": "auto"})
	recs := c2.recordData("g", journal.TypeKnobChanged)
	if !slices.ContainsFunc(recs, func(d map[string]any) bool { return d["from"] == "granular:rules,mcp_elicitations" }) {
		t.Errorf("knob records: %v", recs)
	}
	bad := granular("sandbox_approval")
	bad["granular"].(map[string]any)["Rules"] = true
	if code, data := c.fail("session/open", map[string]any{"cwd": ws, "sandbox_mode": "read-only", "approval_policy": bad}); code != CodeInvalidParams || data["field"] != "approval_policy.granular.Rules" {
		t.Errorf("case variant in granular: %d %v", code, data)
	}
}
