//go:build linux

package linux

import (
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// TestCompileResolveUnix: RESOLVE_UNIX is handled only with the network off
// on ABI 9+, and granted exactly where the write rights are; below ABI 9 a
// network-off call reports landlock-resolve-unix instead.
func TestCompileResolveUnix(t *testing.T) {
	ws := t.TempDir()
	for _, tc := range []struct {
		name    string
		abi     int
		network bool
		handled bool
		degrade bool
	}{
		{"abi9-network-off", 9, false, true, false},
		{"abi11-network-off", 11, false, true, false},
		{"abi9-network-on", 9, true, false, false},
		{"abi7-network-off", 7, false, false, true},
		{"abi7-network-on", 7, true, false, false},
		{"no-landlock-network-off", 0, false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol, err := policy.Build(policy.Request{Mode: profiles.WorkspaceWrite, Cwd: ws, ExcludeTmp: true, ExcludeTmpdir: true,
				Additional: profiles.New(fullIf(tc.network), nil, nil)})
			if err != nil {
				t.Fatal(err)
			}
			p, err := Compile(pol, System{LandlockABI: tc.abi, Privileged: true}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			degraded := slices.ContainsFunc(p.Downgrades, func(d report.Downgrade) bool { return d.Feature == "landlock-resolve-unix" })
			if degraded != tc.degrade {
				t.Errorf("degraded landlock-resolve-unix %t, want %t: %+v", degraded, tc.degrade, p.Downgrades)
			}
			if p.Landlock == nil {
				return
			}
			handled := p.Landlock.HandledFS&unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX != 0
			if handled != tc.handled {
				t.Fatalf("RESOLVE_UNIX handled %t, want %t", handled, tc.handled)
			}
			for _, r := range p.Landlock.Rules {
				granted := r.Access&unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX != 0
				if write := slices.Contains(pol.WriteRoots, r.Path); tc.handled && granted != write {
					t.Errorf("rule %s: RESOLVE_UNIX granted %t, want %t (write root %t)", r.Path, granted, write, write)
				}
			}
			hasFeature := slices.Contains(p.Enforcement().Landlock.Features, "resolve_unix")
			if hasFeature != tc.handled {
				t.Errorf("enforcement features %q: resolve_unix %t, want %t", p.Enforcement().Landlock.Features, hasFeature, tc.handled)
			}
		})
	}
}

// fullIf is the full network when network is set, else none.
func fullIf(network bool) *profiles.Network {
	if network {
		return profiles.FullNetwork()
	}
	return nil
}
