package call

import (
	"context"
	"errors"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/netrule"
	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/report"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

func TestPrestartHint(t *testing.T) {
	net := profiles.New(profiles.FullNetwork(), nil, nil)
	tests := []struct {
		name      string
		r         Request
		netns, ok bool
	}{
		{"read-only", Request{Mode: profiles.ReadOnly}, true, true},
		{"workspace-write", Request{Mode: profiles.WorkspaceWrite}, true, true},
		{"--network", Request{Mode: profiles.ReadOnly, Network: true}, false, true},
		{"the network asked for", Request{Mode: profiles.ReadOnly, Additional: net}, false, true},
		{"danger-full-access launches no sandbox", Request{Mode: profiles.DangerFullAccess}, false, false},
		{"limits make a cgroup first", Request{Mode: profiles.ReadOnly, Limits: report.Limits{Pids: 10}}, false, false},
	}
	for _, tt := range tests {
		if netns, ok := PrestartHint(tt.r); netns != tt.netns || ok != tt.ok {
			t.Errorf("%s: netns %v, ok %v; want %v, %v", tt.name, netns, ok, tt.netns, tt.ok)
		}
	}
}

// TestCheckStrings: a Request an embedder builds is held to the same rule
// per kind of string as the front ends' (issue 27 §4).
func TestCheckStrings(t *testing.T) {
	ok := Request{Command: []string{"true", ""}, Cwd: "", WritableRoots: []string{"/w"}}
	if err := ok.checkStrings(); err != nil {
		t.Fatalf("%+v: %v", ok, err)
	}
	for _, tt := range []struct {
		field string
		edit  func(*Request)
		want  error
	}{
		{"command[1]", func(r *Request) { r.Command = []string{"touch", "a\x00b"} }, strictjson.ErrNUL},
		{"cwd", func(r *Request) { r.Cwd = "/w\x00/../OUT" }, strictjson.ErrNUL},
		{"writable_roots[1]", func(r *Request) { r.WritableRoots = []string{"/w", ""} }, strictjson.ErrEmptyPath},
		{"call_id", func(r *Request) { r.Escalation.CallID = "c\x00" }, strictjson.ErrNUL},
	} {
		r := ok
		tt.edit(&r)
		err := r.checkStrings()
		var fe *strictjson.FieldError
		if !errors.As(err, &fe) || fe.Field != tt.field || !errors.Is(err, tt.want) {
			t.Errorf("%s: err %v, want %v", tt.field, err, tt.want)
		}
	}
}

// TestPrestartHintAgreesWithBuild: the guess made before Prepare and the
// policy Prepare builds decide the network by one function
// (policy.DecideNetwork), so over every way a request can ask for the
// network they agree on whether the call gets a namespace of its own
// (issue 32 §2).
func TestPrestartHintAgreesWithBuild(t *testing.T) {
	f := newFixture(t)
	domains := &profiles.Network{Enabled: true, AllowedDomains: []string{"a.test"}}
	for _, tt := range []struct {
		name    string
		network bool // --network, network_access
		net     *profiles.Network
		resolve []string
		with    bool // with_additional_permissions, approved
	}{
		{name: "no network"},
		{name: "--network", network: true},
		{name: "the network in the profile", net: profiles.FullNetwork()},
		{name: "by domain", net: domains, resolve: []string{"a.test:443:127.0.0.1"}},
		{name: "by domain, private addresses", net: &profiles.Network{Enabled: true, AllowedDomains: []string{"a.test"}, AllowPrivateAddresses: true}},
		{name: "by domain, a deny list", net: &profiles.Network{Enabled: true, AllowedDomains: []string{"*.a.test"}, DeniedDomains: []string{"b.a.test"}}},
		{name: "--network beside a deny list", network: true, net: &profiles.Network{DeniedDomains: []string{"evil.test"}}},
		{name: "a deny list alone", net: &profiles.Network{DeniedDomains: []string{"evil.test"}}},
		{name: "the network asked for, approved", network: true, with: true},
		{name: "domains asked for, approved", net: domains, with: true},
	} {
		for _, mode := range []profiles.Mode{profiles.ReadOnly, profiles.WorkspaceWrite} {
			r := f.request()
			r.Mode, r.Network, r.Resolve = mode, tt.network, pinned(t, tt.resolve...)
			if tt.net != nil {
				r.Additional = profiles.New(tt.net, nil, nil)
			}
			r.Preauthorized = !tt.with
			if tt.with {
				r.Escalation.SandboxPermissions, r.Escalation.Justification = profiles.WithAdditionalPermissions, "j"
				r.Escalation.Approver = &asker{outcome: escalate.AllowedOnce}
			}
			netns, ok := PrestartHint(r)
			p, err := Prepare(context.Background(), r)
			if err != nil {
				t.Fatalf("%s, %s: %v", tt.name, mode, err)
			}
			pol := p.Policy()
			if own := pol.Network != policy.NetworkFull; !ok || netns != own {
				t.Errorf("%s, %s: PrestartHint netns %v (ok %v), Build's network %v (domains %+v)", tt.name, mode, netns, ok, pol.Network, pol.Domains)
			}
			if len(tt.resolve) > 0 && (pol.Domains == nil || len(pol.Domains.Resolve) != len(tt.resolve)) {
				t.Errorf("%s, %s: the pins did not reach the policy: %+v", tt.name, mode, pol.Domains)
			}
		}
	}
	// danger-full-access: no sandbox to prestart, and the host's network.
	r := f.request()
	r.Mode, r.Preauthorized = profiles.DangerFullAccess, true
	if _, ok := PrestartHint(r); ok || policy.DecideNetwork(r.Mode, r.Additional) != policy.NetworkHost {
		t.Errorf("danger-full-access: prestart %v, network %v", ok, policy.DecideNetwork(r.Mode, r.Additional))
	}
}

// pinned parses --resolve entries as the front ends do.
func pinned(t testing.TB, list ...string) []netrule.Resolve {
	t.Helper()
	rs, err := netrule.ParseResolves(list)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}
