package netproxy

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
)

// BenchmarkConnectSetup measures one TCP connection made through the proxy
// (SOCKS5 and CONNECT, up to the upstream connection being ready) beside a
// direct connection to the same loopback origin.
func BenchmarkConnectSetup(b *testing.B) {
	o := startOrigins(b)
	proxy, _ := startProxy(b, testPolicy(b, o, true))
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			c, err := net.Dial("tcp", o.plain.Listener.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			c.Close()
		}
	})
	b.Run("socks5", func(b *testing.B) {
		for b.Loop() {
			code, c := socksConnect(b, proxy, "good.test", o.plainPort)
			if code != 0 {
				b.Fatalf("reply %#x", code)
			}
			c.Close()
		}
	})
	b.Run("connect", func(b *testing.B) {
		buf := make([]byte, 64)
		for b.Loop() {
			c, err := net.Dial("tcp", proxy)
			if err != nil {
				b.Fatal(err)
			}
			fmt.Fprintf(c, "CONNECT good.test:%d HTTP/1.1\r\nHost: good.test\r\n\r\n", o.plainPort)
			n, err := io.ReadAtLeast(c, buf, len("HTTP/1.1 200 Connection established\r\n\r\n"))
			if err != nil || string(buf[9:12]) != "200" {
				b.Fatalf("%q %v", buf[:n], err)
			}
			c.Close()
		}
	})
}

// BenchmarkThroughput downloads 200 MB over HTTP directly and through the
// proxy (CONNECT tunnel and plain-HTTP forwarding) from the same origin.
func BenchmarkThroughput(b *testing.B) {
	const size = 200 << 20
	o := startOrigins(b)
	proxy, _ := startProxy(b, testPolicy(b, o, true))
	u := fmt.Sprintf("http://good.test:%d/big?n=%d", o.plainPort, size)
	direct := &http.Client{Transport: &http.Transport{DialContext: func(_ context.Context, _, _ string) (net.Conn, error) {
		return net.Dial("tcp", o.plain.Listener.Addr().String())
	}}}
	run := func(b *testing.B, c *http.Client) {
		b.SetBytes(size)
		for b.Loop() {
			resp, err := c.Get(u)
			if err != nil {
				b.Fatal(err)
			}
			n, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil || n != size {
				b.Fatalf("%d bytes, %v", n, err)
			}
		}
	}
	b.Run("direct", func(b *testing.B) { run(b, direct) })
	b.Run("plain-http", func(b *testing.B) { run(b, proxiedClient(o, proxy)) })
	b.Run("socks5", func(b *testing.B) {
		run(b, &http.Client{Transport: &http.Transport{DialContext: func(_ context.Context, _, _ string) (net.Conn, error) {
			code, c := socksConnect(b, proxy, "good.test", o.plainPort)
			if code != 0 {
				return nil, fmt.Errorf("reply %#x", code)
			}
			return c, nil
		}}})
	})
}
