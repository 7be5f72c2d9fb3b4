//go:build linux

package main

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// The probes use raw sockets, not package net: importing net links its cgo
// resolver, which makes sbx a dynamically linked binary, and every sbx call
// (this runs once per tool call) then pays the dynamic loader: about 0.6 ms
// of a 2 ms start here. The probes resolve no names and need none of it.

// probeSock is a socket of the probes: a host-side listener or a stage-side
// connection.
type probeSock struct {
	fd   int
	addr string // "127.0.0.1:PORT", a unix path, or "@name" (abstract)
	path string // the socket file a pathname listener made, removed by close
}

// openSock makes a close-on-exec socket for network ("tcp", "udp" or
// "unix") and addr, and the address to bind or connect it to.
func openSock(network, addr string) (*probeSock, unix.Sockaddr, error) {
	domain, typ := unix.AF_INET, unix.SOCK_STREAM
	var sa unix.Sockaddr
	switch network {
	case "tcp", "udp":
		ap, err := netip.ParseAddrPort(addr)
		if err != nil || !ap.Addr().Is4() {
			return nil, nil, fmt.Errorf("%s address %q: want IPv4:port", network, addr)
		}
		if network == "udp" {
			typ = unix.SOCK_DGRAM
		}
		sa = &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	case "unix":
		// x/sys/unix makes a name starting with "@" abstract.
		domain, sa = unix.AF_UNIX, &unix.SockaddrUnix{Name: addr}
	default:
		return nil, nil, fmt.Errorf("network %q", network)
	}
	fd, err := unix.Socket(domain, typ|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	return &probeSock{fd: fd, addr: addr}, sa, nil
}

// listenSock binds a listener (stream sockets also listen). Nothing accepts:
// the kernel completes connections into the backlog, which is all a
// connect probe needs.
func listenSock(network, addr string) (*probeSock, error) {
	s, sa, err := openSock(network, addr)
	if err != nil {
		return nil, err
	}
	if err := unix.Bind(s.fd, sa); err != nil {
		s.close()
		return nil, err
	}
	if network == "unix" && addr[0] != '@' {
		s.path = addr
	}
	if network != "udp" {
		if err := unix.Listen(s.fd, 64); err != nil {
			s.close()
			return nil, err
		}
	}
	if network != "unix" {
		bound, err := unix.Getsockname(s.fd)
		in4, ok := bound.(*unix.SockaddrInet4)
		if err != nil || !ok {
			s.close()
			return nil, fmt.Errorf("getsockname: %v", err)
		}
		s.addr = netip.AddrPortFrom(netip.AddrFrom4(in4.Addr), uint16(in4.Port)).String()
	}
	return s, nil
}

// dialSock connects to addr; SO_SNDTIMEO bounds a connect that would hang.
func dialSock(network, addr string) (*probeSock, error) {
	s, sa, err := openSock(network, addr)
	if err != nil {
		return nil, err
	}
	tv := unix.NsecToTimeval((2 * time.Second).Nanoseconds())
	if err := unix.SetsockoptTimeval(s.fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv); err != nil {
		s.close()
		return nil, err
	}
	for {
		err = unix.Connect(s.fd, sa)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

func (s *probeSock) close() {
	if s == nil {
		return
	}
	unix.Close(s.fd)
	if s.path != "" {
		os.Remove(s.path)
	}
}

// receive reports whether the datagram msg arrives within wait.
func (s *probeSock) receive(msg string, wait time.Duration) bool {
	tv := unix.NsecToTimeval(wait.Nanoseconds())
	if unix.SetsockoptTimeval(s.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv) != nil {
		return false
	}
	buf := make([]byte, len(msg)+1)
	n, _, err := unix.Recvfrom(s.fd, buf, 0)
	return err == nil && string(buf[:n]) == msg
}
