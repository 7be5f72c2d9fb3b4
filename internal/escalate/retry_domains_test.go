package escalate

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/netrule"
	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/report"
)

func proxyDenial(host string, port int, reason string) report.Denial {
	return report.Denial{Operation: "connect", Domain: host, Port: port, Source: ProxySource, Confidence: "observed", Count: 1, Reason: reason}
}

func domainProfile(allowed []string, private bool) profiles.Profile {
	return profiles.New(&profiles.Network{Enabled: true, AllowedDomains: allowed, AllowPrivateAddresses: private}, nil, nil)
}

// A proxy denial asks for exactly its host, never the whole network; an
// address-range refusal asks for allow_private_addresses; what no grant
// lifts is unresolved with why.
func TestSmallestRetryDomains(t *testing.T) {
	own := domainProfile([]string{"a.test"}, false)
	pol := policy.Policy{Mode: profiles.ReadOnly, Domains: &policy.Domains{Allowed: domainPats(t, "a.test")}}
	tests := []struct {
		name       string
		denials    []report.Denial
		guard      Guard
		want       *profiles.Profile
		unresolved []string
	}{
		{name: "host not listed", denials: []report.Denial{proxyDenial("b.test", 443, report.ProxyReasonNotAllowed)},
			want: ptr(domainProfile([]string{"a.test", "b.test"}, false))},
		{name: "other port", denials: []report.Denial{proxyDenial("a.test", 8443, report.ProxyReasonPort)},
			want: ptr(domainProfile([]string{"a.test", "a.test:8443"}, false))},
		{name: "IPv6 literal", denials: []report.Denial{proxyDenial("2001:db8::1", 8443, report.ProxyReasonNotAllowed)},
			want: ptr(domainProfile([]string{"a.test", "[2001:db8::1]:8443"}, false))},
		{name: "private address", denials: []report.Denial{proxyDenial("a.test", 443, report.ProxyReasonPrivate)},
			want: ptr(domainProfile([]string{"a.test"}, true))},
		{name: "denied", denials: []report.Denial{proxyDenial("a.test", 443, report.ProxyReasonDenied)}, unresolved: []string{"a.test"}},
		{name: "metadata", denials: []report.Denial{proxyDenial("a.test", 80, report.ProxyReasonMetadata)}, unresolved: []string{"a.test"}},
		{name: "guard denies the network", guard: Guard{DenyNetwork: true},
			denials: []report.Denial{proxyDenial("b.test", 443, report.ProxyReasonNotAllowed)}, unresolved: []string{"b.test"}},
		{name: "a direct connect still asks for the network", denials: []report.Denial{
			proxyDenial("b.test", 443, report.ProxyReasonNotAllowed),
			{Operation: "connect", Address: &report.Address{Family: "inet", Address: "192.0.2.1", Port: 443}, Source: "seccomp"},
		}, want: ptr(profiles.Merge(own, profiles.New(profiles.FullNetwork(), nil, nil)))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, ok := SmallestRetry(RetryInput{Policy: pol, Guard: tt.guard, Additional: own, SandboxPermissions: profiles.WithAdditionalPermissions, Denials: tt.denials})
			if !ok {
				t.Fatal("no retry")
			}
			if !reflect.DeepEqual(r.AdditionalPermissions, tt.want) {
				t.Errorf("additional_permissions = %+v, want %+v", show(r.AdditionalPermissions), show(tt.want))
			}
			var un []string
			for _, u := range r.Unresolved {
				un = append(un, u.Domain)
			}
			if !reflect.DeepEqual(un, tt.unresolved) {
				t.Errorf("unresolved = %+v, want domains %v", r.Unresolved, tt.unresolved)
			}
		})
	}
}

func ptr(p profiles.Profile) *profiles.Profile { return &p }

func show(p *profiles.Profile) any {
	if p == nil || p.Network == nil {
		return p
	}
	return *p.Network
}

// Missing sees a domain request: before, a request for domains alone was
// "nothing to add" (NetworkEnabled is false for it), so it could not be
// asked for at all.
func TestMissingDomains(t *testing.T) {
	tests := []struct {
		name     string
		standing Standing
		granted  profiles.Profile
		p        profiles.Profile
		want     profiles.Profile
	}{
		{name: "new host", p: domainProfile([]string{"a.test"}, false), want: domainProfile([]string{"a.test"}, false)},
		{name: "granted by wildcard", granted: domainProfile([]string{"*.test"}, false), p: domainProfile([]string{"a.test"}, false)},
		{name: "wildcard not within a host", granted: domainProfile([]string{"a.test"}, false), p: domainProfile([]string{"*.test"}, false),
			want: domainProfile([]string{"*.test"}, false)},
		{name: "standing full network", standing: Standing{Network: true}, p: domainProfile([]string{"a.test"}, true)},
		{name: "standing domains", standing: Standing{Domains: []string{"a.test"}}, p: domainProfile([]string{"a.test", "b.test"}, false),
			want: domainProfile([]string{"b.test"}, false)},
		{name: "private addresses only", granted: domainProfile([]string{"a.test"}, false), p: domainProfile([]string{"a.test"}, true),
			want: domainProfile([]string{"a.test"}, true)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Missing(tt.standing, tt.granted, tt.p); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Missing = %+v, want %+v", show(&got), show(&tt.want))
			}
		})
	}
}

func TestParseGuardDenyDomains(t *testing.T) {
	g, err := ParseGuard([]byte(`{"deny_domains": ["Pastebin.COM.", "*.evil.test:8443"]}`))
	if err != nil || !reflect.DeepEqual(g.DenyDomains, []string{"pastebin.com", "*.evil.test:8443"}) || g.IsEmpty() {
		t.Fatalf("ParseGuard = %+v, %v; want canonical patterns", g, err)
	}
	if _, err := ParseGuard([]byte(`{"deny_domains": ["ok.test", "a..b"]}`)); err == nil || !strings.Contains(err.Error(), "deny_domains[1]") {
		t.Fatalf("bad pattern: %v; want an error naming deny_domains[1]", err)
	}
}

// The guard's deny_domains narrow every network: a domain policy's denied
// list grows, a full network goes behind the proxy with every other host
// allowed, no network stays none; and a retry never asks past it.
func TestGuardDenyDomains(t *testing.T) {
	g := Guard{DenyDomains: []string{"evil.test"}}
	dom := policy.Policy{Mode: profiles.ReadOnly, Domains: &policy.Domains{Allowed: domainPats(t, "a.test"), Denied: domainPats(t, "b.test")}}
	if got := g.Apply(dom).Policy.Domains; !reflect.DeepEqual(got, &policy.Domains{Allowed: domainPats(t, "a.test"), Denied: domainPats(t, "b.test", "evil.test")}) {
		t.Errorf("domains: %+v", got)
	}
	if dom.Domains.Denied[len(dom.Domains.Denied)-1].String() != "b.test" {
		t.Errorf("Apply changed its input: %+v", dom.Domains)
	}
	full := policy.Policy{Mode: profiles.DangerFullAccess, Unrestricted: true, Network: policy.NetworkFull}
	out := g.Apply(full).Policy
	if out.Unrestricted || out.Network != policy.NetworkIsolated || !reflect.DeepEqual(out.Domains, &policy.Domains{AllowAll: true, Denied: domainPats(t, "evil.test"), AllowPrivateAddresses: true}) {
		t.Errorf("full network: %+v, domains %+v", out, out.Domains)
	}
	if out := g.Apply(policy.Policy{Mode: profiles.ReadOnly}).Policy; out.Domains != nil || out.Network != policy.NetworkIsolated {
		t.Errorf("no network: %+v", out)
	}
	r, _ := SmallestRetry(RetryInput{Policy: out, Guard: g, Denials: []report.Denial{proxyDenial("evil.test", 443, report.ProxyReasonDenied)}})
	if r.SandboxPermissions != nil || len(r.Unresolved) != 1 || r.Unresolved[0].Reason != "forbidden by guard: deny_domains" {
		t.Errorf("retry %+v: want unresolved, forbidden by guard", r)
	}
}

// domainPats parses domain patterns as a policy carries them.
func domainPats(t testing.TB, list ...string) []netrule.Pattern {
	t.Helper()
	ps, err := netrule.ParsePatterns(list)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}
