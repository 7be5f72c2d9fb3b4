package call

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// TestEffectInPrepare: a field that means nothing in the call's mode is
// refused by Prepare, whichever front end made the request: `sbx exec`
// ran {"sandbox_mode":"danger-full-access","writable_roots":["/nonexistent"]}
// with exit 0 while sbx run refused the same flags (issue 28 §1). Fields
// that mean something keep working.
func TestEffectInPrepare(t *testing.T) {
	f := newFixture(t)
	for _, tt := range []struct {
		name, field string
		edit        func(*Request)
	}{
		{"writable root in danger-full-access", "writable_roots", func(r *Request) {
			r.Mode, r.WritableRoots = profiles.DangerFullAccess, []string{"/nonexistent"}
		}},
		{"network in danger-full-access", "network_access", func(r *Request) { r.Mode, r.Network = profiles.DangerFullAccess, true }},
		{"additional write in danger-full-access", "additional_permissions.file_system.write", func(r *Request) {
			r.Mode, r.Additional, r.Preauthorized = profiles.DangerFullAccess, write(f.out), true
		}},
		{"exclude_tmp in read-only", "exclude_tmp", func(r *Request) { r.ExcludeTmp = true }},
		{"a carve-out without writable roots", "read_only", func(r *Request) { r.CarveOuts = []string{f.ws + "/x"} }},
		{"hosts beside the whole network", "additional_permissions.network.allowed_domains", func(r *Request) {
			r.Network, r.Preauthorized = true, true
			r.Additional = profiles.New(&profiles.Network{Enabled: true, AllowedDomains: []string{"a.test"}}, nil, nil)
		}},
		{"private addresses without hosts", "additional_permissions.network.allow_private_addresses", func(r *Request) {
			r.Preauthorized = true
			r.Additional = profiles.New(&profiles.Network{Enabled: true, AllowPrivateAddresses: true}, nil, nil)
		}},
	} {
		r := f.request()
		tt.edit(&r)
		_, err := Prepare(context.Background(), r)
		var fe *strictjson.FieldError
		if !errors.As(err, &fe) || fe.Field != tt.field {
			t.Errorf("%s: %v; want refused naming %s", tt.name, err, tt.field)
		}
	}
	for _, tt := range []struct {
		name string
		edit func(*Request)
	}{
		{"danger-full-access alone", func(r *Request) { r.Mode = profiles.DangerFullAccess }},
		{"writable root in workspace-write", func(r *Request) { r.Mode, r.WritableRoots = profiles.WorkspaceWrite, []string{f.out} }},
		{"exclude_tmp with an escalation to workspace-write", func(r *Request) {
			r.ExcludeTmp = true
			r.Escalation.SandboxPermissions, r.Escalation.Target, r.Escalation.Justification = profiles.RequireEscalated, profiles.WorkspaceWrite, "j"
			r.Escalation.Approver = &asker{outcome: escalate.AllowedOnce}
		}},
		{"a carve-out of an additional write", func(r *Request) {
			r.Additional, r.Preauthorized, r.CarveOuts = write(f.out), true, []string{f.out + "/x"}
		}},
	} {
		r := f.request()
		tt.edit(&r)
		if _, err := Prepare(context.Background(), r); err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}

// TestNetworkIsRequested: under with_additional_permissions the network
// the caller sets (--network, network_access) is part of what the approver
// is asked, as Codex asks; JSON's network_access stayed preauthorised while
// the CLI asked (issue 28 §1). A grant applies without asking anyone.
func TestNetworkIsRequested(t *testing.T) {
	f := newFixture(t)
	r := f.request()
	a := &asker{outcome: escalate.AllowedOnce}
	r.Network, r.Additional = true, write(f.out)
	r.Escalation.SandboxPermissions, r.Escalation.Justification, r.Escalation.Approver = profiles.WithAdditionalPermissions, "j", a
	p, err := Prepare(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.asked) != 1 || a.asked[0].AdditionalPermissions == nil || !a.asked[0].AdditionalPermissions.NetworkEnabled() {
		t.Fatalf("asked %+v; want one question with the network in it", a.asked)
	}
	if !(p.Policy().Network == policy.NetworkFull) {
		t.Errorf("allowed, but the policy has no network: %+v", p.Policy())
	}
	// Refused: no network.
	r.Escalation.Approver = &asker{outcome: escalate.Rejected}
	if _, err := Prepare(context.Background(), r); err == nil {
		t.Error("rejected, but the call was prepared")
	}
	// The network alone is a valid request.
	r.Additional, a.asked = profiles.Profile{}, nil
	r.Escalation.Approver = a
	if _, err := Prepare(context.Background(), r); err != nil || len(a.asked) != 1 {
		t.Errorf("the network alone: %v, asked %d times", err, len(a.asked))
	}
	// A grant of the network asks no one.
	g := f.request()
	g.Escalation.Grants.Session = profiles.New(profiles.FullNetwork(), nil, nil)
	g.Escalation.Approver = &asker{outcome: escalate.Rejected}
	p, err = Prepare(context.Background(), g)
	if err != nil || !(p.Policy().Network == policy.NetworkFull) {
		t.Errorf("a granted network: %v", err)
	}
	if strings.Contains(errString(err), "approval") {
		t.Error("a grant asked the approver")
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestRetryChangesAreRows: every row a retry writes on a command line is a
// row with a flag, and every key it writes in a request is a row's, the
// object the additional_permissions rows make up, or preauthorized (which
// says how to read them).
func TestRetryChangesAreRows(t *testing.T) {
	with, esc, dfa, empty := profiles.WithAdditionalPermissions, profiles.RequireEscalated, profiles.DangerFullAccess, ""
	out, all := write("/out"), profiles.New(profiles.FullNetwork(), nil, nil)
	hosts := profiles.New(&profiles.Network{Enabled: true, AllowedDomains: []string{"a.test"}, AllowPrivateAddresses: true}, nil, nil)
	for _, r := range []escalate.Retry{
		{SandboxPermissions: &with, AdditionalPermissions: &out, Justification: &empty, CapAdd: []string{"CAP_CHOWN"}},
		{SandboxPermissions: &with, AdditionalPermissions: &all, Justification: &empty},
		{SandboxPermissions: &with, AdditionalPermissions: &hosts, Justification: &empty},
		{SandboxPermissions: &esc, EscalateTo: &dfa, Justification: &empty},
	} {
		for _, c := range argvChanges(r, profiles.Profile{}, nil) {
			if f, ok := FieldByKey(c.key); !ok || f.Flag == "" {
				t.Errorf("a retry's argv changes %q, no row with a flag", c.key)
			}
		}
		for _, c := range jsonChanges(r) {
			if _, ok := FieldByKey(c.key); !ok && c.key != additionalKey && c.key != "preauthorized" {
				t.Errorf("a retry's request changes %q, no row", c.key)
			}
		}
	}
	if f, _ := FieldByKey("additional_permissions.file_system.write"); f.Flag != "allow-write" {
		t.Errorf("%+v", f)
	}
	if f, _ := FieldByKey("escalate_to"); f.Flag != "escalate" {
		t.Errorf("%+v", f)
	}
}

// TestResolveNeedsProxy: a pin without a proxy means nothing: sbx exec
// ignored "resolve" where sbx run refuses --resolve; Prepare now refuses
// it for both, and keeps it where the proxy runs.
func TestResolveNeedsProxy(t *testing.T) {
	f := newFixture(t)
	r := f.request()
	r.Resolve = pinned(t, "a.test:443:127.0.0.1")
	_, err := Prepare(context.Background(), r)
	var fe *strictjson.FieldError
	if !errors.As(err, &fe) || fe.Field != "resolve" {
		t.Fatalf("resolve without a proxy: %v; want refused naming resolve", err)
	}
	if cli := Render(err, CLI); !strings.HasPrefix(cli.Error(), "--resolve: ") || strings.Contains(cli.Error(), "additional_permissions") {
		t.Errorf("CLI rendering %q", cli)
	}
	r.Additional = profiles.New(&profiles.Network{Enabled: true, AllowedDomains: []string{"a.test"}}, nil, nil)
	r.Preauthorized = true
	if p, err := Prepare(context.Background(), r); err != nil || p.Policy().Domains == nil || len(p.Policy().Domains.Resolve) != 1 {
		t.Errorf("resolve with allowed domains: %v", err)
	}
}

// TestRetryDropsResolve: a retry that escalates, or asks for the whole
// network, drops the pin from its JSON as from its argv (retryDrops): kept,
// the retry was refused (resolve without a proxy).
func TestRetryDropsResolve(t *testing.T) {
	raw := []byte(`{"command":["true"],"cwd":"/w","resolve":["a.test:443:127.0.0.1"],"additional_permissions":{"network":{"enabled":true,"allowed_domains":["a.test"]}},"preauthorized":true}`)
	esc, with, dfa, empty := profiles.RequireEscalated, profiles.WithAdditionalPermissions, profiles.DangerFullAccess, ""
	whole := profiles.New(profiles.FullNetwork(), nil, nil)
	hosts := profiles.New(&profiles.Network{Enabled: true, AllowedDomains: []string{"a.test", "b.test"}}, nil, nil)
	for _, tt := range []struct {
		name string
		r    escalate.Retry
		kept bool
	}{
		{"escalation", escalate.Retry{SandboxPermissions: &esc, EscalateTo: &dfa, Justification: &empty}, false},
		{"the whole network", escalate.Retry{SandboxPermissions: &with, AdditionalPermissions: &whole, Justification: &empty}, false},
		{"another host", escalate.Retry{SandboxPermissions: &with, AdditionalPermissions: &hosts, Justification: &empty}, true},
	} {
		m := retryRequest(raw, tt.r)
		if _, ok := m["resolve"]; ok != tt.kept {
			t.Errorf("%s: resolve kept %v, want %v: %v", tt.name, ok, tt.kept, m)
		}
	}
}
