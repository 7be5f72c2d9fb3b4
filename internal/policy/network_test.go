package policy

import (
	"testing"

	"github.com/sbx-sandbox/sbx/internal/profiles"
)

// TestDecideNetwork: the one decision of a call's network, and Build
// following it: the host's network only for danger-full-access and the
// whole network without a deny list; a namespace of the call's own, with
// the proxy, for domains and for the whole network beside a deny list.
func TestDecideNetwork(t *testing.T) {
	full := profiles.New(profiles.FullNetwork(), nil, nil)
	for _, tt := range []struct {
		name string
		mode profiles.Mode
		add  profiles.Profile
		want NetworkPlan
	}{
		{"nothing asked", profiles.ReadOnly, profiles.Profile{}, NetworkOff},
		{"a deny list alone", profiles.WorkspaceWrite, profiles.New(&profiles.Network{DeniedDomains: []string{"evil.test"}}, nil, nil), NetworkOff},
		{"the whole network", profiles.ReadOnly, full, NetworkHost},
		{"by domain", profiles.ReadOnly, profiles.New(&profiles.Network{Enabled: true, AllowedDomains: []string{"a.test"}}, nil, nil), NetworkByDomain},
		{"the whole network beside a deny list", profiles.WorkspaceWrite,
			profiles.Merge(full, profiles.New(&profiles.Network{DeniedDomains: []string{"evil.test"}}, nil, nil)), NetworkProxied},
		{"danger-full-access", profiles.DangerFullAccess, profiles.Profile{}, NetworkHost},
		{"danger-full-access beside domains", profiles.DangerFullAccess, profiles.New(&profiles.Network{Enabled: true, AllowedDomains: []string{"a.test"}}, nil, nil), NetworkHost},
	} {
		got := DecideNetwork(tt.mode, tt.add)
		if got != tt.want {
			t.Errorf("%s: DecideNetwork = %v, want %v", tt.name, got, tt.want)
		}
		pol, err := Build(Request{Mode: tt.mode, Cwd: t.TempDir(), Additional: tt.add})
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		proxied := pol.Domains != nil
		if (pol.Network == NetworkFull) != !got.OwnNamespace() || proxied != (got == NetworkByDomain || got == NetworkProxied) ||
			(pol.Domains != nil && pol.Domains.AllowAll) != (got == NetworkProxied) {
			t.Errorf("%s: Build = network %v, domains %+v; DecideNetwork %v", tt.name, pol.Network, pol.Domains, got)
		}
	}
}
