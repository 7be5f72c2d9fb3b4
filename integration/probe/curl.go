//go:build linux

package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// curlMain is `probe curl`: the subset of curl's command line the
// network-by-domain tests use, for machines without curl (the kernel
// matrix's busybox guest, the container passes), so those tests run there
// too. Flags: -f -s -S (any combination), --max-time SECONDS, --cacert FILE,
// --noproxy LIST ("" proxies everything, "*" nothing), --resolve
// HOST:PORT:ADDR, --socks5-hostname HOST:PORT (the proxy resolves),
// --socks5 HOST:PORT (resolved here, --resolve first), -H "Name: value";
// then URLs, fetched in turn, bodies to stdout. The proxy otherwise comes
// from HTTP_PROXY / HTTPS_PROXY (either case) and NO_PROXY, as curl reads
// them. Exit status as curl's: 0, 22 for an HTTP status of 400 or more
// (with -f), 7 when the connection failed, 2 for bad usage.
func curlMain(args []string) int {
	var (
		fail, silent            bool
		maxTime                 = 30 * time.Second
		caFile, socks, noproxy  string
		noproxySet, socksRemote bool
		resolve                 = map[string]string{}
		headers                 [][2]string
		urls                    []string
	)
	for i := 0; i < len(args); i++ {
		a := args[i]
		value := func() (string, bool) {
			if i+1 >= len(args) {
				return "", false
			}
			i++
			return args[i], true
		}
		var ok = true
		var v string
		switch {
		case a == "--max-time":
			if v, ok = value(); ok {
				s, err := strconv.ParseFloat(v, 64)
				ok = err == nil && s > 0
				maxTime = time.Duration(s * float64(time.Second))
			}
		case a == "--cacert":
			caFile, ok = value()
		case a == "--noproxy":
			noproxy, ok = value()
			noproxySet = true
		case a == "--resolve":
			if v, ok = value(); ok {
				parts := strings.SplitN(v, ":", 3)
				ok = len(parts) == 3
				if ok {
					resolve[parts[0]+":"+parts[1]] = parts[2]
				}
			}
		case a == "--socks5-hostname" || a == "--socks5":
			socks, ok = value()
			socksRemote = a == "--socks5-hostname"
		case a == "-H":
			if v, ok = value(); ok {
				name, val, found := strings.Cut(v, ":")
				ok = found
				headers = append(headers, [2]string{strings.TrimSpace(name), strings.TrimSpace(val)})
			}
		case len(a) > 1 && a[0] == '-' && a[1] != '-':
			for _, c := range a[1:] {
				switch c {
				case 'f':
					fail = true
				case 's':
					silent = true
				case 'S':
				default:
					ok = false
				}
			}
		case strings.HasPrefix(a, "-"):
			ok = false
		default:
			urls = append(urls, a)
		}
		if !ok {
			fmt.Fprintf(os.Stderr, "probe curl: bad or unsupported argument %q\n", a)
			return 2
		}
	}
	_ = silent
	if len(urls) == 0 {
		fmt.Fprintln(os.Stderr, "probe curl: no URL")
		return 2
	}
	tlsConf := &tls.Config{}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			fmt.Fprintf(os.Stderr, "probe curl: %v\n", err)
			return 77
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		tlsConf.RootCAs = pool
	}
	dialer := &net.Dialer{Timeout: maxTime}
	dialResolved := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if to, ok := resolve[addr]; ok {
			_, port, _ := net.SplitHostPort(addr)
			addr = net.JoinHostPort(to, port)
		}
		return dialer.DialContext(ctx, network, addr)
	}
	tr := &http.Transport{TLSClientConfig: tlsConf, DisableKeepAlives: true, DialContext: dialResolved}
	if socks != "" {
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			if !socksRemote {
				host, port, _ := net.SplitHostPort(addr)
				if to, ok := resolve[addr]; ok {
					addr = net.JoinHostPort(to, port)
				} else if ips, err := net.DefaultResolver.LookupHost(ctx, host); err == nil && len(ips) > 0 {
					addr = net.JoinHostPort(ips[0], port)
				}
			}
			return socks5Dial(ctx, dialer, socks, addr)
		}
	} else {
		tr.Proxy = func(r *http.Request) (*url.URL, error) { return proxyFor(r.URL, noproxy, noproxySet) }
	}
	client := &http.Client{Transport: tr, Timeout: maxTime}
	for _, u := range urls {
		req, err := http.NewRequest("GET", u, nil)
		if err != nil {
			fmt.Fprintf(os.Stderr, "probe curl: %v\n", err)
			return 3
		}
		for _, h := range headers {
			req.Header.Set(h[0], h[1])
		}
		resp, err := client.Do(req)
		if err != nil {
			fmt.Fprintf(os.Stderr, "probe curl: (7) %v\n", err)
			return 7
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if fail && resp.StatusCode >= 400 {
			fmt.Fprintf(os.Stderr, "probe curl: (22) The requested URL returned error: %d\n", resp.StatusCode)
			return 22
		}
		os.Stdout.Write(body)
		if err != nil {
			fmt.Fprintf(os.Stderr, "probe curl: (56) %v\n", err)
			return 56
		}
	}
	return 0
}

// proxyFor is curl's choice of proxy for u: the scheme's variable (either
// case; ALL_PROXY after), unless NO_PROXY (or --noproxy, which replaces
// it) names the host. Unlike Go's own, loopback is not exempt.
func proxyFor(u *url.URL, noproxy string, noproxySet bool) (*url.URL, error) {
	env := func(name string) string {
		if v := os.Getenv(strings.ToLower(name)); v != "" {
			return v
		}
		return os.Getenv(name)
	}
	if !noproxySet {
		noproxy = env("NO_PROXY")
	}
	host := u.Hostname()
	for _, n := range strings.Split(noproxy, ",") {
		n = strings.TrimPrefix(strings.TrimSpace(n), ".")
		if n == "*" || (n != "" && (host == n || strings.HasSuffix(host, "."+n))) {
			return nil, nil
		}
	}
	p := env(strings.ToUpper(u.Scheme) + "_PROXY")
	if p == "" {
		p = env("ALL_PROXY")
	}
	if p == "" {
		return nil, nil
	}
	return url.Parse(p)
}

// socks5Dial opens a SOCKS5 CONNECT to addr (a name or an address, as
// given) through the proxy at server, without authentication.
func socks5Dial(ctx context.Context, d *net.Dialer, server, addr string) (net.Conn, error) {
	c, err := d.DialContext(ctx, "tcp", server)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	fail := func(err error) (net.Conn, error) { c.Close(); return nil, err }
	if _, err := c.Write([]byte{5, 1, 0}); err != nil {
		return fail(err)
	}
	r := bufio.NewReader(c)
	var hello [2]byte
	if _, err := io.ReadFull(r, hello[:]); err != nil || hello != [2]byte{5, 0} {
		return fail(fmt.Errorf("socks5: no method accepted (%v)", err))
	}
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return fail(err)
	}
	port, _ := strconv.Atoi(portText)
	req := []byte{5, 1, 0}
	if ip := net.ParseIP(host); ip != nil && ip.To4() != nil {
		req = append(append(req, 1), ip.To4()...)
	} else if ip != nil {
		req = append(append(req, 4), ip.To16()...)
	} else {
		req = append(append(req, 3, byte(len(host))), host...)
	}
	req = binary.BigEndian.AppendUint16(req, uint16(port))
	if _, err := c.Write(req); err != nil {
		return fail(err)
	}
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return fail(err)
	}
	if head[1] != 0 {
		return fail(fmt.Errorf("socks5: the proxy refused the connection (reply %d)", head[1]))
	}
	skip := map[byte]int{1: 4, 4: 16}[head[3]]
	if head[3] == 3 {
		n, err := r.ReadByte()
		if err != nil {
			return fail(err)
		}
		skip = int(n)
	}
	if _, err := io.CopyN(io.Discard, r, int64(skip+2)); err != nil {
		return fail(err)
	}
	if r.Buffered() > 0 {
		return fail(errors.New("socks5: data before the connection was up"))
	}
	c.SetDeadline(time.Time{})
	return c, nil
}
