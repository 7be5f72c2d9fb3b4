package sandbox

import (
	"encoding/json"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/report"
	"github.com/sbx-sandbox/sbx/internal/wire"
)

// roundTrip is how wireForm was made before it read req's fields directly
// (a JSON round trip dropping the null, false, 0 and "" keys): the oracle
// the direct form must match.
func roundTrip(t *testing.T, req *wire.Request) string {
	t.Helper()
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range m {
		switch string(v) {
		case "null", "false", "0", `""`:
			delete(m, k)
		}
	}
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestWireForm: the request a retry repeats holds the fields the caller
// set, zero values behind pointers and modes included, and nothing else.
func TestWireForm(t *testing.T) {
	ro, ws, with, never, empty := profiles.ReadOnly, profiles.WorkspaceWrite, profiles.WithAdditionalPermissions, profiles.ApprovalNever, ""
	add := profiles.New(profiles.FullNetwork(), nil, nil)
	for name, req := range map[string]*wire.Request{
		"empty":   {},
		"command": {Command: []string{"true"}, Cwd: "/w"},
		"every kind": {Command: []string{"sh", "-c", "x"}, Cwd: "/w", SandboxMode: &ro, EscalateTo: &ws, SandboxPermissions: &with,
			ApprovalPolicy: &never, WritableRoots: []string{}, Env: map[string]string{}, Stdin: &empty, AdditionalPermissions: &add,
			Limits: &report.LimitsRequest{}, TimeoutMS: 1500, ExcludeTmp: true, CapAdd: []string{"CAP_CHOWN"}, Justification: "j"},
	} {
		got, err := wireForm(req)
		if err != nil {
			t.Fatal(err)
		}
		if want := roundTrip(t, req); string(got) != want {
			t.Errorf("%s: got  %s\nwant %s", name, got, want)
		}
	}
}
