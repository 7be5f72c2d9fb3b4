package profiles

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestEnumsRefuseUnknownSpellings(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
	}{
		{"approval", func() error { _, err := ParseApprovalPolicy("always"); return err }()},
		{"approval case", func() error { _, err := ParseApprovalPolicy("Never"); return err }()},
		{"sandbox_permissions", func() error { _, err := ParseSandboxPermissions("escalate"); return err }()},
		{"scope", func() error { _, err := ParseScope("forever"); return err }()},
		{"scope empty", func() error { _, err := ParseScope(""); return err }()},
	} {
		if tt.err == nil || !strings.Contains(tt.err.Error(), "want ") {
			t.Errorf("%s: err = %v, want an error listing the valid values", tt.name, tt.err)
		}
	}
	if _, err := json.Marshal(Scope(5)); err == nil {
		t.Error("an out-of-range scope marshalled")
	}
	var s GrantStore
	if _, err := s.Respond(Response{CallID: "x", Scope: Scope(5)}); err == nil {
		t.Error("Respond accepted an out-of-range scope")
	}
}

func TestEnumsRoundTrip(t *testing.T) {
	for _, a := range ApprovalPolicies() {
		b, _ := a.MarshalText()
		var back ApprovalPolicy
		if err := back.UnmarshalText(b); err != nil || back != a {
			t.Errorf("approval %v: %s -> %v, %v", a, b, back, err)
		}
	}
	for _, s := range []SandboxPermissions{UseDefault, WithAdditionalPermissions, RequireEscalated} {
		b, _ := s.MarshalText()
		var back SandboxPermissions
		if err := back.UnmarshalText(b); err != nil || back != s {
			t.Errorf("sandbox_permissions %v: %s -> %v, %v", s, b, back, err)
		}
	}
	for _, s := range []Scope{ScopeTurn, ScopeSession} {
		b, _ := s.MarshalText()
		var back Scope
		if err := back.UnmarshalText(b); err != nil || back != s {
			t.Errorf("scope %v: %s -> %v, %v", s, b, back, err)
		}
	}
	want := "never on-request on-failure untrusted"
	var got []string
	for _, a := range ApprovalPolicies() {
		got = append(got, a.String())
	}
	if strings.Join(got, " ") != want {
		t.Errorf("wire names %v, want %s", got, want)
	}
}
