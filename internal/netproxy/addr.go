package netproxy

import (
	"io"
	"net/netip"
	"time"
)

// Class is the kind of an upstream address, as the proxy decides it.
type Class int

const (
	// ClassPublic is any address not listed below: dialled when allowed.
	ClassPublic Class = iota
	// ClassLoopback is 127.0.0.0/8 and ::1: the host's own services.
	ClassLoopback
	// ClassLinkLocal is 169.254.0.0/16 and fe80::/10.
	ClassLinkLocal
	// ClassMetadata is the cloud metadata endpoint (169.254.169.254,
	// fd00:ec2::254): refused even with allow_private_addresses, unless an
	// IP-literal pattern names it.
	ClassMetadata
	// ClassPrivate is 10/8, 172.16/12, 192.168/16, 100.64/10 (CGNAT) and
	// fc00::/7 (unique local).
	ClassPrivate
	// ClassUnspecified is 0.0.0.0/8 and ::, which the kernel reads as
	// "this host".
	ClassUnspecified
	// ClassMulticast is 224.0.0.0/4, 255.255.255.255 and ff00::/8.
	ClassMulticast
)

func (c Class) String() string {
	return [...]string{"public", "loopback", "link-local", "metadata", "private", "unspecified", "multicast"}[c]
}

// classTable lists the non-public ranges, most specific first; each entry
// says why it is there.
var classTable = []struct {
	prefix netip.Prefix
	class  Class
}{
	{netip.MustParsePrefix("169.254.169.254/32"), ClassMetadata},  // AWS, GCP, Azure, OpenStack instance metadata
	{netip.MustParsePrefix("fd00:ec2::254/128"), ClassMetadata},   // AWS IMDS over IPv6
	{netip.MustParsePrefix("0.0.0.0/8"), ClassUnspecified},        // "this network"; connect(0.0.0.0) reaches the host
	{netip.MustParsePrefix("::/128"), ClassUnspecified},           // connect(::) reaches the host
	{netip.MustParsePrefix("127.0.0.0/8"), ClassLoopback},         // the host's own services
	{netip.MustParsePrefix("::1/128"), ClassLoopback},             //
	{netip.MustParsePrefix("169.254.0.0/16"), ClassLinkLocal},     // link-local, other metadata services
	{netip.MustParsePrefix("fe80::/10"), ClassLinkLocal},          //
	{netip.MustParsePrefix("10.0.0.0/8"), ClassPrivate},           // RFC 1918
	{netip.MustParsePrefix("172.16.0.0/12"), ClassPrivate},        // RFC 1918
	{netip.MustParsePrefix("192.168.0.0/16"), ClassPrivate},       // RFC 1918
	{netip.MustParsePrefix("100.64.0.0/10"), ClassPrivate},        // CGNAT, also Tailscale
	{netip.MustParsePrefix("fc00::/7"), ClassPrivate},             // unique local
	{netip.MustParsePrefix("224.0.0.0/4"), ClassMulticast},        //
	{netip.MustParsePrefix("255.255.255.255/32"), ClassMulticast}, // limited broadcast
	{netip.MustParsePrefix("ff00::/8"), ClassMulticast},           //
}

var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// Classify returns the class of a; an IPv4-mapped IPv6 address
// (::ffff:127.0.0.1) is classified as its IPv4 address, since that is what
// a dual-stack socket connects to.
func Classify(a netip.Addr) Class {
	a = a.Unmap()
	if nat64.Contains(a) {
		// 64:ff9b::a.b.c.d reaches a.b.c.d through a NAT64 gateway.
		b := a.As16()
		a = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	}
	for _, e := range classTable {
		if e.prefix.Contains(a) {
			return e.class
		}
	}
	return ClassPublic
}

// Conn is a connection Listener.Accept returns: a TCP stream with the
// deadlines of the runtime's poller (reads and writes past one fail with
// os.ErrDeadlineExceeded, Close unblocks them).
type Conn interface {
	io.ReadWriteCloser
	SetDeadline(t time.Time) error
	SetReadDeadline(t time.Time) error
	SetWriteDeadline(t time.Time) error
	// CloseWrite shuts the sending side down (the peer reads EOF).
	CloseWrite() error
}
