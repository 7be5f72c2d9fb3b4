package netrule

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Resolve pins Host:Port to Addrs instead of asking DNS, as curl's
// --resolve HOST:PORT:ADDR[,ADDR...] (sbx run's --resolve, a request's
// "resolve"). The proxy checks the pinned addresses like resolved ones.
type Resolve struct {
	Host  string // canonical (CanonicalHost)
	Port  int
	Addrs []netip.Addr // unmapped
}

// ParseResolve parses curl's --resolve syntax "HOST:PORT:ADDR[,ADDR...]";
// an IPv6 ADDR may be bracketed. The error quotes s and says what is wrong
// without the field name; callers wrap it in a field error.
func ParseResolve(s string) (Resolve, error) {
	host, rest, ok := strings.Cut(s, ":")
	portStr, addrs, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 {
		return Resolve{}, fmt.Errorf("%q: want HOST:PORT:ADDR", s)
	}
	h, err := CanonicalHost(host)
	if err != nil {
		return Resolve{}, fmt.Errorf("%q: %w", s, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 1 || port > 65535 {
		return Resolve{}, fmt.Errorf("%q: port %q is not a number from 1 to 65535", s, portStr)
	}
	r := Resolve{Host: h, Port: port}
	for _, a := range strings.Split(addrs, ",") {
		ip, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(a, "["), "]"))
		if err != nil {
			return Resolve{}, fmt.Errorf("%q: address %q: %w", s, a, err)
		}
		r.Addrs = append(r.Addrs, ip.Unmap())
	}
	return r, nil
}

// String is the canonical spelling, which ParseResolve reads back.
func (r Resolve) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d:", r.Host, r.Port)
	for i, a := range r.Addrs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(a.String())
	}
	return b.String()
}

// MarshalText is the canonical spelling (a Policy's JSON).
func (r Resolve) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText parses an entry written by MarshalText (a Policy read back
// from JSON).
func (r *Resolve) UnmarshalText(b []byte) error {
	q, err := ParseResolve(string(b))
	if err != nil {
		return err
	}
	*r = q
	return nil
}
