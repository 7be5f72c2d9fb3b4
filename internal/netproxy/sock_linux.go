//go:build linux

package netproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The proxy's sockets are *os.File on non-blocking socket fds, which the
// runtime's poller serves as it serves package net's: package net (and
// net/http on it) would link its cgo resolver into sbx, which must stay a
// static binary (cmd/sbx's TestNoCgo: the dynamic loader costs every call
// ~0.6 ms).

// Listener is a listening TCP socket the proxy serves.
type Listener struct {
	f    *os.File
	addr netip.AddrPort
}

// FileListener takes fd, a listening TCP socket (made by the launcher
// inside the sandbox's network namespace); closing the Listener closes it.
func FileListener(fd int) (*Listener, error) {
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("listener: %w", err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("listener: getsockname: %w", err)
	}
	return &Listener{f: os.NewFile(uintptr(fd), "proxy-listener"), addr: fromSockaddr(sa)}, nil
}

// Listen makes a listening socket on addr (port 0: any), for tests and
// benchmarks; the launcher makes its own (FileListener).
func Listen(addr netip.AddrPort) (*Listener, error) {
	fd, err := unix.Socket(family(addr.Addr()), unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("listen %s: socket: %w", addr, err)
	}
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	if err := unix.Bind(fd, toSockaddr(addr)); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("listen %s: bind: %w", addr, err)
	}
	if err := unix.Listen(fd, unix.SOMAXCONN); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	return FileListener(fd)
}

// Addr is the address the listener is bound to.
func (l *Listener) Addr() netip.AddrPort { return l.addr }

// Close stops the listener; a blocked Accept returns.
func (l *Listener) Close() error { return l.f.Close() }

// accept waits for the next connection.
func (l *Listener) accept() (*conn, error) {
	rc, err := l.f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var nfd int
	var aerr error
	err = rc.Read(func(fd uintptr) bool {
		nfd, _, aerr = unix.Accept4(int(fd), unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		return aerr != unix.EAGAIN
	})
	if err != nil {
		return nil, err
	}
	if aerr == unix.ECONNABORTED || aerr == unix.EINTR {
		return nil, errTransientAccept
	}
	if aerr != nil {
		return nil, fmt.Errorf("accept4: %w", aerr)
	}
	noDelay(nfd)
	return &conn{f: os.NewFile(uintptr(nfd), "proxy-conn")}, nil
}

// Accept waits for the next connection and returns it as a Conn, for
// another server on a socket made here (sbx serve's browser panel). A
// connection the client reset before it was accepted is skipped.
func (l *Listener) Accept() (Conn, error) {
	for {
		c, err := l.accept()
		if errors.Is(err, errTransientAccept) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}

// conn is one TCP connection, client or upstream.
type conn struct{ f *os.File }

func (c *conn) Read(b []byte) (int, error)         { return c.f.Read(b) }
func (c *conn) Write(b []byte) (int, error)        { return c.f.Write(b) }
func (c *conn) Close() error                       { return c.f.Close() }
func (c *conn) SetDeadline(t time.Time) error      { return c.f.SetDeadline(t) }
func (c *conn) SetReadDeadline(t time.Time) error  { return c.f.SetReadDeadline(t) }
func (c *conn) SetWriteDeadline(t time.Time) error { return c.f.SetWriteDeadline(t) }

// CloseWrite shuts the sending side down, so that the peer reads EOF.
func (c *conn) CloseWrite() error {
	rc, err := c.f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Shutdown(int(fd), unix.SHUT_WR) }); err != nil {
		return err
	}
	return serr
}

// copyBufs are the relay's buffers, large enough that a bulk download
// costs few system calls (256 KiB: twice the throughput of 32 KiB here),
// and pooled: allocating and clearing two per connection made connection
// set-up 4x slower.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// copyConn copies src to dst until EOF or an error, through a pooled
// buffer. (splice(2) through a pipe, tried, was slower here: 620-650 MB/s
// against 720-1000 MB/s for plain HTTP in interleaved runs, both sides on
// loopback sharing 2 cores.)
func copyConn(dst, src *conn) error {
	buf := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(buf)
	_, err := io.CopyBuffer(struct{ io.Writer }{dst.f}, struct{ io.Reader }{src.f}, *buf)
	return err
}

// dialTCP connects to ap, waiting at most until ctx's deadline.
func dialTCP(ctx context.Context, ap netip.AddrPort) (*conn, error) {
	fd, err := unix.Socket(family(ap.Addr()), unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	noDelay(fd)
	err = unix.Connect(fd, toSockaddr(ap))
	if err != nil && err != unix.EINPROGRESS {
		unix.Close(fd)
		return nil, fmt.Errorf("connect %s: %w", ap, err)
	}
	c := &conn{f: os.NewFile(uintptr(fd), "proxy-upstream")}
	if err == nil {
		return c, nil
	}
	if d, ok := ctx.Deadline(); ok {
		c.f.SetWriteDeadline(d)
	}
	stop := context.AfterFunc(ctx, func() { c.f.SetWriteDeadline(time.Unix(1, 0)) })
	defer stop()
	rc, err := c.f.SyscallConn()
	if err != nil {
		c.Close()
		return nil, err
	}
	var cerr error
	err = rc.Write(func(fd uintptr) bool {
		// Writable once the connect has finished: SO_ERROR says how.
		v, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_ERROR)
		switch {
		case err != nil:
			cerr = err
		case v != 0:
			cerr = unix.Errno(v)
		default:
			if _, err := unix.Getpeername(int(fd)); err == unix.ENOTCONN {
				return false // still in progress
			}
		}
		return true
	})
	if err == nil {
		err = cerr
	}
	if err != nil {
		c.Close()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = fmt.Errorf("timed out")
		}
		return nil, fmt.Errorf("connect %s: %w", ap, err)
	}
	c.f.SetWriteDeadline(time.Time{})
	return c, nil
}

// noDelay turns Nagle's algorithm off, as package net does for every TCP
// socket: the relay writes what it read at once, and a TLS handshake's
// small records would otherwise wait for the peer's delayed ACK.
func noDelay(fd int) {
	unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
}

func family(a netip.Addr) int {
	if a.Is4() || a.Is4In6() {
		return unix.AF_INET
	}
	return unix.AF_INET6
}

func toSockaddr(ap netip.AddrPort) unix.Sockaddr {
	a := ap.Addr()
	if a.Is4() || a.Is4In6() {
		return &unix.SockaddrInet4{Addr: a.Unmap().As4(), Port: int(ap.Port())}
	}
	return &unix.SockaddrInet6{Addr: a.As16(), Port: int(ap.Port())}
}

func fromSockaddr(sa unix.Sockaddr) netip.AddrPort {
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port))
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr), uint16(sa.Port))
	}
	return netip.AddrPort{}
}

// Addrs returns c's local and remote addresses (getsockname,
// getpeername): the browser panel of sbx serve finds who holds the other
// end of a loopback connection by them.
func Addrs(c Conn) (local, remote netip.AddrPort, err error) {
	cc, ok := c.(*conn)
	if !ok {
		return local, remote, errors.New("netproxy: not a connection of this package")
	}
	rc, err := cc.f.SyscallConn()
	if err != nil {
		return local, remote, err
	}
	var lerr, rerr error
	if err := rc.Control(func(fd uintptr) {
		var sa unix.Sockaddr
		if sa, lerr = unix.Getsockname(int(fd)); lerr == nil {
			local = fromSockaddr(sa)
		}
		if sa, rerr = unix.Getpeername(int(fd)); rerr == nil {
			remote = fromSockaddr(sa)
		}
	}); err != nil {
		return local, remote, err
	}
	if lerr != nil {
		return local, remote, fmt.Errorf("getsockname: %w", lerr)
	}
	if rerr != nil {
		return local, remote, fmt.Errorf("getpeername: %w", rerr)
	}
	return local, remote, nil
}
