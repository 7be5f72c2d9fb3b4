package netrule

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Pattern is one entry of network.allowed_domains or
// network.denied_domains, parsed and canonical:
//
//   - "pypi.org": exactly that host;
//   - "*.pythonhosted.org": every subdomain of pythonhosted.org, never the
//     apex itself (list both to allow both);
//   - "203.0.113.7" or "[2001:db8::1]": exactly that IP address, the only
//     way a connection to an IP literal is allowed;
//   - each optionally with ":PORT"; without one the pattern matches ports 80
//     and 443 only.
//
// Hosts are ASCII: a non-ASCII name must be written in punycode (xn--…),
// because sbx has no IDNA table and two spellings of one name must not
// match differently. A host whose last label is all digits ("1.2.3",
// "2130706433") is refused: resolvers read such names as IPv4 addresses.
type Pattern struct {
	// Host is lower case without a trailing dot; for a wildcard, the part
	// after "*."; for an IP literal, netip's canonical form (IPv4 unmapped).
	Host string
	// Wildcard is true for "*.Host": subdomains of Host only.
	Wildcard bool
	// IP is true when Host is an IP literal.
	IP bool
	// Port is the one port matched; 0 means the default ports 80 and 443.
	Port int
}

// DefaultPorts are the ports a pattern without ":PORT" matches.
var DefaultPorts = []int{80, 443}

// ParsePattern parses and canonicalises one pattern. The error says what is
// wrong without the field name; callers wrap it in a field error (the
// request's edge: profiles.ParseDomainPatterns, the CLI's flags; internal/lint's parsers_test.go
// lists every caller allowed, and past them code takes typed values).
func ParsePattern(s string) (Pattern, error) {
	if s == "" {
		return Pattern{}, errors.New("empty pattern")
	}
	host, port, err := splitPatternPort(s)
	if err != nil {
		return Pattern{}, err
	}
	p := Pattern{Port: port}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return Pattern{}, fmt.Errorf("%q: an IP address with a zone is not a pattern", s)
		}
		p.Host, p.IP = a.Unmap().String(), true
		return p, nil
	}
	if strings.HasPrefix(host, "*.") {
		p.Wildcard = true
		host = host[2:]
	}
	if strings.Contains(host, "*") {
		return Pattern{}, fmt.Errorf("%q: a wildcard is only allowed as a leading \"*.\" (a bare * would be every host: use network.enabled without allowed_domains)", s)
	}
	h, err := CanonicalHost(host)
	if err != nil {
		return Pattern{}, fmt.Errorf("%q: %w", s, err)
	}
	p.Host = h
	return p, nil
}

// splitPatternPort splits "host", "host:port", "[v6]" and "[v6]:port"; a
// bare IPv6 address ("2001:db8::1") has no port.
func splitPatternPort(s string) (string, int, error) {
	host, portStr := s, ""
	switch {
	case strings.HasPrefix(s, "["):
		end := strings.Index(s, "]")
		if end < 0 {
			return "", 0, fmt.Errorf("%q: missing ]", s)
		}
		host, rest := s[1:end], s[end+1:]
		if _, err := netip.ParseAddr(host); err != nil || !strings.Contains(host, ":") {
			return "", 0, fmt.Errorf("%q: brackets are only for IPv6 addresses", s)
		}
		if rest != "" {
			if !strings.HasPrefix(rest, ":") {
				return "", 0, fmt.Errorf("%q: unexpected %q after ]", s, rest)
			}
			portStr = rest[1:]
		}
		if portStr == "" && rest != "" {
			return "", 0, fmt.Errorf("%q: empty port", s)
		}
		port, err := parsePatternPort(s, portStr)
		return host, port, err
	case strings.Count(s, ":") > 1:
		// An unbracketed IPv6 address: no port possible.
		return s, 0, nil
	case strings.Contains(s, ":"):
		i := strings.LastIndex(s, ":")
		host, portStr = s[:i], s[i+1:]
		if portStr == "" {
			return "", 0, fmt.Errorf("%q: empty port", s)
		}
	}
	port, err := parsePatternPort(s, portStr)
	return host, port, err
}

func parsePatternPort(s, portStr string) (int, error) {
	if portStr == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(portStr)
	if err != nil || n < 1 || n > 65535 || portStr[0] == '0' || portStr[0] == '+' {
		return 0, fmt.Errorf("%q: port %q is not a number from 1 to 65535", s, portStr)
	}
	return n, nil
}

// CanonicalHost validates a DNS host name and returns it in lower case
// without a trailing dot. It refuses non-ASCII (write punycode), empty
// labels, labels over 63 bytes, names over 253, characters other than
// letters, digits, '-' and '_', and an all-digit last label (such a name
// is read as an IPv4 address by inet_aton-style resolvers).
func CanonicalHost(h string) (string, error) {
	h = strings.TrimSuffix(h, ".")
	if h == "" {
		return "", errors.New("empty host name")
	}
	for i := 0; i < len(h); i++ {
		if h[i] >= 0x80 {
			return "", errors.New("non-ASCII host name: write it in punycode (xn--…)")
		}
	}
	h = strings.ToLower(h)
	if len(h) > 253 {
		return "", errors.New("host name longer than 253 bytes")
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if l == "" {
			return "", errors.New("empty label in host name")
		}
		if len(l) > 63 {
			return "", fmt.Errorf("label %q longer than 63 bytes", l)
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return "", fmt.Errorf("label %q starts or ends with '-'", l)
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", fmt.Errorf("character %q not allowed in a host name", c)
			}
		}
	}
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return "", errors.New("the last label is all digits: write an IP address as an IP address")
	}
	return h, nil
}

// String is the canonical spelling, which ParsePattern reads back.
func (p Pattern) String() string {
	h := p.Host
	if p.IP && strings.Contains(h, ":") && p.Port != 0 {
		h = "[" + h + "]"
	}
	if p.Wildcard {
		h = "*." + h
	}
	if p.Port != 0 {
		h += ":" + strconv.Itoa(p.Port)
	}
	return h
}

// MatchesHost reports whether the pattern's host part matches host, which
// must be canonical (CanonicalHost, or netip's form of an IP), whatever the
// port.
func (p Pattern) MatchesHost(host string) bool {
	if p.Wildcard {
		return strings.HasSuffix(host, "."+p.Host)
	}
	return host == p.Host
}

// MatchesPort reports whether the pattern's port part matches port.
func (p Pattern) MatchesPort(port int) bool {
	if p.Port == 0 {
		return port == 80 || port == 443
	}
	return port == p.Port
}

// Matches reports whether the pattern matches a connection to host:port;
// host must be canonical.
func (p Pattern) Matches(host string, port int) bool {
	return p.MatchesHost(host) && p.MatchesPort(port)
}

// Within reports whether every host:port p matches is matched by q too.
func (p Pattern) Within(q Pattern) bool {
	switch {
	case q.Port == 0 && p.Port != 0 && p.Port != 80 && p.Port != 443:
		return false
	case q.Port != 0 && p.Port != q.Port:
		return false
	case p.IP != q.IP:
		return false
	case !q.Wildcard:
		return !p.Wildcard && p.Host == q.Host
	case p.Wildcard:
		return p.Host == q.Host || strings.HasSuffix(p.Host, "."+q.Host)
	}
	return strings.HasSuffix(p.Host, "."+q.Host)
}

// MarshalText is the canonical spelling, so a Policy's JSON shows the
// patterns as a request writes them.
func (p Pattern) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText parses a pattern written by MarshalText (a Policy read
// back from JSON).
func (p *Pattern) UnmarshalText(b []byte) error {
	q, err := ParsePattern(string(b))
	if err != nil {
		return err
	}
	*p = q
	return nil
}

// Strings returns the canonical spellings of ps, in order.
func Strings[T fmt.Stringer](ps []T) []string {
	if ps == nil {
		return nil
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}
