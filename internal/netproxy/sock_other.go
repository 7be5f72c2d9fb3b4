//go:build !linux

package netproxy

import (
	"context"
	"errors"
	"net/netip"
	"time"
)

// The proxy's sockets and resolver are Linux's only so far: macOS and
// Windows report network-domains as not enforced and never serve a proxy.

var errUnsupported = errors.New("netproxy: not supported on this platform")

// Listener is a listening TCP socket the proxy serves.
type Listener struct{}

// FileListener takes a listening TCP socket; not supported here.
func FileListener(fd int) (*Listener, error) { return nil, errUnsupported }

// Listen makes a listening socket on addr; not supported here.
func Listen(addr netip.AddrPort) (*Listener, error) { return nil, errUnsupported }

func (l *Listener) Addr() netip.AddrPort         { return netip.AddrPort{} }
func (l *Listener) Close() error                 { return nil }
func (l *Listener) accept() (*conn, error)       { return nil, errUnsupported }
func (l *Listener) Accept() (Conn, error)        { return nil, errUnsupported }
func copyConn(dst, src *conn) error              { return errUnsupported }
func (c *conn) Read(b []byte) (int, error)       { return 0, errUnsupported }
func (c *conn) Write(b []byte) (int, error)      { return 0, errUnsupported }
func (c *conn) Close() error                     { return nil }
func (c *conn) CloseWrite() error                { return nil }
func (c *conn) SetDeadline(time.Time) error      { return errUnsupported }
func (c *conn) SetReadDeadline(time.Time) error  { return errUnsupported }
func (c *conn) SetWriteDeadline(time.Time) error { return errUnsupported }

type conn struct{}

func dialTCP(ctx context.Context, ap netip.AddrPort) (*conn, error) { return nil, errUnsupported }

type dnsError struct{ host, msg string }

func (e *dnsError) Error() string { return "lookup " + e.host + ": " + e.msg }

func lookupHost(ctx context.Context, host string) ([]netip.Addr, error) { return nil, errUnsupported }

// Addrs returns c's local and remote addresses; not supported here.
func Addrs(c Conn) (local, remote netip.AddrPort, err error) { return local, remote, errUnsupported }
