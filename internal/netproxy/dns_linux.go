//go:build linux

package netproxy

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A stub resolver of its own, for the same reason as the sockets
// (sock_linux.go): package net's would link cgo. It reads /etc/hosts, then
// asks the nameservers of /etc/resolv.conf for A and AAAA records over UDP
// (TCP when the answer is truncated), as the host's own programs would.
//
// IMPORTANT: resolv.conf's search domains, ndots and options are not
// applied: a name is asked for as given (fully qualified), which is what a
// client names in a proxy request. nsswitch.conf sources other than files
// and dns (mDNS, LDAP, systemd-resolved's NSS module) are not consulted;
// systemd-resolved's stub at 127.0.0.53 is, through resolv.conf.

// dnsError is a failed resolution.
type dnsError struct{ host, msg string }

func (e *dnsError) Error() string { return "lookup " + e.host + ": " + e.msg }

const (
	dnsTypeA    = 1
	dnsTypeAAAA = 28
	dnsTimeout  = 5 * time.Second
)

// The host's files; variables for the tests.
var (
	hostsFile  = "/etc/hosts"
	resolvConf = "/etc/resolv.conf"
)

// lookupHost resolves host (canonical: lower case, no trailing dot).
func lookupHost(ctx context.Context, host string) ([]netip.Addr, error) {
	if addrs := lookupHostsFile(hostsFile, host); len(addrs) > 0 {
		return addrs, nil
	}
	if isLocalhost(host) {
		// RFC 6761 §6.3: localhost names are loopback, and not asked of a
		// nameserver, also where /etc/hosts does not list them (a minimal
		// root file system).
		return []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.IPv6Loopback()}, nil
	}
	servers := nameservers(resolvConf)
	var last error = &dnsError{host, "no nameserver answered"}
	for _, ns := range servers {
		var (
			wg       sync.WaitGroup
			a, aaaa  []netip.Addr
			ea, eaaa error
		)
		wg.Add(2)
		go func() { defer wg.Done(); a, ea = query(ctx, ns, host, dnsTypeA) }()
		go func() { defer wg.Done(); aaaa, eaaa = query(ctx, ns, host, dnsTypeAAAA) }()
		wg.Wait()
		var nx *dnsError
		if ea != nil && eaaa != nil && errors.As(ea, &nx) && errors.As(eaaa, &nx) {
			return nil, ea // the server's answer (no such host), not a failure to ask
		}
		if addrs := append(a, aaaa...); len(addrs) > 0 {
			return addrs, nil
		}
		if ea == nil && eaaa == nil {
			return nil, &dnsError{host, "no address"}
		}
		last = errors.Join(ea, eaaa)
	}
	return nil, last
}

// isLocalhost reports whether host is "localhost" or a name below it.
func isLocalhost(host string) bool {
	return host == "localhost" || strings.HasSuffix(host, ".localhost")
}

// lookupHostsFile returns the addresses /etc/hosts gives host.
func lookupHostsFile(path, host string) []netip.Addr {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []netip.Addr
	s := bufio.NewScanner(f)
	for s.Scan() {
		line, _, _ := strings.Cut(s.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		a, err := netip.ParseAddr(fields[0])
		if err != nil {
			continue
		}
		for _, name := range fields[1:] {
			if strings.EqualFold(strings.TrimSuffix(name, "."), host) {
				out = append(out, a.Unmap())
				break
			}
		}
	}
	return out
}

// nameservers are resolv.conf's, port 53; without any, the local host's,
// as glibc does.
func nameservers(path string) []netip.AddrPort {
	var out []netip.AddrPort
	if b, err := os.ReadFile(path); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) >= 2 && f[0] == "nameserver" {
				if a, err := netip.ParseAddr(f[1]); err == nil {
					out = append(out, netip.AddrPortFrom(a.Unmap(), 53))
				}
			}
		}
	}
	if len(out) == 0 {
		out = []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:53"), netip.MustParseAddrPort("[::1]:53")}
	}
	return out
}

// query asks ns for host's records of type qtype: over UDP, again over
// TCP when the answer is truncated.
func query(ctx context.Context, ns netip.AddrPort, host string, qtype uint16) ([]netip.Addr, error) {
	msg, id, err := buildQuery(host, qtype)
	if err != nil {
		return nil, &dnsError{host, err.Error()}
	}
	deadline := time.Now().Add(dnsTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	resp, err := exchangeUDP(ns, msg, id, deadline)
	if err != nil {
		return nil, fmt.Errorf("lookup %s: %s: %w", host, ns, err)
	}
	if resp[2]&0x02 != 0 { // TC
		ctx, cancel := context.WithDeadline(ctx, deadline)
		defer cancel()
		if resp, err = exchangeTCP(ctx, ns, msg, id); err != nil {
			return nil, fmt.Errorf("lookup %s: %s: %w", host, ns, err)
		}
	}
	return parseAnswer(host, resp, qtype)
}

func buildQuery(host string, qtype uint16) ([]byte, uint16, error) {
	var idb [2]byte
	rand.Read(idb[:])
	id := binary.BigEndian.Uint16(idb[:])
	msg := binary.BigEndian.AppendUint16(nil, id)
	msg = append(msg, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0) // RD; one question
	for _, label := range strings.Split(host, ".") {
		if len(label) == 0 || len(label) > 63 {
			return nil, 0, fmt.Errorf("bad label in %q", host)
		}
		msg = append(append(msg, byte(len(label))), label...)
	}
	msg = append(msg, 0)
	msg = binary.BigEndian.AppendUint16(msg, qtype)
	msg = binary.BigEndian.AppendUint16(msg, 1) // IN
	return msg, id, nil
}

func exchangeUDP(ns netip.AddrPort, msg []byte, id uint16, deadline time.Time) ([]byte, error) {
	fd, err := unix.Socket(family(ns.Addr()), unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	// Connected: the kernel drops datagrams from any other source.
	if err := unix.Connect(fd, toSockaddr(ns)); err != nil {
		unix.Close(fd)
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "dns")
	defer f.Close()
	f.SetDeadline(deadline)
	if _, err := f.Write(msg); err != nil {
		return nil, err
	}
	buf := make([]byte, 1232)
	for {
		n, err := f.Read(buf)
		if err != nil {
			return nil, err
		}
		if n >= 12 && binary.BigEndian.Uint16(buf) == id && buf[2]&0x80 != 0 {
			return buf[:n], nil
		}
	}
}

func exchangeTCP(ctx context.Context, ns netip.AddrPort, msg []byte, id uint16) ([]byte, error) {
	c, err := dialTCP(ctx, ns)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if d, ok := ctx.Deadline(); ok {
		c.SetDeadline(d)
	}
	if _, err := c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(msg))), msg...)); err != nil {
		return nil, err
	}
	var lb [2]byte
	if _, err := io.ReadFull(c, lb[:]); err != nil {
		return nil, err
	}
	resp := make([]byte, binary.BigEndian.Uint16(lb[:]))
	if _, err := io.ReadFull(c, resp); err != nil {
		return nil, err
	}
	if len(resp) < 12 || binary.BigEndian.Uint16(resp) != id {
		return nil, errors.New("bad answer")
	}
	return resp, nil
}

// parseAnswer returns the addresses of type qtype in the answer section.
// Every such record counts, whatever its owner name (the targets of a
// CNAME chain are answered beside it); each address is classified
// afterwards like any other, so a lying answer reaches no more than an
// honest one could.
func parseAnswer(host string, msg []byte, qtype uint16) ([]netip.Addr, error) {
	switch rcode := msg[3] & 0x0f; rcode {
	case 0:
	case 3:
		return nil, &dnsError{host, "no such host"}
	default:
		return nil, fmt.Errorf("lookup %s: server answered rcode %d", host, rcode)
	}
	qd, an := binary.BigEndian.Uint16(msg[4:]), binary.BigEndian.Uint16(msg[6:])
	off := 12
	var err error
	for range qd {
		if off, err = skipName(msg, off); err != nil || off+4 > len(msg) {
			return nil, fmt.Errorf("lookup %s: malformed answer", host)
		}
		off += 4
	}
	var out []netip.Addr
	for range an {
		if off, err = skipName(msg, off); err != nil || off+10 > len(msg) {
			return nil, fmt.Errorf("lookup %s: malformed answer", host)
		}
		typ, class := binary.BigEndian.Uint16(msg[off:]), binary.BigEndian.Uint16(msg[off+2:])
		rdlen := int(binary.BigEndian.Uint16(msg[off+8:]))
		off += 10
		if off+rdlen > len(msg) {
			return nil, fmt.Errorf("lookup %s: malformed answer", host)
		}
		rd := msg[off : off+rdlen]
		off += rdlen
		if class != 1 || typ != qtype {
			continue
		}
		if a, ok := netip.AddrFromSlice(rd); ok && (typ == dnsTypeA && len(rd) == 4 || typ == dnsTypeAAAA && len(rd) == 16) {
			out = append(out, a.Unmap())
		}
	}
	return out, nil
}

// skipName returns the offset past the (possibly compressed) name at off.
func skipName(msg []byte, off int) (int, error) {
	for {
		if off >= len(msg) {
			return 0, errors.New("truncated name")
		}
		l := int(msg[off])
		switch {
		case l == 0:
			return off + 1, nil
		case l&0xc0 == 0xc0:
			return off + 2, nil
		case l&0xc0 != 0:
			return 0, errors.New("bad label")
		}
		off += 1 + l
	}
}
