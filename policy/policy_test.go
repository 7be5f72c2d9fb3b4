package policy

import (
	"reflect"
	"testing"

	"github.com/sbx-sandbox/sbx/profiles"
)

// A domain grant is neither full network (wider than granted) nor lost:
// the network stays isolated and Domains carries the patterns for the
// proxy; danger-full-access has the whole network anyway.
func TestBuildDomains(t *testing.T) {
	add := profiles.New(&profiles.Network{Enabled: true, AllowedDomains: []string{"pypi.org"}, DeniedDomains: []string{"evil.org"}, AllowPrivateAddresses: true}, nil, nil)
	pol, err := Build(Request{Mode: profiles.ReadOnly, Cwd: t.TempDir(), Additional: add, Resolve: []string{"pypi.org:443:127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	want := Domains{Allowed: []string{"pypi.org"}, Denied: []string{"evil.org"}, AllowPrivateAddresses: true, Resolve: []string{"pypi.org:443:127.0.0.1"}}
	if pol.Network != NetworkIsolated || pol.Domains == nil || !reflect.DeepEqual(*pol.Domains, want) {
		t.Fatalf("Build = network %v, domains %+v; want isolated, %+v", pol.Network, pol.Domains, want)
	}
	pol, err = Build(Request{Mode: profiles.DangerFullAccess, Cwd: t.TempDir(), Additional: add})
	if err != nil || pol.Network != NetworkFull || pol.Domains != nil {
		t.Fatalf("danger-full-access: network %v, domains %+v, %v; want full, none", pol.Network, pol.Domains, err)
	}
	pol, err = Build(Request{Mode: profiles.ReadOnly, Cwd: t.TempDir(), Resolve: []string{"pypi.org:443:127.0.0.1"}})
	if err != nil || pol.Domains != nil {
		t.Fatalf("no domains: %+v, %v; want no proxy", pol.Domains, err)
	}
}
