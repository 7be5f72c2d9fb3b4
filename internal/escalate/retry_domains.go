package escalate

import (
	"net/netip"
	"strconv"

	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// ProxySource is the Source of a denial by the network-by-domain proxy.
const ProxySource = "proxy"

// proxyRetry gathers what the proxy's denials need: exactly the hosts
// refused (never the whole network), and allow_private_addresses when an
// allowed host resolved to a private address.
type proxyRetry struct {
	allowed []string
	private bool
}

// add takes one proxy denial; it returns why no retry lets it through, or
// "".
func (p *proxyRetry) add(d report.Denial) string {
	switch d.Reason {
	case report.ProxyReasonNotAllowed, report.ProxyReasonPort:
		p.allowed = append(p.allowed, domainPattern(d.Domain, d.Port))
	case report.ProxyReasonPrivate:
		// The host is allowed already (the name was checked first);
		// naming it again keeps the retry a domain grant.
		p.allowed = append(p.allowed, domainPattern(d.Domain, d.Port))
		p.private = true
	case report.ProxyReasonDenied:
		return "denied by denied_domains: deny beats allow, no grant lifts it"
	case report.ProxyReasonMetadata:
		return "the cloud metadata address is refused unless an IP-literal pattern names it"
	default:
		return d.Reason
	}
	return ""
}

func (p *proxyRetry) any() bool { return len(p.allowed) > 0 }

// network is the network part of the retry's profile: full when a direct
// connect needs it (it covers every host), else the hosts, else none.
func (p *proxyRetry) network(full bool) *profiles.Network {
	switch {
	case full:
		return &profiles.Network{Enabled: true}
	case len(p.allowed) > 0:
		return &profiles.Network{Enabled: true, AllowedDomains: p.allowed, AllowPrivateAddresses: p.private}
	}
	return nil
}

// domainPattern is the pattern naming exactly host:port: the host alone
// on the default ports 80 and 443, an IPv6 literal in brackets with a
// port.
func domainPattern(host string, port int) string {
	if port == 80 || port == 443 {
		return host
	}
	if a, err := netip.ParseAddr(host); err == nil && a.Is6() {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}

// deniesDomain reports whether the guard's deny_domains match host:port.
func (g Guard) deniesDomain(host string, port int) bool {
	for _, p := range profiles.Patterns(g.DenyDomains) {
		if p.Matches(host, port) {
			return true
		}
	}
	return false
}
