package netproxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/netrule"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// origins are an HTTPS and an HTTP server on loopback standing in for the
// internet.
type origins struct {
	tls, plain         *httptest.Server
	tlsPort, plainPort int
	roots              *x509.CertPool
}

func startOrigins(t testing.TB) *origins {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			n, _ := strconv.Atoi(r.URL.Query().Get("n"))
			w.Header().Set("Content-Length", strconv.Itoa(n))
			buf := make([]byte, 256<<10)
			for n > 0 {
				k := min(n, len(buf))
				w.Write(buf[:k])
				n -= k
			}
			return
		}
		fmt.Fprintf(w, "hello %s", r.Host)
	})
	o := &origins{tls: httptest.NewTLSServer(h), plain: httptest.NewServer(h)}
	t.Cleanup(o.tls.Close)
	t.Cleanup(o.plain.Close)
	o.tlsPort = o.tls.Listener.Addr().(*net.TCPAddr).Port
	o.plainPort = o.plain.Listener.Addr().(*net.TCPAddr).Port
	o.roots = x509.NewCertPool()
	o.roots.AddCert(o.tls.Certificate())
	return o
}

func pats(t testing.TB, list ...string) []netrule.Pattern {
	t.Helper()
	var out []netrule.Pattern
	for _, s := range list {
		p, err := netrule.ParsePattern(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

func pin(t testing.TB, host string, port int, addr string) netrule.Resolve {
	r, err := netrule.ParseResolve(fmt.Sprintf("%s:%d:%s", host, port, addr))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// startProxy serves pol on a loopback listener.
func startProxy(t testing.TB, pol Policy) (string, *Collector) {
	var c Collector
	s := New(pol, Options{OnDenial: c.Add})
	l, err := Listen(netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(l)
	t.Cleanup(func() { s.Close() })
	return l.Addr().String(), &c
}

// testPolicy allows good.test and *.sub.test on the origins' ports, pins
// every test name to loopback (meta.test to the metadata address) and
// denies bad.test.
func testPolicy(t testing.TB, o *origins, private bool) Policy {
	pol := Policy{AllowPrivateAddresses: private}
	for _, port := range []int{o.tlsPort, o.plainPort} {
		pol.Allowed = append(pol.Allowed, pats(t,
			fmt.Sprintf("good.test:%d", port), fmt.Sprintf("*.sub.test:%d", port),
			fmt.Sprintf("bad.test:%d", port), fmt.Sprintf("meta.test:%d", port))...)
		pol.Denied = append(pol.Denied, pats(t, fmt.Sprintf("bad.test:%d", port))...)
		for _, h := range []string{"good.test", "a.sub.test", "sub.test", "bad.test", "other.test", "dflt.test"} {
			pol.Resolve = append(pol.Resolve, pin(t, h, port, "127.0.0.1"))
		}
		pol.Resolve = append(pol.Resolve, pin(t, "meta.test", port, "169.254.169.254"))
	}
	pol.Allowed = append(pol.Allowed, pats(t, "dflt.test")...)
	pol.Lookup = func(context.Context, string) ([]netip.Addr, error) {
		t.Error("DNS asked: every test name is pinned")
		return nil, fmt.Errorf("no DNS in tests")
	}
	return pol
}

func proxiedClient(o *origins, proxy string) *http.Client {
	u, _ := url.Parse("http://" + proxy)
	return &http.Client{Transport: &http.Transport{
		Proxy:           http.ProxyURL(u),
		TLSClientConfig: &tls.Config{RootCAs: o.roots, ServerName: "example.com"},
	}}
}

func get(t *testing.T, c *http.Client, u string) string {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s %s", u, resp.Status, b)
	}
	return string(b)
}

// rawConnect sends CONNECT and returns the status and body of a refusal.
func rawConnect(t *testing.T, proxy, target string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// socksConnect is a minimal SOCKS5 client: no auth, CONNECT to a domain
// name or an IP. It returns the reply code and, on success, the connection.
func socksConnect(t testing.TB, proxy, host string, port int) (byte, net.Conn) {
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	req := []byte{5, 1, 0, 5, 1, 0}
	if a, err := netip.ParseAddr(host); err == nil && a.Is4() {
		b := a.As4()
		req = append(append(req, 1), b[:]...)
	} else if err == nil {
		b := a.As16()
		req = append(append(req, 4), b[:]...)
	} else {
		req = append(append(req, 3, byte(len(host))), host...)
	}
	req = binary.BigEndian.AppendUint16(req, uint16(port))
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	var rep [12]byte
	if _, err := io.ReadFull(c, rep[:]); err != nil {
		t.Fatal(err)
	}
	if rep[0] != 5 || rep[1] != 0 || rep[2] != 5 {
		t.Fatalf("socks reply %x", rep)
	}
	if rep[3] != 0 {
		c.Close()
		return rep[3], nil
	}
	return 0, c
}

func want(host string, port int, reason, addr string) []CountedDenial {
	return []CountedDenial{{Denial: Denial{Operation: "connect", Domain: host, Port: port, Source: "proxy", Confidence: "observed", Reason: reason, Address: addr}, Count: 1}}
}

func TestAllowed(t *testing.T) {
	o := startOrigins(t)
	proxy, col := startProxy(t, testPolicy(t, o, true))
	c := proxiedClient(o, proxy)
	if got := get(t, c, fmt.Sprintf("https://good.test:%d/", o.tlsPort)); got != fmt.Sprintf("hello good.test:%d", o.tlsPort) {
		t.Errorf("CONNECT: %q", got)
	}
	if got := get(t, c, fmt.Sprintf("https://a.sub.test:%d/", o.tlsPort)); !strings.HasPrefix(got, "hello a.sub.test") {
		t.Errorf("CONNECT wildcard: %q", got)
	}
	// Twice: the second request reuses the kept-alive connection.
	for range 2 {
		if got := get(t, c, fmt.Sprintf("http://good.test:%d/x", o.plainPort)); got != fmt.Sprintf("hello good.test:%d", o.plainPort) {
			t.Errorf("plain HTTP: %q", got)
		}
	}
	code, conn := socksConnect(t, proxy, "good.test", o.plainPort)
	if code != 0 {
		t.Fatalf("SOCKS5: reply %#x", code)
	}
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: good.test\r\nConnection: close\r\n\r\n")
	b, _ := io.ReadAll(conn)
	conn.Close()
	if !strings.HasSuffix(string(b), "hello good.test") {
		t.Errorf("SOCKS5: %q", b)
	}
	if d := col.Denials(); len(d) != 0 {
		t.Errorf("denials: %+v", d)
	}
}

func TestIPLiteralPattern(t *testing.T) {
	o := startOrigins(t)
	pol := Policy{Allowed: pats(t, fmt.Sprintf("127.0.0.1:%d", o.plainPort)), AllowPrivateAddresses: true}
	proxy, col := startProxy(t, pol)
	code, conn := socksConnect(t, proxy, "127.0.0.1", o.plainPort)
	if code != 0 {
		t.Fatalf("SOCKS5 to an allowed IP: reply %#x", code)
	}
	conn.Close()
	if d := col.Denials(); len(d) != 0 {
		t.Errorf("denials: %+v", d)
	}
}

func TestRefused(t *testing.T) {
	o := startOrigins(t)
	tp, hp := o.tlsPort, o.plainPort
	tests := []struct {
		name    string
		private bool
		// via is "connect", "http" or "socks".
		via    string
		target string
		port   int
		want   []CountedDenial
	}{
		{"denied host", true, "connect", "bad.test", tp, want("bad.test", tp, report.ProxyReasonDenied, "")},
		{"host not listed", true, "connect", "other.test", tp, want("other.test", tp, report.ProxyReasonNotAllowed, "")},
		{"wildcard not the apex", true, "connect", "sub.test", tp, want("sub.test", tp, report.ProxyReasonNotAllowed, "")},
		{"IP literal", true, "connect", "127.0.0.1", tp, want("127.0.0.1", tp, report.ProxyReasonNotAllowed, "")},
		{"resolves to loopback", false, "connect", "good.test", tp, want("good.test", tp, report.ProxyReasonPrivate, "127.0.0.1")},
		{"metadata address", true, "connect", "meta.test", tp, want("meta.test", tp, report.ProxyReasonMetadata, "169.254.169.254")},
		{"non-default port", true, "connect", "dflt.test", tp, want("dflt.test", tp, report.ProxyReasonPort, "")},
		{"upper case and trailing dot are the same host", true, "connect", "BAD.test.", tp, want("bad.test", tp, report.ProxyReasonDenied, "")},
		{"decimal IPv4 spelling", true, "connect", "2130706433", tp, want("2130706433", tp, report.ProxyReasonInvalidHost, "")},
		{"plain HTTP to a denied host", true, "http", "bad.test", hp, want("bad.test", hp, report.ProxyReasonDenied, "")},
		{"plain HTTP resolving to loopback", false, "http", "good.test", hp, want("good.test", hp, report.ProxyReasonPrivate, "127.0.0.1")},
		{"SOCKS5 with a domain", true, "socks", "bad.test", hp, want("bad.test", hp, report.ProxyReasonDenied, "")},
		{"SOCKS5 with an IP", true, "socks", "127.0.0.1", hp, want("127.0.0.1", hp, report.ProxyReasonNotAllowed, "")},
		{"SOCKS5 resolving to loopback", false, "socks", "good.test", hp, want("good.test", hp, report.ProxyReasonPrivate, "127.0.0.1")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			proxy, col := startProxy(t, testPolicy(t, o, tt.private))
			target := net.JoinHostPort(tt.target, strconv.Itoa(tt.port))
			switch tt.via {
			case "connect":
				code, body := rawConnect(t, proxy, target)
				if code != 403 || !strings.Contains(body, tt.want[0].Domain) || !strings.Contains(body, tt.want[0].Reason) {
					t.Errorf("CONNECT %s: %d %q", target, code, body)
				}
			case "http":
				resp, err := proxiedClient(o, proxy).Get("http://" + target + "/")
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 403 || !strings.Contains(string(b), tt.want[0].Reason) {
					t.Errorf("GET %s: %s %q", target, resp.Status, b)
				}
			case "socks":
				if code, _ := socksConnect(t, proxy, tt.target, tt.port); code != socksNotAllowed {
					t.Errorf("SOCKS5 %s: reply %#x, want 0x02", target, code)
				}
			}
			if got := col.Denials(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("denials = %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestCollectorCounts(t *testing.T) {
	o := startOrigins(t)
	proxy, col := startProxy(t, testPolicy(t, o, true))
	for range 3 {
		rawConnect(t, proxy, "other.test:443")
	}
	got := col.Denials()
	if len(got) != 1 || got[0].Count != 3 {
		t.Errorf("denials = %+v, want one with count 3", got)
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		addr string
		want Class
	}{
		{"8.8.8.8", ClassPublic},
		{"2001:4860:4860::8888", ClassPublic},
		{"127.0.0.1", ClassLoopback},
		{"127.1.2.3", ClassLoopback},
		{"::1", ClassLoopback},
		{"::ffff:127.0.0.1", ClassLoopback},
		{"64:ff9b::7f00:1", ClassLoopback},
		{"169.254.169.254", ClassMetadata},
		{"fd00:ec2::254", ClassMetadata},
		{"::ffff:169.254.169.254", ClassMetadata},
		{"169.254.1.1", ClassLinkLocal},
		{"fe80::1", ClassLinkLocal},
		{"10.1.2.3", ClassPrivate},
		{"172.16.0.1", ClassPrivate},
		{"172.31.255.255", ClassPrivate},
		{"172.32.0.1", ClassPublic},
		{"192.168.1.1", ClassPrivate},
		{"100.64.0.1", ClassPrivate},
		{"100.128.0.1", ClassPublic},
		{"fc00::1", ClassPrivate},
		{"fd12:3456::1", ClassPrivate},
		{"0.0.0.0", ClassUnspecified},
		{"::", ClassUnspecified},
		{"224.0.0.1", ClassMulticast},
		{"255.255.255.255", ClassMulticast},
		{"ff02::1", ClassMulticast},
	}
	for _, tt := range tests {
		if got := Classify(netip.MustParseAddr(tt.addr)); got != tt.want {
			t.Errorf("Classify(%s) = %v, want %v", tt.addr, got, tt.want)
		}
	}
}

func TestEnvVars(t *testing.T) {
	env := strings.Join(EnvVars("127.0.0.1:3128", "127.0.0.1:3128"), "\n")
	for _, v := range []string{"HTTP_PROXY=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128",
		"ALL_PROXY=socks5h://127.0.0.1:3128", "no_proxy=localhost,127.0.0.1,::1", "npm_config_https_proxy=http://127.0.0.1:3128"} {
		if !strings.Contains(env, v) {
			t.Errorf("EnvVars lacks %s:\n%s", v, env)
		}
	}
}
