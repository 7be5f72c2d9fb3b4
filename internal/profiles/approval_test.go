package profiles

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// TestGranularPolicy: Codex's externally tagged granular policy is read
// strictly (exact keys, no duplicates, the three required categories,
// skill_approval and request_permissions false by default), echoed as
// given, and round-trips through its CLI spelling; a named policy is
// unchanged.
func TestGranularPolicy(t *testing.T) {
	type req struct {
		P *ApprovalPolicy `json:"approval_policy"`
	}
	good := []struct {
		name, in string
		want     Granular
	}{
		{"defaults", `{"sandbox_approval": true, "rules": false, "mcp_elicitations": false}`, Granular{SandboxApproval: true}},
		{"all", `{"sandbox_approval": true, "rules": true, "skill_approval": true, "request_permissions": true, "mcp_elicitations": true}`,
			Granular{true, true, true, true, true}},
		{"none", `{"sandbox_approval": false, "rules": false, "skill_approval": false, "request_permissions": false, "mcp_elicitations": false}`, Granular{}},
		{"request permissions only", `{"sandbox_approval": false, "rules": false, "request_permissions": true, "mcp_elicitations": false}`, Granular{RequestPermissions: true}},
	}
	for _, tt := range good {
		t.Run(tt.name, func(t *testing.T) {
			var r req
			if err := strictjson.Decode([]byte(`{"approval_policy": {"granular": `+tt.in+`}}`), &r); err != nil {
				t.Fatal(err)
			}
			g, ok := r.P.Granular()
			if !ok || g != tt.want {
				t.Fatalf("decoded %v (%+v), want %+v", *r.P, g, tt.want)
			}
			if *r.P == ApprovalNever || *r.P == ApprovalOnRequest {
				t.Fatal("a granular policy equals a named one")
			}
			out, err := json.Marshal(r.P)
			var back struct {
				Granular map[string]bool `json:"granular"`
			}
			if err != nil || json.Unmarshal(out, &back) != nil || len(back.Granular) != 5 {
				t.Fatalf("echo %s, %v", out, err)
			}
			var again ApprovalPolicy
			if err := strictjson.Decode(out, &again); err != nil || again != *r.P {
				t.Errorf("echo %s decodes to %v, %v", out, again, err)
			}
			cli, err := ParseApprovalPolicy(r.P.String())
			if err != nil || cli != *r.P {
				t.Errorf("CLI spelling %q parses to %v, %v", r.P.String(), cli, err)
			}
			if Derive(WorkspaceWrite, *r.P, "auto") != "custom" {
				t.Error("a granular policy matched a preset")
			}
		})
	}
	bad := []struct{ name, in, field string }{
		{"missing required", `{"granular": {"sandbox_approval": true, "rules": true}}`, "approval_policy.granular.mcp_elicitations"},
		{"null required", `{"granular": {"sandbox_approval": null, "rules": true, "mcp_elicitations": true}}`, "approval_policy.granular.sandbox_approval"},
		{"case variant", `{"granular": {"Sandbox_approval": true, "sandbox_approval": false, "rules": true, "mcp_elicitations": true}}`, "approval_policy.granular.Sandbox_approval"},
		{"duplicate", `{"granular": {"sandbox_approval": false, "rules": true, "mcp_elicitations": true, "sandbox_approval": true}}`, "approval_policy.granular.sandbox_approval"},
		{"unknown category", `{"granular": {"sandbox_approval": true, "rules": true, "mcp_elicitations": true, "network": true}}`, "approval_policy.granular.network"},
		{"second tag", `{"granular": {"sandbox_approval": true, "rules": true, "mcp_elicitations": true}, "never": {}}`, "approval_policy.never"},
		{"case tag", `{"Granular": {"sandbox_approval": true, "rules": true, "mcp_elicitations": true}}`, "approval_policy.Granular"},
		{"string category", `{"granular": {"sandbox_approval": "yes", "rules": true, "mcp_elicitations": true}}`, "approval_policy.granular.sandbox_approval"},
		{"empty", `{}`, "approval_policy.granular"},
		{"granular as a string", `"granular"`, "approval_policy"},
		{"CLI spelling in JSON", `"granular:sandbox_approval"`, "approval_policy"},
		{"number", `3`, "approval_policy"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			var r req
			err := strictjson.Decode([]byte(`{"approval_policy": `+tt.in+`}`), &r)
			if err == nil || !strings.HasPrefix(err.Error(), tt.field+":") {
				t.Errorf("err = %v, want one naming %s", err, tt.field)
			}
		})
	}
	for _, s := range []string{"granular:rules,rules", "granular:network", "granular", "granular:Rules", "granular:sandbox_approval,"} {
		if _, err := ParseApprovalPolicy(s); err == nil {
			t.Errorf("CLI spelling %q accepted", s)
		}
	}
	if p, err := ParseApprovalPolicy("granular:"); err != nil || p.String() != "granular:" {
		t.Errorf("granular: parses to %v, %v", p, err)
	}
	if _, ok := ApprovalPolicy(9).Granular(); ok {
		t.Error("an invalid policy reads as granular")
	}
	if _, err := ApprovalPolicy(9).MarshalJSON(); err == nil {
		t.Error("an invalid policy marshalled")
	}
}
