//go:build linux

package integration

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	neturl "net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sbx-sandbox/sbx/integration/localreg"
)

// The host-loopback denial (TestHostServiceCutOff, with the probe) as real
// tools meet it (issue 29's leftover): with the network off, a client of a
// server on the host's loopback reaches the call's own loopback and gets
// ECONNREFUSED. Each case asserts the denial (a connect of the address the
// tool dialled, host loopback's reason) and that the retry it carries, a
// full network (--network; additional_permissions.network through sbx
// serve), applied as is, makes the same command work: run -> denial ->
// retry -> success. Checked by hand the same way, and reporting: git
// ls-remote, a server on :: (dual stack).

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

// TestHostLoopbackTools: curl (an address, one with proxies set that
// except loopback, and localhost with its happy eyeballs over ::1 and
// 127.0.0.1), Python's urllib, Node's http (a
// non-blocking connect), and Python's TCP Fast Open by sendto and sendmsg,
// each against a server on the host's loopback with the network off, in
// read-only and workspace-write, and with the network by domain (the proxy). Before sbx took MSG_FASTOPEN for the
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
		// As a developer's environment has it: a proxy, and loopback
		// excepted (under --allow-domain these replace sbx's own).
		{"curl-env-proxies", "curl", "4", "connect", func(hp string) []string {
			return []string{"env", "http_proxy=http://192.0.2.1:3128", "HTTPS_PROXY=http://192.0.2.1:3128",
				"no_proxy=localhost,127.0.0.1,::1", "curl", "-sS", "http://" + hp + "/"}
		}},
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
	modes := []struct {
		name string
		args []string
	}{{"read-only", readOnly}, {"workspace-write", wsWrite},
		// The network by domain: the proxy's variables are set (sbx's
		// own), and a loopback address bypasses them.
		{"domains", append(slices.Clone(wsWrite), "--allow-domain", "example.com")}}
	for _, mode := range modes {
		for _, c := range cases {
			t.Run(mode.name+"/"+c.name, func(t *testing.T) {
				needTool(t, c.tool)
				hostport, ok := addrs[c.family]
				if !ok {
					Require(t, "ipv6-loopback")
				}
				ws := workspace(t)
				out, rep := run(t, ws, mode.args, c.argv(hostport)...)
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

// TestHostLoopbackRegistries: npm install --registry and pip download
// --index-url of integration/localreg's registries on the host's loopback
// (verdaccio, a PEP 503 index), and go mod download from a GOPROXY there
// (startGoProxy), the package managers as a user runs them
// with no proxy by name, in workspace-write with the network off and by
// domain (the registry's address is not proxied). The connect is denied with
// its address, and the retry (the network, and the tool's cache root it
// found refused) installs the package. Neither retries a refused connect
// (--fetch-retries=0, --retries 0): npm would back off for a minute first.
func TestHostLoopbackRegistries(t *testing.T) {
	Require(t, "netns")
	Require(t, "user-notif")
	cases := []struct {
		name, tool string
		start      func(t *testing.T) string
		argv       func(url, bin string) []string
		setup      func(t *testing.T, ws string)
		installed  string // a file the install leaves in the workspace
	}{
		{"npm", "npm", startNpmRegistry, func(url, _ string) []string {
			return []string{"npm", "install", "--registry", url, "--no-audit", "--no-fund", "--no-update-notifier", "--loglevel=warn",
				"--fetch-retries=0", localreg.NpmPackage}
		}, func(t *testing.T, ws string) {
			writeFile(t, filepath.Join(ws, "package.json"), `{"name": "proj", "version": "1.0.0", "private": true}`+"\n")
		}, filepath.Join("node_modules", localreg.NpmPackage, "package.json")},
		{"pip", "python3", startPipIndex, func(url, _ string) []string {
			return []string{"python3", "-B", "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "--no-input",
				"--progress-bar", "off", "--retries", "0", "--index-url", url, "-d", "dl", localreg.PipPackage}
		}, func(*testing.T, string) {}, filepath.Join("dl", strings.ReplaceAll(localreg.PipPackage, "-", "_")+"-1.0.0-py3-none-any.whl")},
		// GOPROXY on the host's loopback; the module cache in the
		// workspace (the retry for Go's own caches is the tool table's).
		{"go", "go", startGoProxy, func(url, goBin string) []string {
			return []string{"sh", "-c", `GOPROXY=$0 GOSUMDB=off GOFLAGS=-modcacherw GOTOOLCHAIN=local GOMODCACHE="$PWD/modcache" GOCACHE="$PWD/gocache" exec "$1" mod download ` + goProxyModule + "@v1.0.0", url, goBin}
		}, func(*testing.T, string) {}, filepath.Join("modcache", goProxyModule+"@v1.0.0", "hello.go")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// go is not on the unprivileged pass's PATH: goTool finds it
			// where .ci/run installs it.
			bin := c.tool
			if c.tool == "go" {
				bin = goTool(t)
			} else {
				needTool(t, c.tool)
			}
			url := c.start(t)
			u, err := neturl.Parse(url)
			if err != nil {
				t.Fatal(err)
			}
			for _, mode := range []struct {
				name string
				args []string
			}{{"off", wsWrite}, {"domains", append(slices.Clone(wsWrite), "--allow-domain", "registry.test")}} {
				t.Run(mode.name, func(t *testing.T) {
					ws := workspace(t)
					c.setup(t, ws)
					out, rep := run(t, ws, mode.args, c.argv(url, bin)...)
					if out.code == 0 {
						t.Fatalf("installed from the host's loopback with the network off:\n%s%s", out.stdout, out.stderr)
					}
					wantLoopbackDenial(t, rep, "connect", u.Host)
					again := retryOutcome(t, ws, rep)
					if again.code != 0 {
						t.Fatalf("the retry failed: exit %d\nstdout: %s\nstderr: %s", again.code, again.stdout, again.stderr)
					}
					if _, err := os.Stat(filepath.Join(ws, c.installed)); err != nil {
						t.Errorf("the retry exited 0 but did not install: %v\n%s%s", err, again.stdout, again.stderr)
					}
				})
			}
		})
	}
}

// fastOpenSelfPy serves on the sandbox's own loopback and connects to
// itself with TCP Fast Open, by sendto and by sendmsg.
const fastOpenSelfPy = `import socket, threading
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(2)
def serve():
    for _ in range(2):
        c, _ = srv.accept()
        c.sendall(b"echo:" + c.recv(100))
        c.close()
threading.Thread(target=serve).start()
for how in ("sendto", "sendmsg"):
    s = socket.socket()
    if how == "sendto":
        s.sendto(b"hi", socket.MSG_FASTOPEN, srv.getsockname())
    else:
        s.sendmsg([b"hi"], [], socket.MSG_FASTOPEN, srv.getsockname())
    print(how, s.recv(100).decode())
`

// TestFastOpenNetworkOff: a TCP Fast Open connect outside loopback fails
// with ENETUNREACH, as connect does, and is a connect denial "the network
// is off" (before, none); one to a server the command runs on its own
// loopback works, with no denial.
func TestFastOpenNetworkOff(t *testing.T) {
	Require(t, "netns")
	Require(t, "user-notif")
	needTool(t, "python3")
	t.Run("outside", func(t *testing.T) {
		out, rep := run(t, workspace(t), readOnly, fastOpen("sendto")("192.0.2.1:80")...) // TEST-NET-1
		if out.code == 0 || !strings.Contains(out.stderr, "Network is unreachable") {
			t.Errorf("exit %d, stderr %q: want ENETUNREACH", out.code, out.stderr)
		}
		ds := netDenials(t, rep)
		if len(ds) != 1 || ds[0].Operation != "connect" || ds[0].Syscall != "sendto" || ds[0].Reason != "the network is off" ||
			ds[0].Address == nil || ds[0].Address.Address != "192.0.2.1" || ds[0].Address.Port != 80 {
			t.Errorf("denials %v, want one connect sendto inet 192.0.2.1:80 %q", ds, "the network is off")
		}
	})
	t.Run("own-loopback", func(t *testing.T) {
		out, rep := run(t, workspace(t), readOnly, "python3", "-B", "-c", fastOpenSelfPy)
		if out.code != 0 || out.stdout != "sendto echo:hi\nsendmsg echo:hi\n" {
			t.Errorf("exit %d\nstdout: %s\nstderr: %s", out.code, out.stdout, out.stderr)
		}
		wantNoDenial(t, rep)
	})
}

// goProxyModule is the one module startGoProxy serves, at v1.0.0.
const goProxyModule = "example.test/hello"

// startGoProxy serves goProxyModule v1.0.0 by the GOPROXY protocol
// (list, info, mod, zip) on a free port of the host's 127.0.0.1, until
// the test's cleanup, and returns its URL.
func startGoProxy(t *testing.T) string {
	t.Helper()
	var zipped bytes.Buffer
	zw := zip.NewWriter(&zipped)
	for name, body := range map[string]string{"go.mod": "module " + goProxyModule + "\n\ngo 1.21\n",
		"hello.go": "package hello\n\nfunc Hello() string { return \"hello\" }\n"} {
		w, err := zw.Create(goProxyModule + "@v1.0.0/" + name)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, body)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"/" + goProxyModule + "/@v/list":        []byte("v1.0.0\n"),
		"/" + goProxyModule + "/@v/v1.0.0.info": []byte(`{"Version":"v1.0.0","Time":"2024-01-01T00:00:00Z"}`),
		"/" + goProxyModule + "/@v/v1.0.0.mod":  []byte("module " + goProxyModule + "\n\ngo 1.21\n"),
		"/" + goProxyModule + "/@v/v1.0.0.zip":  zipped.Bytes(),
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}
