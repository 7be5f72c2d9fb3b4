// Package netproxy is sbx's network-by-domain proxy: an HTTP proxy (CONNECT,
// and absolute-form http:// requests forwarded upstream) and a SOCKS5 proxy
// (CONNECT only, no authentication) on one listener, that lets a sandboxed
// command reach exactly the hosts its profile allows
// (network.allowed_domains) and reports every refusal as a denial.
//
// It builds on every OS and serves on Linux. It does not use package net
// (nor net/http): on Linux with cgo, net links its cgo resolver and sbx
// would no longer be a static binary (cmd/sbx's TestNoCgo), so its sockets
// are *os.File on non-blocking fds served by the runtime's poller
// (sock_linux.go), it parses HTTP/1 requests itself and resolves names
// with a stub resolver of its own (/etc/hosts, then resolv.conf's
// nameservers: dns_linux.go). It does not make its listeners either: the
// launcher makes them inside the call's network namespace (loopback only)
// and hands them to Serve (FileListener), so the command can reach nothing
// but the proxy, and the proxy dials out from sbx's own namespace.
//
// Example:
//
//	allowed, _ := netrule.ParsePatterns([]string{"pypi.org", "*.pythonhosted.org"})
//	var denials netproxy.Collector
//	srv := netproxy.New(netproxy.Policy{Allowed: allowed}, netproxy.Options{OnDenial: denials.Add})
//	l, _ := netproxy.FileListener(fd) // fd made in the sandbox's namespace
//	go srv.Serve(l)
//	env := netproxy.EnvVars(l.Addr().String(), l.Addr().String())
//	... run the command with env ...
//	srv.Close()
//	report(denials.Denials())
//
// One listener serves both protocols: a SOCKS5 client's first byte is its
// version, 0x05, which no HTTP request line starts with; everything else is
// read as HTTP. One socket per address family is less for the launcher to
// make and to pass across the namespace boundary.
//
// Guarantees:
//
//   - A destination is checked by name first: a denied_domains match is
//     refused ("denied by denied_domains", deny beats allow), then it must
//     match an allowed_domains pattern on its port ("not in
//     allowed_domains", or "port not allowed" when the host matches with
//     another port). Names are compared canonically (lower case, no
//     trailing dot); a name that is not a valid ASCII host name, such as
//     the decimal IPv4 spelling 2130706433, is refused ("not a valid host
//     name").
//   - An IP literal (CONNECT 203.0.113.7:443, SOCKS5 address types 1 and 4)
//     is allowed only by an IP-literal pattern that names it; a wildcard or
//     host name pattern never matches an IP. A client that resolves names
//     itself (curl's socks5:// instead of socks5h://) is therefore refused
//     with the IP it sent; EnvVars sets socks5h://.
//   - The addresses of an allowed name (Policy.Resolve pins first, then
//     DNS) are each classified (Classify) and the proxy dials only those
//     it may: loopback, link-local, private (RFC 1918, CGNAT), unique
//     local, unspecified and multicast addresses only with
//     AllowPrivateAddresses ("resolves to a private address
//     (allow_private_addresses)"); the cloud metadata addresses
//     169.254.169.254 and fd00:ec2::254 never, unless an IP-literal pattern
//     names them and AllowPrivateAddresses is set ("resolves to the cloud
//     metadata address"). The address dialled is the address checked: the
//     proxy connects to the IP, never to the name again, so DNS rebinding
//     between check and connect is not possible.
//   - Each refusal is one call of Options.OnDenial with a Denial
//     {operation: "connect", domain, port, source: "proxy", confidence:
//     "observed", reason, address}; the HTTP proxy answers 403 with a line
//     naming host, port and reason, SOCKS5 answers 0x02 (connection not
//     allowed by ruleset). Deduplication is the caller's: Collector does
//     it with a count.
//   - Connections are relayed both ways through a pooled 256 KiB buffer, a
//     half-close is passed on, both ends are closed when both directions
//     end; Close ends every listener and connection and waits for their
//     goroutines. Sockets have TCP_NODELAY, as package net's do.
//   - A plain-HTTP request is forwarded in origin form with "Connection:
//     close" and its body and answer relayed as framed; the client's
//     connection ends with the answer, so each request is checked on a
//     connection of its own (no keep-alive between client and proxy).
//
// IMPORTANT: the proxy sees only clients that use it. A client that
// ignores the proxy variables connects directly and, inside a network
// namespace with only loopback, fails as it does without the proxy; that
// is the launcher's wall, not this package's.
//
// IMPORTANT: plain-HTTP forwarding and CONNECT decide by the authority
// the client names; a CONNECT tunnel's TLS SNI or Host header inside it is
// not inspected. The name checked is the name resolved and the address
// dialled, so a client cannot reach another address by lying in SNI, but
// it can reach any virtual host served at an allowed name's addresses
// (domain fronting through a shared CDN).
package netproxy
