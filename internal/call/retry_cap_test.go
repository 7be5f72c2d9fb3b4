package call

import (
	"slices"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/profiles"
)

// TestRetryCapAdd: a retry that asks for a capability asks with
// with_additional_permissions and --cap-add (a capability the line already
// keeps is not repeated), and the exec request gets cap_add (merged with
// the request's own) and loses preauthorized.
func TestRetryCapAdd(t *testing.T) {
	with, empty := profiles.WithAdditionalPermissions, ""
	r := escalate.Retry{SandboxPermissions: &with, AdditionalPermissions: &profiles.Profile{}, Justification: &empty,
		CapAdd: []string{"CAP_DAC_OVERRIDE", "CAP_FOWNER"}}
	cl := runLine("--mode", "workspace-write", "--cap-add", "CAP_FOWNER", "--", "touch", "f")
	cl.ValueFlags["cap-add"] = true
	want := []string{"sbx", "run", "--mode", "workspace-write", "--cap-add", "CAP_FOWNER", "--sandbox-permissions", "with_additional_permissions",
		"--cap-add", "CAP_DAC_OVERRIDE", "--justification", "", "--", "touch", "f"}
	if got := cl.Argv(r, profiles.Profile{}); !slices.Equal(got, want) {
		t.Errorf("argv\n got %q\nwant %q", got, want)
	}
	req := retryRequest([]byte(`{"command":["touch","f"],"cwd":"/ws","cap_add":["CAP_FOWNER"],"preauthorized":true}`), r)
	if got, ok := req["cap_add"].([]string); !ok || !slices.Equal(got, []string{"CAP_FOWNER", "CAP_DAC_OVERRIDE"}) {
		t.Errorf("request cap_add %v", req["cap_add"])
	}
	if _, ok := req["preauthorized"]; ok || req["sandbox_permissions"] != "with_additional_permissions" {
		t.Errorf("request %v: want with_additional_permissions, no preauthorized", req)
	}
}
