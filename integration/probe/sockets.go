//go:build linux

package main

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// unixConnect connects a stream socket to the pathname unix socket at path
// and returns the first bytes the server sends: what Landlock ABI 9's
// LANDLOCK_ACCESS_FS_RESOLVE_UNIX restricts.
func unixConnect(path string) result {
	op := "unix-connect"
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return failErr(op, err, "socket")
	}
	defer unix.Close(fd)
	setTimeouts(fd, 2)
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		return failErr(op, err, "connect "+path)
	}
	buf := make([]byte, 256)
	n, _ := unix.Read(fd, buf)
	return result{Op: op, OK: true, Detail: string(buf[:max(n, 0)])}
}

// unixServe binds a pathname unix socket at path, connects to it and
// exchanges a byte, the way a test suite's local server works.
func unixServe(path string) result {
	op := "unix-serve"
	ln, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return failErr(op, err, "socket")
	}
	defer unix.Close(ln)
	if err := unix.Bind(ln, &unix.SockaddrUnix{Name: path}); err != nil {
		return failErr(op, err, "bind "+path)
	}
	if err := unix.Listen(ln, 1); err != nil {
		return failErr(op, err, "listen")
	}
	r := unixConnectAccept(ln, path)
	r.Op = op
	return r
}

func unixConnectAccept(ln int, path string) result {
	c, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return failErr("", err, "socket (client)")
	}
	defer unix.Close(c)
	if err := unix.Connect(c, &unix.SockaddrUnix{Name: path}); err != nil {
		return failErr("", err, "connect "+path)
	}
	s, _, err := unix.Accept(ln)
	if err != nil {
		return failErr("", err, "accept")
	}
	defer unix.Close(s)
	if _, err := unix.Write(s, []byte("x")); err != nil {
		return failErr("", err, "write")
	}
	// What the server sees of its client (SO_PEERCRED): measured for the
	// supervisor, which connects on the command's behalf.
	cred, err := unix.GetsockoptUcred(s, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return failErr("", err, "SO_PEERCRED")
	}
	return result{OK: true, Detail: fmt.Sprintf("served and reached %s; peer pid=%d uid=%d gid=%d self pid=%d", path, cred.Pid, cred.Uid, cred.Gid, unix.Getpid())}
}

// sendTo sends one datagram with sendto(2) on an unconnected UDP socket, so
// the address is checked at send time rather than by connect.
func sendTo(kind, hostport string) (result, error) {
	op := "sendto-" + kind
	var family int
	switch kind {
	case "udp4":
		family = unix.AF_INET
	case "udp6":
		family = unix.AF_INET6
	default:
		return result{}, fmt.Errorf("sendto: unknown kind %q", kind)
	}
	sa, err := sockaddr(hostport, family == unix.AF_INET6)
	if err != nil {
		return result{}, fmt.Errorf("sendto: %w", err)
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return failErr(op, err, "socket"), nil
	}
	defer unix.Close(fd)
	if err := unix.Sendto(fd, []byte("ping"), 0, sa); err != nil {
		return failErr(op, err, "sendto "+hostport), nil
	}
	return result{Op: op, OK: true, Detail: "sent to " + hostport}, nil
}
