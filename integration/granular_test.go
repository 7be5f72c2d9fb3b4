//go:build linux

package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExecGranular: sbx exec takes Codex's granular approval policy.
// sandbox_approval false refuses retry.request without asking
// (denied_by_policy, outcome never, its own text); sandbox_approval true
// asks the approver, and the call goes through. A case variant inside it
// is refused naming the field.
func TestExecGranular(t *testing.T) {
	_, res, out := deniedExec(t)
	retry, _ := res["retry"].(map[string]any)["request"].(map[string]any)
	if retry == nil {
		t.Fatalf("no retry.request: %v", res["retry"])
	}
	retry["justification"] = "write the output file"
	retry["approver"] = []string{approver(t)}
	retry["approval_policy"] = map[string]any{"granular": map[string]any{
		"sandbox_approval": false, "rules": true, "skill_approval": true, "request_permissions": true, "mcp_elicitations": true}}
	o := sbx(t, opts{args: []string{"exec"}, stdin: strings.NewReader(mustJSON(t, retry))})
	var refusal struct {
		Error       string                         `json:"error"`
		ErrorDetail struct{ Kind, Outcome string } `json:"error_detail"`
	}
	json.Unmarshal([]byte(o.stdout), &refusal)
	if o.code != 125 || refusal.ErrorDetail.Kind != "denied_by_policy" || refusal.ErrorDetail.Outcome != "never" ||
		!strings.Contains(o.stdout, "sandbox_approval is false") {
		t.Errorf("under granular sandbox_approval false: exit %d %s, want 125 denied_by_policy never naming sandbox_approval", o.code, o.stdout)
	}
	wantAbsent(out)(t)

	bad := map[string]any{"sandbox_approval": true, "rules": false, "mcp_elicitations": false, "Sandbox_Approval": true}
	retry["approval_policy"] = map[string]any{"granular": bad}
	o = sbx(t, opts{args: []string{"exec"}, stdin: strings.NewReader(mustJSON(t, retry))})
	if o.code != 125 || !strings.Contains(o.stdout+o.stderr, "approval_policy.granular.Sandbox_Approval") {
		t.Errorf("a case variant in granular: exit %d %s %s", o.code, o.stdout, o.stderr)
	}
	wantAbsent(out)(t)

	retry["approval_policy"] = map[string]any{"granular": map[string]any{"sandbox_approval": true, "rules": false, "mcp_elicitations": false}}
	again := execOK(t, retry)
	if via := again["permissions"].(map[string]any)["via"]; via != "approval" {
		t.Errorf("permissions.via %v, want approval", via)
	}
	wantContent(out, "x\n")(t)
}

// TestServeChildGrant: through the real server, a delegated child (pinned
// to never) gains nothing through grants/apply: the result is the empty
// turn grant with withheld, and the child's next exec still cannot write
// outside the workspace; its parent's own grant (on-request) still
// applies. A connection speaking Codex's names sends Codex's response.
func TestServeChildGrant(t *testing.T) {
	s := startServer(t)
	s.ok("initialize", map[string]any{"capabilities": map[string]any{"grant_key": "permissions"}})
	ws := workspace(t)
	pturn := s.session("p", ws, map[string]any{"preset": "auto", "environment_id": "e"})
	out := outsidePath(t)
	if err := os.Mkdir(out, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(out, 0o777)
	grant := func(session string) map[string]any {
		return s.ok("grants/apply", map[string]any{"session_id": session, "environment_id": "e",
			"requested": map[string]any{"file_system": map[string]any{"write": []string{out}}},
			"response":  map[string]any{"permissions": map[string]any{"file_system": map[string]any{"write": []string{out}}}, "scope": "session", "strict_auto_review": false}})
	}
	write := func(session, turn, callID string) map[string]any {
		p := execParams(session, turn, callID, ws, "sh", "-c", "echo out > "+out+"/f")
		p["environment_id"] = "e"
		return s.ok("exec", p)
	}
	child := s.ok("session/open", map[string]any{"session_id": "k", "cwd": ws, "parent_session_id": "p", "environment_id": "e"})
	if child["approval_policy"] != "never" {
		t.Fatalf("child: %v", child)
	}
	kturn := s.ok("turn/begin", map[string]any{"session_id": "k"})["turn_id"].(string)
	if g := grant("k"); g["withheld"] == nil || g["scope"] != "turn" {
		t.Errorf("the child's grant: %v", g)
	}
	if res := write("k", kturn, "c1"); res["exit_code"] == 0.0 {
		t.Errorf("the child wrote with a grant it applied: %v", res)
	}
	if _, err := os.Stat(filepath.Join(out, "f")); err == nil {
		t.Fatal("the child wrote outside the workspace")
	}
	if g := grant("p"); g["withheld"] != nil {
		t.Errorf("the parent's grant: %v", g)
	}
	if res := write("p", pturn, "c2"); res["exit_code"] != 0.0 {
		t.Errorf("the parent's stored grant did not apply: %v", res)
	}
}
