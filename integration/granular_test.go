package integration

import (
	"encoding/json"
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
