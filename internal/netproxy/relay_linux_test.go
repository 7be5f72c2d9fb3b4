//go:build linux

package netproxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/sbx-sandbox/sbx/internal/netrule"
)

// pattern is n bytes that differ from one MiB to the next, so that a
// relay that drops, repeats or reorders a chunk is caught.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i ^ i>>20)
	}
	return b
}

// connPair is two ends of one loopback TCP connection, as the proxy makes
// them (non-blocking fds served by the runtime's poller).
func connPair(t *testing.T) (*conn, *conn) {
	t.Helper()
	l, err := Listen(netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	a, err := dialTCP(ctx, l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// TestCopyConn moves 5 MiB (more than the buffer and the socket buffers
// hold) one way through the relay's copy, and checks the bytes and the EOF arrive as sent.
func TestCopyConn(t *testing.T) {
	data := pattern(5<<20 + 123)
	for _, tc := range []struct {
		name string
		copy func(dst, src *conn) error
	}{
		{"buffer", copyConn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, src := connPair(t)
			dst, out := connPair(t)
			errc := make(chan error, 1)
			go func() {
				err := tc.copy(dst, src)
				dst.CloseWrite()
				errc <- err
			}()
			go func() {
				in.Write(data)
				in.CloseWrite()
			}()
			got, err := io.ReadAll(out)
			if err != nil {
				t.Fatal(err)
			}
			if err := <-errc; err != nil {
				t.Fatalf("copy: %v", err)
			}
			if !bytes.Equal(got, data) {
				t.Fatalf("got %d bytes, want %d (equal: %v)", len(got), len(data), bytes.Equal(got, data))
			}
		})
	}
}

// TestRelayHalfClose tunnels through SOCKS5 to an upstream that answers
// only once it has read the client's whole request (EOF): the client's
// shutdown of its sending side must reach upstream while the answer still
// comes back.
func TestRelayHalfClose(t *testing.T) {
	req, answer := pattern(3<<20), pattern(4<<20+7)
	ul, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ul.Close()
	upErr := make(chan error, 1)
	go func() {
		c, err := ul.Accept()
		if err != nil {
			upErr <- err
			return
		}
		defer c.Close()
		got, err := io.ReadAll(c)
		if err == nil && !bytes.Equal(got, req) {
			err = fmt.Errorf("upstream got %d bytes, want %d", len(got), len(req))
		}
		c.Write(answer)
		upErr <- err
	}()
	port := ul.Addr().(*net.TCPAddr).Port
	proxy, _ := startProxy(t, Policy{
		Allowed:               pats(t, fmt.Sprintf("up.test:%d", port)),
		Resolve:               []netrule.Resolve{pin(t, "up.test", port, "127.0.0.1")},
		AllowPrivateAddresses: true,
	})
	code, c := socksConnect(t, proxy, "up.test", port)
	if code != 0 {
		t.Fatalf("socks reply %#x", code)
	}
	defer c.Close()
	go func() {
		c.Write(req)
		c.(*net.TCPConn).CloseWrite()
	}()
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-upErr; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, answer) {
		t.Fatalf("client got %d bytes, want %d", len(got), len(answer))
	}
}
