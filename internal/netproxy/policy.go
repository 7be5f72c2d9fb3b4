package netproxy

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/sbx-sandbox/sbx/internal/netrule"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// Policy is what the proxy lets through. The zero value refuses everything.
type Policy struct {
	// Allowed are the patterns a destination must match (allowed_domains).
	Allowed []netrule.Pattern
	// Denied are refused even when Allowed matches (denied_domains).
	Denied []netrule.Pattern
	// AllowAll lets every destination through that Denied does not match,
	// on any port: a full network with a deny list (the guard's
	// deny_domains), which only a proxy can enforce. Addresses are still
	// classified.
	AllowAll bool
	// AllowPrivateAddresses lets an allowed destination resolve to
	// loopback, link-local, private, CGNAT and unique-local addresses. The
	// cloud metadata addresses stay refused unless an Allowed IP-literal
	// pattern names them exactly.
	AllowPrivateAddresses bool
	// Resolve pins host:port to addresses instead of asking DNS, as curl's
	// --resolve HOST:PORT:ADDR (netrule.ParseResolve). The pinned addresses
	// are checked like resolved ones.
	Resolve []netrule.Resolve
	// Lookup resolves a host name; nil is the proxy's own stub resolver
	// (/etc/hosts, then resolv.conf's nameservers: dns_linux.go). It is
	// called only for hosts the patterns allow.
	Lookup func(ctx context.Context, host string) ([]netip.Addr, error)
}

// Denial is one refused proxy request, in the vocabulary of sbx's other
// denials: {operation: "connect", domain, port, source: "proxy",
// confidence: "observed", reason}.
type Denial struct {
	Operation  string `json:"operation"`
	Domain     string `json:"domain"`
	Port       int    `json:"port"`
	Source     string `json:"source"`
	Confidence string `json:"confidence"`
	Reason     string `json:"reason"`
	// Address is the refused address for report.ProxyReasonPrivate and report.ProxyReasonMetadata
	// (the first one refused), empty otherwise.
	Address string `json:"address,omitempty"`
}

// RefusedError is the error of a refused destination; it carries the
// Denial.
type RefusedError struct{ Denial Denial }

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s:%d: %s", e.Denial.Domain, e.Denial.Port, e.Denial.Reason)
}

func refuse(host string, port int, reason, addr string) *RefusedError {
	return &RefusedError{Denial{Operation: "connect", Domain: host, Port: port, Source: "proxy", Confidence: "observed", Reason: reason, Address: addr}}
}

// Check decides a destination by name, before any resolution. host is as
// the client sent it; the Denial carries its canonical form (or the raw
// text when it is not a host name). It returns the canonical host.
func (p *Policy) Check(host string, port int) (string, *RefusedError) {
	canon, isIP, err := canonicalDest(host)
	if err != nil {
		return host, refuse(host, port, report.ProxyReasonInvalidHost, "")
	}
	for _, d := range p.Denied {
		if d.IP == isIP && d.Matches(canon, port) {
			return canon, refuse(canon, port, report.ProxyReasonDenied, "")
		}
	}
	if p.AllowAll {
		return canon, nil
	}
	hostMatched := false
	for _, a := range p.Allowed {
		if a.IP != isIP || !a.MatchesHost(canon) {
			continue
		}
		if a.MatchesPort(port) {
			return canon, nil
		}
		hostMatched = true
	}
	if hostMatched {
		return canon, refuse(canon, port, report.ProxyReasonPort, "")
	}
	return canon, refuse(canon, port, report.ProxyReasonNotAllowed, "")
}

// canonicalDest canonicalises a destination host: an IP literal (brackets
// and zone refused) or a host name.
func canonicalDest(host string) (string, bool, error) {
	if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")); err == nil {
		if a.Zone() != "" {
			return "", false, errors.New("zone in address")
		}
		return a.Unmap().String(), true, nil
	}
	h, err := netrule.CanonicalHost(host)
	return h, false, err
}

// resolve returns the candidate addresses of an allowed destination: the
// IP itself, a Resolve pin, or DNS.
func (p *Policy) resolve(ctx context.Context, host string, port int) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	for _, r := range p.Resolve {
		if r.Host == host && r.Port == port {
			return r.Addrs, nil
		}
	}
	lookup := p.Lookup
	if lookup == nil {
		lookup = lookupHost
	}
	addrs, err := lookup(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	return addrs, nil
}

// Addresses resolves an allowed destination (host canonical, as Check
// returns it) and keeps the addresses it may dial, in order. When every
// address is refused by its class the error is a *RefusedError naming the
// first; a resolution failure is a plain error (not a denial).
func (p *Policy) Addresses(ctx context.Context, host string, port int) ([]netip.Addr, error) {
	addrs, err := p.resolve(ctx, host, port)
	if err != nil {
		return nil, err
	}
	var ok []netip.Addr
	var first *RefusedError
	for _, a := range addrs {
		a = a.Unmap()
		if r := p.addrRefusal(host, port, a); r != nil {
			if first == nil {
				first = r
			}
			continue
		}
		ok = append(ok, a)
	}
	if len(ok) == 0 {
		if first == nil {
			return nil, fmt.Errorf("resolve %s: no addresses", host)
		}
		return nil, first
	}
	return ok, nil
}

func (p *Policy) addrRefusal(host string, port int, a netip.Addr) *RefusedError {
	switch Classify(a) {
	case ClassPublic:
		return nil
	case ClassMetadata:
		for _, pat := range p.Allowed {
			if pat.IP && pat.Host == a.String() && p.AllowPrivateAddresses {
				return nil
			}
		}
		return refuse(host, port, report.ProxyReasonMetadata, a.String())
	}
	if p.AllowPrivateAddresses {
		return nil
	}
	return refuse(host, port, report.ProxyReasonPrivate, a.String())
}
