//go:build linux

package linux

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/landlock"
	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/profiles"
)

// TestLandlockABIs pins what every Landlock ABI, from none to past the
// table's newest, compiles to: the handled rights, the scopes, each rule's
// rights and the downgrades with and without the supervisor, for a call with
// the network off and on, with and without a network namespace. The golden
// file was written by the hand-written per-ABI code the table replaced
// (issue 32), so the table must say exactly what that code did.
func TestLandlockABIs(t *testing.T) {
	ws := t.TempDir()
	var b strings.Builder
	for abi := 0; abi <= 11; abi++ {
		for _, network := range []bool{false, true} {
			for _, sys := range []struct {
				name string
				sys  System
			}{
				{"root-supervised", System{Privileged: true, UserNotif: true}},
				{"root-unsupervised", System{Privileged: true, UserNotifReason: "no user notification"}},
				{"no-namespaces-supervised", System{UserNSReason: "off", UserNotif: true}},
			} {
				pol, err := policy.Build(policy.Request{Mode: profiles.WorkspaceWrite, Cwd: ws, ExcludeTmp: true, ExcludeTmpdir: true,
					Additional: profiles.New(fullIf(network), nil, nil)})
				if err != nil {
					t.Fatal(err)
				}
				s := sys.sys
				s.LandlockABI = abi
				p, err := Compile(pol, s, Options{})
				if err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(&b, "== abi %d network %t %s\n", abi, network, sys.name)
				if lp := p.Landlock; lp != nil {
					fmt.Fprintf(&b, "handled_fs=%#x (%s) handled_net=%#x scoped=%#x\n", lp.HandledFS, accessString(lp.HandledFS), lp.HandledNet, lp.Scoped)
					for _, r := range lp.Rules {
						fmt.Fprintf(&b, "rule %s %#x\n", r.Path, r.Access)
					}
				}
				for _, d := range p.Downgrades {
					fmt.Fprintf(&b, "degraded: %s: %s\n", d.Feature, d.Reason)
				}
				for _, d := range p.UnsupervisedDowngrades() {
					fmt.Fprintf(&b, "unsupervised: %s: %s\n", d.Feature, d.Reason)
				}
			}
		}
	}
	out := strings.ReplaceAll(b.String(), ws, "$WS")
	golden := filepath.Join("testdata", "landlock-abis.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -run TestLandlockABIs -update to create it)", err)
	}
	if out != string(want) {
		t.Errorf("Landlock plans changed; review and run with -update if intended.\n%s", lineDiff(out, string(want)))
	}
}

// lineDiff lists the lines of got and want that differ, by position.
func lineDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	var out []string
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			out = append(out, fmt.Sprintf("line %d:\n  got  %s\n  want %s", i+1, gl, wl))
		}
	}
	return strings.Join(out, "\n")
}

// TestLandlockEnforcementNames: the report's Landlock features and scopes
// (Enforcement derives them from internal/landlock's table) name exactly the rights after ABI 1
// and the scopes a plan handles, spelt as the table spells them: a right
// added to the table and handled fails here until the report names it.
func TestLandlockEnforcementNames(t *testing.T) {
	ws := t.TempDir()
	for abi := 1; abi <= 11; abi++ {
		for _, network := range []bool{false, true} {
			pol, err := policy.Build(policy.Request{Mode: profiles.WorkspaceWrite, Cwd: ws, ExcludeTmp: true, ExcludeTmpdir: true,
				Additional: profiles.New(fullIf(network), nil, nil)})
			if err != nil {
				t.Fatal(err)
			}
			p, err := Compile(pol, System{LandlockABI: abi, Privileged: true, UserNotif: true}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			li := p.Enforcement().Landlock
			later := p.Landlock.HandledFS &^ landlock.Mask(landlock.FS, 1, landlock.Always)
			if got, want := strings.Join(li.Features, ","), landlock.Names(landlock.FS, later); got != want {
				t.Errorf("ABI %d network %t: features %q, want %q", abi, network, got, want)
			}
			if got, want := strings.Join(li.Scopes, ","), landlock.Names(landlock.Scope, p.Landlock.Scoped); got != want {
				t.Errorf("ABI %d network %t: scopes %q, want %q", abi, network, got, want)
			}
		}
	}
}

// TestLandlockSpelling pins the report's and explain's Landlock names as
// the wire has them (issue 32 derived them from the table; before, plan.go
// and plan_string.go spelt them out): a plan that handles every right and
// scope a network-off call without a network namespace gets, and one of
// ABI 1, which reports no feature and no scope (the JSON omits both).
func TestLandlockSpelling(t *testing.T) {
	ws := t.TempDir()
	pol, err := policy.Build(policy.Request{Mode: profiles.WorkspaceWrite, Cwd: ws, ExcludeTmp: true, ExcludeTmpdir: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile(pol, System{LandlockABI: 9, UserNSReason: "off", UserNotif: true}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	li := p.Enforcement().Landlock
	if got, want := strings.Join(li.Features, ","), "refer,truncate,ioctl_dev,resolve_unix"; got != want {
		t.Errorf("features %q, want %q", got, want)
	}
	if got, want := strings.Join(li.Scopes, ","), "abstract_unix_socket,signal"; got != want {
		t.Errorf("scopes %q, want %q", got, want)
	}
	if !li.NetTCP || !strings.Contains(p.String(), "\nlandlock: handled_net=bind_tcp,connect_tcp (no port allowed)\n") {
		t.Errorf("net_tcp %t, explain:\n%s", li.NetTCP, p)
	}
	p, err = Compile(pol, System{LandlockABI: 1, Privileged: true, UserNotif: true}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if li := p.Enforcement().Landlock; li.Features != nil || li.Scopes != nil || li.NetTCP {
		t.Errorf("ABI 1: features %#v, scopes %#v, net_tcp %t; want none", li.Features, li.Scopes, li.NetTCP)
	}
	if strings.Contains(p.String(), "handled_net") {
		t.Errorf("ABI 1 with a network namespace handles no network right:\n%s", p)
	}
}
