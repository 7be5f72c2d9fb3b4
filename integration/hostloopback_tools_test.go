//go:build linux

package integration

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// The host-loopback denial (TestHostServiceCutOff, with the probe) as real
// tools meet it (issue 29's leftover): with the network off, a client of a
// server on the host's loopback reaches the call's own loopback and gets
// ECONNREFUSED. Each case asserts the denial (a connect of the address the
// tool dialled, host loopback's reason) and that the retry it carries, a
// full network (--network; additional_permissions.network through sbx
// serve), applied as is, makes the same command work: run -> denial ->
// retry -> success. Checked by hand the same way, and reporting: curl
// through --allow-domain's proxy, npm install --registry and pip install
// --index-url of integration/localreg, GOPROXY, git ls-remote.

// loopbackHTTP serves token over HTTP on the host's 127.0.0.1 and, where
// there is one, ::1 (a port each), and returns their host:port by family
// ("4", "6").
func loopbackHTTP(t *testing.T, token string) map[string]string {
	t.Helper()
	hosts := map[string]string{"4": "127.0.0.1:0"}
	if has(t, "ipv6-loopback") {
		hosts["6"] = "[::1]:0"
	}
	addrs := map[string]string{}
	for v, host := range hosts {
		ln, err := net.Listen("tcp"+v, host)
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{ReadHeaderTimeout: 10 * time.Second,
			Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, token) })}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		addrs[v] = ln.Addr().String()
	}
	return addrs
}

// fastOpenPy sends an HTTP request with TCP Fast Open (MSG_FASTOPEN on an
// unconnected TCP socket: the connect is the send), by sendto or sendmsg,
// and prints the response.
const fastOpenPy = `import socket, sys
how, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
req = b"GET / HTTP/1.0\r\nHost: x\r\n\r\n"
if how == "sendto":
    s.sendto(req, socket.MSG_FASTOPEN, (host, port))
else:
    s.sendmsg([req], [], socket.MSG_FASTOPEN, (host, port))
out = b""
while True:
    b = s.recv(4096)
    if not b:
        break
    out += b
print(out.decode())
`

// TestHostLoopbackTools: curl (an address, and localhost with its happy
// eyeballs over ::1 and 127.0.0.1), Python's urllib, Node's http (a
// non-blocking connect), and Python's TCP Fast Open by sendto and sendmsg,
// each against a server on the host's loopback with the network off, in
// read-only and workspace-write. Before sbx took MSG_FASTOPEN for the
// connect it is, the Fast Open cases got ECONNREFUSED with no denial.
func TestHostLoopbackTools(t *testing.T) {
	Require(t, "netns")
	Require(t, "user-notif")
	token := fmt.Sprintf("sbx-it-loopback-%d", time.Now().UnixNano())
	addrs := loopbackHTTP(t, token)
	cases := []struct {
		name, tool, family string
		syscall            string
		argv               func(hostport string) []string
	}{
		{"curl", "curl", "4", "connect", func(hp string) []string { return []string{"curl", "-sS", "--noproxy", "*", "http://" + hp + "/"} }},
		{"curl6", "curl", "6", "connect", func(hp string) []string { return []string{"curl", "-sS", "--noproxy", "*", "http://" + hp + "/"} }},
		{"curl-localhost", "curl", "4", "connect", localhostCurl},
		{"curl-localhost6", "curl", "6", "connect", localhostCurl},
		{"python-urllib", "python3", "4", "connect", func(hp string) []string {
			return []string{"python3", "-B", "-c", "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1]).read().decode())", "http://" + hp + "/"}
		}},
		{"node-http", "node", "4", "connect", func(hp string) []string {
			return []string{"node", "-e", `require("http").get(process.argv[1], r => r.pipe(process.stdout)).on("error", e => { console.error(e.message); process.exit(3) })`, "http://" + hp + "/"}
		}},
		{"python-fastopen-sendto", "python3", "4", "sendto", fastOpen("sendto")},
		{"python-fastopen-sendto6", "python3", "6", "sendto", fastOpen("sendto")},
		{"python-fastopen-sendmsg", "python3", "4", "sendmsg", fastOpen("sendmsg")},
	}
	for _, mode := range [][]string{readOnly, wsWrite} {
		for _, c := range cases {
			t.Run(mode[1]+"/"+c.name, func(t *testing.T) {
				needTool(t, c.tool)
				hostport, ok := addrs[c.family]
				if !ok {
					Require(t, "ipv6-loopback")
				}
				ws := workspace(t)
				out, rep := run(t, ws, mode, c.argv(hostport)...)
				if out.code == 0 || strings.Contains(out.stdout, token) {
					t.Fatalf("the host's server answered with the network off: exit %d %q", out.code, out.stdout)
				}
				wantLoopbackDenial(t, rep, c.syscall, hostport)
				again := retryOutcome(t, ws, rep)
				if again.code != 0 || !strings.Contains(again.stdout, token) {
					t.Errorf("the retry did not reach the server: exit %d\nstdout: %s\nstderr: %s", again.code, again.stdout, again.stderr)
				}
			})
		}
	}
}

// localhostCurl is curl of http://localhost:PORT/, PORT that of hostport.
func localhostCurl(hostport string) []string {
	ap := netip.MustParseAddrPort(hostport)
	return []string{"curl", "-sS", "--noproxy", "*", fmt.Sprintf("http://localhost:%d/", ap.Port())}
}

func fastOpen(how string) func(string) []string {
	return func(hostport string) []string {
		ap := netip.MustParseAddrPort(hostport)
		return []string{"python3", "-B", "-c", fastOpenPy, how, ap.Addr().String(), fmt.Sprint(ap.Port())}
	}
}

// wantLoopbackDenial asserts that the report's one network denial is a
// connect (by syscall) of hostport, a host loopback service, observed.
// Other denials (a tool's own cache in read-only) are not this test's.
func wantLoopbackDenial(t *testing.T, rep *report, syscall, hostport string) {
	t.Helper()
	var ds []netDenial
	for _, d := range netDenials(t, rep) {
		if d.Address != nil {
			ds = append(ds, d)
		}
	}
	ap := netip.MustParseAddrPort(hostport)
	family := map[bool]string{false: "inet", true: "inet6"}[ap.Addr().Is6()]
	if len(ds) != 1 {
		t.Fatalf("network denials %v, want exactly one connect of %s", ds, hostport)
	}
	d := ds[0]
	if d.Operation != "connect" || d.Syscall != syscall || d.Source != "seccomp-supervisor" || d.Confidence != "observed" ||
		d.Reason != hostLoopbackReason || d.Address.Family != family || d.Address.Address != ap.Addr().String() || d.Address.Port != int(ap.Port()) {
		t.Errorf("denial %v, want connect %s %s [%s]:%d (seccomp-supervisor, observed) %q", d, syscall, family, ap.Addr(), ap.Port(), hostLoopbackReason)
	}
}
