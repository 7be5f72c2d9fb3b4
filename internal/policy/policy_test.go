package policy

import (
	"reflect"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/netrule"
	"github.com/sbx-sandbox/sbx/internal/profiles"
)

// A domain grant is neither full network (wider than granted) nor lost:
// the network stays isolated and Domains carries the patterns for the
// proxy; danger-full-access has the whole network anyway.
func TestBuildDomains(t *testing.T) {
	add := profiles.New(&profiles.Network{Enabled: true, AllowedDomains: []string{"pypi.org"}, DeniedDomains: []string{"evil.org"}, AllowPrivateAddresses: true}, nil, nil)
	pol, err := Build(Request{Mode: profiles.ReadOnly, Cwd: t.TempDir(), Additional: add, Resolve: pins(t, "pypi.org:443:127.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	want := Domains{Allowed: pats(t, "pypi.org"), Denied: pats(t, "evil.org"), AllowPrivateAddresses: true, Resolve: pins(t, "pypi.org:443:127.0.0.1")}
	if pol.Network != NetworkIsolated || pol.Domains == nil || !reflect.DeepEqual(*pol.Domains, want) {
		t.Fatalf("Build = network %v, domains %+v; want isolated, %+v", pol.Network, pol.Domains, want)
	}
	pol, err = Build(Request{Mode: profiles.DangerFullAccess, Cwd: t.TempDir(), Additional: add})
	if err != nil || pol.Network != NetworkFull || pol.Domains != nil {
		t.Fatalf("danger-full-access: network %v, domains %+v, %v; want full, none", pol.Network, pol.Domains, err)
	}
	pol, err = Build(Request{Mode: profiles.ReadOnly, Cwd: t.TempDir(), Resolve: pins(t, "pypi.org:443:127.0.0.1")})
	if err != nil || pol.Domains != nil {
		t.Fatalf("no domains: %+v, %v; want no proxy", pol.Domains, err)
	}
}

// A full network beside denied_domains (--network --deny-domain, or a
// merged grant of the whole network) goes through the proxy: every host
// allowed but the denied ones, private addresses as the full network had
// them, names pinned by --resolve. Without a deny list it stays full.
func TestBuildFullNetworkDenied(t *testing.T) {
	tests := []struct {
		name string
		net  *profiles.Network
		want *Domains
	}{
		{"full", &profiles.Network{Enabled: true}, nil},
		{"full-denied", &profiles.Network{Enabled: true, DeniedDomains: []string{"evil.org", "*.paste.org"}},
			&Domains{AllowAll: true, Denied: pats(t, "*.paste.org", "evil.org"), AllowPrivateAddresses: true, Resolve: pins(t, "evil.org:443:127.0.0.1")}},
		{"merged", nil, &Domains{AllowAll: true, Denied: pats(t, "evil.org"), AllowPrivateAddresses: true, Resolve: pins(t, "evil.org:443:127.0.0.1")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			add := profiles.New(tt.net, nil, nil)
			if tt.net == nil {
				add = profiles.Merge(profiles.New(profiles.FullNetwork(), nil, nil), profiles.New(&profiles.Network{DeniedDomains: []string{"evil.org"}}, nil, nil))
			}
			pol, err := Build(Request{Mode: profiles.WorkspaceWrite, Cwd: t.TempDir(), Additional: add, Resolve: pins(t, "evil.org:443:127.0.0.1")})
			if err != nil {
				t.Fatal(err)
			}
			wantNet := NetworkFull
			if tt.want != nil {
				wantNet = NetworkIsolated
			}
			if pol.Network != wantNet || !reflect.DeepEqual(pol.Domains, tt.want) {
				t.Fatalf("Build = network %v, domains %+v; want %v, %+v", pol.Network, pol.Domains, wantNet, tt.want)
			}
		})
	}
}

// DenyDomains joins a deny list to a domain list without touching the
// Policy it was called on, puts a full network behind the proxy, and
// leaves a policy without network as it is.
func TestDenyDomains(t *testing.T) {
	shared := &Domains{Allowed: pats(t, "pypi.org"), Denied: pats(t, "a.org")}
	tests := []struct {
		name string
		in   Policy
		want Policy
	}{
		{"domains", Policy{Domains: shared}, Policy{Domains: &Domains{Allowed: pats(t, "pypi.org"), Denied: pats(t, "a.org", "b.org")}}},
		{"full", Policy{Network: NetworkFull}, Policy{Network: NetworkIsolated, Domains: &Domains{AllowAll: true, Denied: pats(t, "a.org", "b.org"), AllowPrivateAddresses: true}}},
		{"isolated", Policy{}, Policy{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.in.DenyDomains(pats(t, "a.org", "b.org")); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("DenyDomains = %+v %+v; want %+v %+v", got, got.Domains, tt.want, tt.want.Domains)
			}
		})
	}
	if !reflect.DeepEqual(shared.Denied, pats(t, "a.org")) {
		t.Fatalf("the caller's Domains changed: %v", shared.Denied)
	}
}

// pats parses domain patterns for a test's want.
func pats(t testing.TB, list ...string) []netrule.Pattern {
	t.Helper()
	ps, err := netrule.ParsePatterns(list)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// pins parses --resolve entries for a test's request and want.
func pins(t testing.TB, list ...string) []netrule.Resolve {
	t.Helper()
	rs, err := netrule.ParseResolves(list)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}
