//go:build linux

package main

import (
	"errors"
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"
)

// The IP socket actions: connect, socket, listen-and-connect and
// abstract-connect, each through raw syscalls for the kernel's own errno.

// sockaddr converts "HOST:PORT" for an AF_INET or AF_INET6 socket.
func sockaddr(hostport string, v6 bool) (unix.Sockaddr, error) {
	ap, err := netip.ParseAddrPort(hostport)
	if err != nil {
		return nil, err
	}
	if v6 {
		if !ap.Addr().Is6() {
			return nil, fmt.Errorf("%s is not an IPv6 address", hostport)
		}
		return &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}, nil
	}
	if !ap.Addr().Is4() {
		return nil, fmt.Errorf("%s is not an IPv4 address", hostport)
	}
	return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}, nil
}

// setTimeouts bounds blocking connect, send and recv (SO_SNDTIMEO also
// bounds connect on Linux).
func setTimeouts(fd int, sec int64) {
	tv := unix.Timeval{Sec: sec}
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv)
}

// connect opens a socket of kind and connects it to hostport. TCP and MPTCP
// succeed when connect does (the first bytes the server sends, if any, go
// into detail). UDP succeeds only when a reply datagram arrives within the
// timeout, so ok means the datagram really got through.
// connectFD connects fd to sa. A socket with a send timeout is not
// restarted after a signal, and the Go runtime's preemption signal can
// land while a slow (emulated) kernel connects: on EINTR the connection
// goes on, so wait for it and take its outcome.
func connectFD(fd int, sa unix.Sockaddr) error {
	err := unix.Connect(fd, sa)
	if err != unix.EINTR {
		return err
	}
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	for {
		n, err := unix.Poll(pfd, 2000)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return unix.ETIMEDOUT
		}
		soErr, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
		if err != nil {
			return err
		}
		if soErr != 0 {
			return unix.Errno(soErr)
		}
		return nil
	}
}

func connect(kind, hostport string) (result, error) {
	op := "connect-" + kind
	var family, typ, proto int
	switch kind {
	case "tcp4", "tcp6":
		typ = unix.SOCK_STREAM
	case "mptcp4", "mptcp6":
		typ, proto = unix.SOCK_STREAM, unix.IPPROTO_MPTCP
	case "udp4", "udp6":
		typ = unix.SOCK_DGRAM
	default:
		return result{}, fmt.Errorf("connect: unknown kind %q", kind)
	}
	v6 := kind[len(kind)-1] == '6'
	family = unix.AF_INET
	if v6 {
		family = unix.AF_INET6
	}
	sa, err := sockaddr(hostport, v6)
	if err != nil {
		return result{}, fmt.Errorf("connect: %w", err)
	}
	fd, err := unix.Socket(family, typ|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return failErr(op, err, "socket"), nil
	}
	defer unix.Close(fd)
	setTimeouts(fd, 2)
	if err := connectFD(fd, sa); err != nil {
		return failErr(op, err, "connect "+hostport), nil
	}
	buf := make([]byte, 256)
	if typ == unix.SOCK_STREAM {
		n, _ := unix.Read(fd, buf)
		return result{Op: op, OK: true, Detail: string(buf[:max(n, 0)])}, nil
	}
	if _, err := unix.Write(fd, []byte("ping")); err != nil {
		return failErr(op, err, "send"), nil
	}
	n, err := unix.Read(fd, buf)
	if errors.Is(err, unix.EAGAIN) {
		return fail(op, "ETIMEDOUT", "no reply datagram within 2s"), nil
	}
	if err != nil {
		return failErr(op, err, "recv"), nil
	}
	return result{Op: op, OK: true, Detail: string(buf[:n])}, nil
}

func socketOp(kind string) (result, error) {
	op := "socket-" + kind
	var family, typ, proto int
	switch kind {
	case "vsock":
		family, typ = unix.AF_VSOCK, unix.SOCK_STREAM
	case "packet":
		family, typ, proto = unix.AF_PACKET, unix.SOCK_RAW, int(htons(unix.ETH_P_ALL))
	case "inet":
		family, typ = unix.AF_INET, unix.SOCK_STREAM
	case "inet6":
		family, typ = unix.AF_INET6, unix.SOCK_STREAM
	case "unix":
		family, typ = unix.AF_UNIX, unix.SOCK_STREAM
	case "netlink":
		family, typ, proto = unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE
	default:
		return result{}, fmt.Errorf("socket: unknown family %q", kind)
	}
	fd, err := unix.Socket(family, typ|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return failErr(op, err, "socket"), nil
	}
	unix.Close(fd)
	return result{Op: op, OK: true}, nil
}

func port(sa unix.Sockaddr) int {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return a.Port
	case *unix.SockaddrInet6:
		return a.Port
	}
	return 0
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// listenAndConnect starts a TCP server on loopback port p (0: any) inside
// the sandbox and connects to it, the way test suites do.
func listenAndConnect(kind string, p int) (result, error) {
	op := "listen-and-connect-" + kind
	var family int
	var bindAddr unix.Sockaddr
	switch kind {
	case "tcp4":
		family, bindAddr = unix.AF_INET, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}, Port: p}
	case "tcp6":
		family, bindAddr = unix.AF_INET6, &unix.SockaddrInet6{Addr: netip.IPv6Loopback().As16(), Port: p}
	default:
		return result{}, fmt.Errorf("listen-and-connect: unknown kind %q", kind)
	}
	ln, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return failErr(op, err, "socket"), nil
	}
	defer unix.Close(ln)
	if err := unix.Bind(ln, bindAddr); err != nil {
		return failErr(op, err, "bind"), nil
	}
	if err := unix.Listen(ln, 1); err != nil {
		return failErr(op, err, "listen"), nil
	}
	addr, err := unix.Getsockname(ln)
	if err != nil {
		return failErr(op, err, "getsockname"), nil
	}
	c, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return failErr(op, err, "socket (client)"), nil
	}
	defer unix.Close(c)
	setTimeouts(c, 2)
	if err := unix.Connect(c, addr); err != nil {
		return failErr(op, err, "connect"), nil
	}
	s, _, err := unix.Accept(ln)
	if err != nil {
		return failErr(op, err, "accept"), nil
	}
	defer unix.Close(s)
	if _, err := unix.Write(s, []byte("x")); err != nil {
		return failErr(op, err, "write"), nil
	}
	buf := make([]byte, 1)
	if n, err := unix.Read(c, buf); err != nil || n != 1 {
		return failErr(op, errors.Join(err, errors.New("short read")), "read"), nil
	}
	return result{Op: op, OK: true, Detail: "served and reached port " + itoa(port(addr))}, nil
}

// abstractConnect connects a stream socket to the abstract unix socket
// @name (Linux's abstract namespace: no file, one namespace per network
// namespace) and returns the first bytes the server sends.
func abstractConnect(name string) result {
	op := "abstract-connect"
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return failErr(op, err, "socket")
	}
	defer unix.Close(fd)
	setTimeouts(fd, 2)
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: "@" + name}); err != nil {
		return failErr(op, err, "connect @"+name)
	}
	buf := make([]byte, 256)
	n, _ := unix.Read(fd, buf)
	return result{Op: op, OK: true, Detail: string(buf[:max(n, 0)])}
}
