//go:build linux

package integration

import (
	"archive/zip"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// origins stand in for the internet: an HTTPS and an HTTP server on the
// host's loopback, reached by name through --resolve (and
// --allow-private-addresses, since the names resolve to 127.0.0.1). Each
// answers with its token, so a test tells a real answer from any other.
type origins struct {
	token     string
	tlsPort   int
	httpPort  int
	caFile    string
	tlsNames  []string // the certificate's names
	resolveTo string
}

func startOrigins(t *testing.T) *origins {
	t.Helper()
	o := &origins{token: fmt.Sprintf("sbx-origin-%d", time.Now().UnixNano()), resolveTo: "127.0.0.1",
		tlsNames: []string{"allowed.test", "other.test", "wild.test", "*.wild.test"}}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "%s %s\n", o.token, r.Host) })
	cert, caPEM := testCertificate(t, o.tlsNames)
	o.caFile = filepath.Join(t.TempDir(), "ca.pem")
	writeFile(t, o.caFile, string(caPEM))
	tl, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hl, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &http.Server{Handler: handler, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
	hs := &http.Server{Handler: handler}
	go ts.ServeTLS(tl, "", "")
	go hs.Serve(hl)
	t.Cleanup(func() { ts.Close(); hs.Close() })
	o.tlsPort, o.httpPort = tl.Addr().(*net.TCPAddr).Port, hl.Addr().(*net.TCPAddr).Port
	return o
}

// testCertificate makes a CA and a server certificate it signs for names
// and 127.0.0.1; it returns the server's key pair and the CA's PEM.
func testCertificate(t *testing.T, names []string) (tls.Certificate, []byte) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sbx test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: names[0]},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), DNSNames: names,
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
}

// resolveArgs pins every name to the origins' address, on both ports.
func (o *origins) resolveArgs(names ...string) []string {
	var args []string
	for _, n := range names {
		for _, p := range []int{o.tlsPort, o.httpPort} {
			args = append(args, "--resolve", fmt.Sprintf("%s:%d:%s", n, p, o.resolveTo))
		}
	}
	return args
}

func (o *origins) https(host string) string { return fmt.Sprintf("https://%s:%d/", host, o.tlsPort) }
func (o *origins) http(host string) string  { return fmt.Sprintf("http://%s:%d/", host, o.httpPort) }

// proxyDenial is a denial of the report as the proxy writes it.
type proxyDenial struct {
	Operation  string `json:"operation"`
	Domain     string `json:"domain"`
	Port       int    `json:"port"`
	Source     string `json:"source"`
	Confidence string `json:"confidence"`
	Reason     string `json:"reason"`
	Count      int    `json:"count"`
	Address    *struct {
		Address string `json:"address"`
	} `json:"address"`
}

type retryHint struct {
	Argv []string `json:"argv"`
	// Request is the hint of a call made through sbx serve
	// (SBX_IT_VIA=serve): the exec request, where sbx run gives an argv.
	Request    map[string]any `json:"request"`
	mode       string
	Unresolved []struct {
		Domain string `json:"domain"`
		Reason string `json:"reason"`
	} `json:"unresolved"`
}

func proxyDenials(t *testing.T, rep *report) []proxyDenial {
	t.Helper()
	var ds []proxyDenial
	if err := json.Unmarshal(rep.raw["denials"], &ds); err != nil {
		t.Fatal(err)
	}
	var out []proxyDenial
	for _, d := range ds {
		if d.Source == "proxy" {
			out = append(out, d)
		}
	}
	return out
}

func retryOf(t *testing.T, rep *report) retryHint {
	t.Helper()
	var h retryHint
	if raw, ok := rep.raw["retry"]; ok {
		if err := json.Unmarshal(raw, &h); err != nil {
			t.Fatal(err)
		}
	}
	h.mode = rep.Mode
	return h
}

// escalates reports whether the hint asks for more: an argv, or a request
// through the server.
func (h retryHint) escalates() bool { return len(h.Argv) != 0 || h.Request != nil }

// applyRetry runs the retry's argv (its "sbx" the binary under test).
func applyRetry(t *testing.T, dir string, h retryHint) outcome {
	t.Helper()
	if viaServe {
		return serveRetryRequest(t, dir, h.mode, h.Request)
	}
	if len(h.Argv) < 2 || h.Argv[0] != "sbx" {
		t.Fatalf("retry argv %q", h.Argv)
	}
	return sbx(t, opts{args: h.Argv[1:], dir: dir})
}

// curlCmd is the curl the network tests run: curl itself, or, where curl is
// not installed (SBX_IT_ABSENT_TOOLS: the kernel matrix's busybox guest, the
// containers) or SBX_IT_CURL=probe asks for it, the probe's curl subset
// (integration/probe/curl.go), so the proxy is tested there too.
func curlCmd(t *testing.T) []string {
	t.Helper()
	if os.Getenv("SBX_IT_CURL") == "probe" {
		return []string{probeBin, "curl"}
	}
	if _, err := exec.LookPath("curl"); err != nil && slices.Contains(strings.Fields(os.Getenv("SBX_IT_ABSENT_TOOLS")), "curl") {
		return []string{probeBin, "curl"}
	}
	return []string{needTool(t, "curl")}
}

// TestNetworkDomains runs curl through the proxy under real namespaces:
// what is allowed answers with the origin's token, each refusal is one
// exact denial whose retry asks for exactly that host (never --network)
// and, applied, works; a client that bypasses the proxy gets nowhere.
func TestNetworkDomains(t *testing.T) {
	curl := curlCmd(t)
	o := startOrigins(t)
	ws := workspace(t)
	names := []string{"allowed.test", "other.test", "wild.test", "a.wild.test", "bad.wild.test"}
	base := append(o.resolveArgs(names...), "--allow-private-addresses")
	allow := func(patterns ...string) []string {
		var args []string
		for _, p := range patterns {
			args = append(args, "--allow-domain", p)
		}
		return args
	}
	tlsP, httpP := strconv.Itoa(o.tlsPort), strconv.Itoa(o.httpPort)
	// Clipped: the cases below append to it, each into a copy of its own.
	curlArgs := slices.Clip(append(curl, "-fsS", "--max-time", "20", "--cacert", o.caFile))

	if !expect(t, "netns") {
		if out, _ := run(t, ws, append(append(slices.Clone(base), "--require", "network-domains"), allow("allowed.test:"+tlsP)...), "true"); out.code != 125 {
			t.Errorf("--require network-domains without a network namespace: exit %d, want 125", out.code)
		}
		out, rep := run(t, ws, append(base, allow("allowed.test:"+tlsP)...), append(curlArgs, o.https("allowed.test"))...)
		if out.code == 0 || rep == nil || rep.degraded("network-domains") == "" {
			t.Fatalf("without a network namespace: exit %d, degraded %v; want a failure and the network-domains downgrade", out.code, rep.degradedFeatures())
		}
		return
	}

	t.Run("allowed", func(t *testing.T) {
		// --require network-domains: enforced here, so it runs.
		out, rep := run(t, ws, append(append(slices.Clone(base), "--require", "network-domains"), allow("allowed.test:"+tlsP, "allowed.test:"+httpP)...),
			"sh", "-c", strings.Join([]string{shq(curlArgs...), o.https("allowed.test") + ";", shq(curlArgs...), o.http("allowed.test")}, " "))
		if out.code != 0 || strings.Count(out.stdout, o.token) != 2 {
			t.Fatalf("exit %d, stdout %q, stderr %s; want both answers", out.code, out.stdout, out.stderr)
		}
		if ds := proxyDenials(t, rep); len(ds) != 0 || !rep.Enforcement.NetworkNamespace {
			t.Fatalf("denials %+v, network namespace %v; want none, and a namespace", ds, rep.Enforcement.NetworkNamespace)
		}
		var env struct {
			Set []string `json:"set"`
		}
		json.Unmarshal(rep.raw["env"], &env)
		for _, name := range []string{"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"} {
			if !slices.Contains(env.Set, name) {
				t.Errorf("env.set %v lacks %s", env.Set, name)
			}
		}
	})

	// Each case is refused with one exact denial; when a retry exists it
	// names the host (or allow_private_addresses), and applied, works.
	tests := []struct {
		name    string
		args    []string // besides base
		cmd     []string
		domain  string
		port    int
		reason  string
		address string // the refused address, for the address reasons
		retry   []string
		noRetry bool
	}{
		{name: "host not listed", args: allow("allowed.test:" + tlsP), cmd: append(curlArgs, o.https("other.test")),
			domain: "other.test", port: o.tlsPort, reason: "not in allowed_domains", retry: []string{"--allow-domain", "other.test:" + tlsP}},
		{name: "wildcard is not the apex", args: allow("*.wild.test:" + tlsP), cmd: append(curlArgs, o.https("wild.test")),
			domain: "wild.test", port: o.tlsPort, reason: "not in allowed_domains", retry: []string{"--allow-domain", "wild.test:" + tlsP}},
		{name: "denied host", args: append(allow("*.wild.test:"+tlsP), "--deny-domain", "bad.wild.test:"+tlsP), cmd: append(curlArgs, o.https("bad.wild.test")),
			domain: "bad.wild.test", port: o.tlsPort, reason: "denied by denied_domains", noRetry: true},
		{name: "plain HTTP to a denied host", args: append(allow("*.wild.test:"+httpP), "--deny-domain", "bad.wild.test:"+httpP), cmd: append(curlArgs, o.http("bad.wild.test")),
			domain: "bad.wild.test", port: o.httpPort, reason: "denied by denied_domains", noRetry: true},
		{name: "non-default port", args: allow("allowed.test"), cmd: append(curlArgs, o.https("allowed.test")),
			domain: "allowed.test", port: o.tlsPort, reason: "port not allowed", retry: []string{"--allow-domain", "allowed.test:" + tlsP}},
		{name: "IP literal", args: allow("allowed.test:" + tlsP), cmd: append(append(curlArgs, "--noproxy", ""), fmt.Sprintf("https://127.0.0.1:%d/", o.tlsPort)),
			domain: "127.0.0.1", port: o.tlsPort, reason: "not in allowed_domains", retry: []string{"--allow-domain", "127.0.0.1:" + tlsP}},
		{name: "SOCKS5 with a domain", args: allow("allowed.test:" + tlsP), cmd: []string{"sh", "-c", shq(curlArgs...) + ` --socks5-hostname "${ALL_PROXY#socks5h://}" ` + o.https("other.test")},
			domain: "other.test", port: o.tlsPort, reason: "not in allowed_domains", retry: []string{"--allow-domain", "other.test:" + tlsP}},
		{name: "SOCKS5 with an IP", args: allow("allowed.test:" + tlsP),
			cmd:    []string{"sh", "-c", shq(curlArgs...) + ` --resolve allowed.test:` + tlsP + `:127.0.0.1 --socks5 "${ALL_PROXY#socks5h://}" ` + o.https("allowed.test")},
			domain: "127.0.0.1", port: o.tlsPort, reason: "not in allowed_domains", retry: []string{"--allow-domain", "127.0.0.1:" + tlsP}},
		{name: "metadata address", args: append(allow("meta.test"), "--resolve", "meta.test:80:169.254.169.254"), cmd: append(curlArgs, "http://meta.test/"),
			domain: "meta.test", port: 80, reason: "resolves to the cloud metadata address", address: "169.254.169.254", noRetry: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, rep := run(t, ws, append(slices.Clone(base), tt.args...), tt.cmd...)
			if out.code == 0 || strings.Contains(out.stdout, o.token) {
				t.Fatalf("exit %d, stdout %q: want refused", out.code, out.stdout)
			}
			checkProxyDenial(t, rep, tt.domain, tt.port, tt.reason, tt.address)
			h := retryOf(t, rep)
			if tt.noRetry {
				if h.escalates() || len(h.Unresolved) != 1 || h.Unresolved[0].Domain != tt.domain {
					t.Fatalf("retry %+v: want none, %s unresolved", h, tt.domain)
				}
				return
			}
			checkRetryArgs(t, h, tt.retry)
			if again := applyRetry(t, ws, h); again.code != 0 || !strings.Contains(again.stdout, o.token) {
				t.Fatalf("retry %q: exit %d, stdout %q, stderr %s", h.Argv, again.code, again.stdout, again.stderr)
			}
		})
	}

	t.Run("private address needs allow_private_addresses", func(t *testing.T) {
		out, rep := run(t, ws, append(o.resolveArgs("allowed.test"), allow("allowed.test:"+tlsP)...), append(curlArgs, o.https("allowed.test"))...)
		if out.code == 0 {
			t.Fatalf("exit 0, stdout %q: want refused", out.stdout)
		}
		checkProxyDenial(t, rep, "allowed.test", o.tlsPort, "resolves to a private address (allow_private_addresses)", "127.0.0.1")
		h := retryOf(t, rep)
		checkRetryArgs(t, h, []string{"--allow-private-addresses"})
		if again := applyRetry(t, ws, h); again.code != 0 || !strings.Contains(again.stdout, o.token) {
			t.Fatalf("retry %q: exit %d, stdout %q, stderr %s", h.Argv, again.code, again.stdout, again.stderr)
		}
	})

	t.Run("a client that ignores the proxy", func(t *testing.T) {
		out, rep := run(t, ws, append(base, allow("allowed.test:"+tlsP)...),
			append(append(curlArgs, "--noproxy", "*", "--resolve", "allowed.test:"+tlsP+":127.0.0.1"), o.https("allowed.test"))...)
		if out.code == 0 || strings.Contains(out.stdout, o.token) {
			t.Fatalf("exit %d, stdout %q: the namespace's loopback is not the host's", out.code, out.stdout)
		}
		if ds := proxyDenials(t, rep); len(ds) != 0 {
			t.Fatalf("proxy denials %+v for a client that never asked the proxy", ds)
		}
	})
}

// TestNetworkDomainsFullDenied: --network with --deny-domain goes through
// the proxy, every host allowed but the denied one, private addresses
// included as the full network had them (no --allow-private-addresses):
// the denied host is refused with the exact denial and no retry, another
// host answers.
func TestNetworkDomainsFullDenied(t *testing.T) {
	curl := curlCmd(t)
	if !expect(t, "netns") {
		return
	}
	o := startOrigins(t)
	ws := workspace(t)
	tlsP := strconv.Itoa(o.tlsPort)
	args := append(o.resolveArgs("allowed.test", "bad.test"), "--network", "--deny-domain", "bad.test:"+tlsP)
	curlArgs := append(slices.Clone(curl), "-fsS", "--max-time", "20", "--cacert", o.caFile)
	out, rep := run(t, ws, args, append(slices.Clone(curlArgs), o.https("allowed.test"))...)
	if out.code != 0 || !strings.Contains(out.stdout, o.token) {
		t.Fatalf("other host: exit %d, stdout %q, stderr %s", out.code, out.stdout, out.stderr)
	}
	if ds := proxyDenials(t, rep); len(ds) != 0 || !rep.Enforcement.NetworkNamespace {
		t.Fatalf("denials %+v, network namespace %v; want none, and the proxy's namespace", ds, rep.Enforcement.NetworkNamespace)
	}
	out, rep = run(t, ws, args, append(slices.Clone(curlArgs), o.https("bad.test"))...)
	if out.code == 0 || strings.Contains(out.stdout, o.token) {
		t.Fatalf("denied host: exit %d, stdout %q: want refused", out.code, out.stdout)
	}
	checkProxyDenial(t, rep, "bad.test", o.tlsPort, "denied by denied_domains", "")
	if h := retryOf(t, rep); h.escalates() || len(h.Unresolved) != 1 || h.Unresolved[0].Domain != "bad.test" {
		t.Fatalf("retry %+v: want none, bad.test unresolved", h)
	}
}

func checkProxyDenial(t *testing.T, rep *report, domain string, port int, reason, address string) {
	t.Helper()
	if rep == nil {
		t.Fatal("no report")
	}
	ds := proxyDenials(t, rep)
	if len(ds) != 1 {
		t.Fatalf("proxy denials %+v: want exactly one", ds)
	}
	d := ds[0]
	got := [...]any{d.Operation, d.Domain, d.Port, d.Confidence, d.Reason}
	if want := [...]any{"connect", domain, port, "observed", reason}; got != want || d.Count < 1 {
		t.Fatalf("denial %+v: want %v", d, want)
	}
	if (d.Address != nil) != (address != "") || d.Address != nil && d.Address.Address != address {
		t.Fatalf("denial address %+v: want %q", d.Address, address)
	}
}

// checkRetryArgs: the retry adds exactly want after the original flags,
// and never the whole network.
func checkRetryArgs(t *testing.T, h retryHint, want []string) {
	t.Helper()
	if viaServe {
		checkRetryRequest(t, h, want)
		return
	}
	if slices.Contains(h.Argv, "--network") {
		t.Fatalf("retry %q asks for the whole network", h.Argv)
	}
	i := slices.Index(h.Argv, "--")
	if i < len(want) || !slices.Equal(h.Argv[i-len(want):i], want) {
		t.Fatalf("retry %q: want %q before the command", h.Argv, want)
	}
}

// checkRetryRequest is checkRetryArgs for a hint through the server: its
// request's network asks for what the flags want, never the whole network.
func checkRetryRequest(t *testing.T, h retryHint, want []string) {
	t.Helper()
	add, _ := h.Request["additional_permissions"].(map[string]any)
	n, _ := add["network"].(map[string]any)
	if n == nil || n["enabled"] != true || n["allowed_domains"] == nil {
		t.Fatalf("retry request %v: want allowed_domains, not the whole network or nothing", h.Request)
	}
	domains, _ := n["allowed_domains"].([]any)
	for i := 0; i < len(want); i++ {
		switch want[i] {
		case "--allow-domain":
			i++
			if !slices.Contains(domains, any(want[i])) {
				t.Fatalf("retry request %v: want allowed_domains with %s", h.Request, want[i])
			}
		case "--allow-private-addresses":
			if n["allow_private_addresses"] != true {
				t.Fatalf("retry request %v: want allow_private_addresses", h.Request)
			}
		default:
			t.Fatalf("checkRetryRequest: no translation of %s", want[i])
		}
	}
}

// shq quotes words for sh -c.
func shq(words ...string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// TestNetworkDomainsGitClone: git (libcurl, https_proxy) clones over
// https through the proxy from a dumb-HTTP origin on the host's loopback,
// and gets nowhere without the domain.
func TestNetworkDomainsGitClone(t *testing.T) {
	git := needTool(t, "git")
	if !expect(t, "netns") {
		return // TestNetworkDomains checks the downgrade
	}
	src := workspace(t)
	gitRepo(t, src)
	served := t.TempDir()
	for _, args := range [][]string{{"clone", "-q", "--bare", src, filepath.Join(served, "repo.git")}, {"-C", filepath.Join(served, "repo.git"), "update-server-info"}} {
		if b, err := exec.Command(git, args...).CombinedOutput(); err != nil {
			t.Fatalf("git %q: %v\n%s", args, err, b)
		}
	}
	cert, caPEM := testCertificate(t, []string{"git.test"})
	ca := filepath.Join(t.TempDir(), "ca.pem")
	writeFile(t, ca, string(caPEM))
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.FileServer(http.Dir(served)), TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
	go srv.ServeTLS(l, "", "")
	t.Cleanup(func() { srv.Close() })
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	ws := workspace(t)
	// GIT_SSL_CAINFO, not http.sslCAInfo: the environment's (a CI's) would
	// win over the configuration.
	args := []string{"--mode", "workspace-write", "--resolve", "git.test:" + port + ":127.0.0.1", "--allow-private-addresses", "--setenv", "GIT_SSL_CAINFO=" + ca}
	clone := []string{git, "clone", "-q", "https://git.test:" + port + "/repo.git", "copy"}

	out, rep := run(t, ws, append(slices.Clone(args), "--allow-domain", "other.test"), clone...)
	if out.code == 0 {
		t.Fatalf("clone without the domain: exit 0")
	}
	checkProxyDenial(t, rep, "git.test", l.Addr().(*net.TCPAddr).Port, "not in allowed_domains", "")
	out, _ = run(t, ws, append(slices.Clone(args), "--allow-domain", "git.test:"+port), clone...)
	if out.code != 0 {
		t.Fatalf("clone: exit %d, stderr %s", out.code, out.stderr)
	}
	if b, err := exec.Command(git, "-C", filepath.Join(ws, "copy"), "log", "--format=%s").Output(); err != nil || strings.TrimSpace(string(b)) != "initial commit" {
		t.Fatalf("cloned log %q, %v", b, err)
	}
}

// TestExecNetworkDomains: sbx exec takes the domains in its permission
// profile; a name resolves through the host's /etc/hosts (localhost), and
// a refusal is the exact denial with a retry for that host only.
func TestExecNetworkDomains(t *testing.T) {
	curl := curlCmd(t)
	if !expect(t, "netns") {
		return
	}
	o := startOrigins(t)
	port := strconv.Itoa(o.httpPort)
	ws := workspace(t)
	req := func(url string) string {
		argv, _ := json.Marshal(append(slices.Clone(curl), "-fsS", "--noproxy", "", url))
		return `{"command": ` + string(argv) + `, "cwd": ` + jsonString(ws) + `,
			"sandbox_mode": "read-only", "preauthorized": true,
			"additional_permissions": {"network": {"enabled": true, "allowed_domains": ["localhost:` + port + `"], "allow_private_addresses": true}}}`
	}
	out, res := execJSON(t, ws, req("http://localhost:"+port+"/"))
	if res == nil || res.ExitCode != 0 || !strings.Contains(res.Stdout, o.token) {
		t.Fatalf("allowed: exit %d, result %+v, stderr %s", out.code, res, out.stderr)
	}
	_, res = execJSON(t, ws, req("http://127.0.0.1:"+port+"/"))
	if res == nil || res.ExitCode == 0 {
		t.Fatalf("IP literal: %+v; want refused", res)
	}
	checkProxyDenial(t, res, "127.0.0.1", o.httpPort, "not in allowed_domains", "")
	var retry struct {
		AdditionalPermissions struct {
			Network struct {
				Enabled        bool     `json:"enabled"`
				AllowedDomains []string `json:"allowed_domains"`
			} `json:"network"`
		} `json:"additional_permissions"`
	}
	if err := json.Unmarshal(res.raw["retry"], &retry); err != nil {
		t.Fatal(err)
	}
	if n := retry.AdditionalPermissions.Network; !n.Enabled || !slices.Equal(n.AllowedDomains, []string{"127.0.0.1:" + port, "localhost:" + port}) {
		t.Fatalf("retry network %+v: want exactly the refused host added", n)
	}

	// "resolve" pins a name as sbx run's --resolve does; a bad entry is
	// refused naming it, and nothing runs.
	marker := filepath.Join(ws, "ran")
	pinned := func(network, resolve, url string) string {
		argv, _ := json.Marshal([]string{"sh", "-c", "touch " + shq(marker) + "; " + shq(append(slices.Clone(curl), "-fsS", "--noproxy", "", url)...)})
		return `{"command": ` + string(argv) + `, "cwd": ` + jsonString(ws) + `,
			"sandbox_mode": "workspace-write", "preauthorized": true, "resolve": ` + resolve + `,
			"additional_permissions": {"network": ` + network + `}}`
	}
	allowPinned := `{"enabled": true, "allowed_domains": ["pinned.test:` + port + `"], "allow_private_addresses": true}`
	out, res = execJSON(t, ws, pinned(allowPinned, `["pinned.test:`+port+`"]`, "http://pinned.test:"+port+"/"))
	if out.code != 125 || !strings.Contains(out.stderr, "resolve[0]") {
		t.Fatalf("bad resolve: exit %d, stderr %q; want 125 naming resolve[0]", out.code, out.stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran despite a bad resolve entry")
	}
	pin := `["pinned.test:` + port + `:127.0.0.1", "denied.test:` + port + `:127.0.0.1"]`
	out, res = execJSON(t, ws, pinned(allowPinned, pin, "http://pinned.test:"+port+"/"))
	if res == nil || res.ExitCode != 0 || !strings.Contains(res.Stdout, o.token) {
		t.Fatalf("pinned name: exit %d, result %+v, stderr %s", out.code, res, out.stderr)
	}
	// A full network beside denied_domains in the profile goes through
	// the proxy: the pinned denied name is refused, the other answers.
	fullDenied := `{"enabled": true, "denied_domains": ["denied.test:` + port + `"]}`
	_, res = execJSON(t, ws, pinned(fullDenied, pin, "http://pinned.test:"+port+"/"))
	if res == nil || res.ExitCode != 0 || !strings.Contains(res.Stdout, o.token) {
		t.Fatalf("full network, other host: %+v; want the answer", res)
	}
	_, res = execJSON(t, ws, pinned(fullDenied, pin, "http://denied.test:"+port+"/"))
	if res == nil || res.ExitCode == 0 || strings.Contains(res.Stdout, o.token) {
		t.Fatalf("full network, denied host: %+v; want refused", res)
	}
	checkProxyDenial(t, res, "denied.test", o.httpPort, "denied by denied_domains", "")
}

// TestGuardDenyDomains: the guard's deny_domains hold under a full
// network, which then goes through the proxy: the denied host is refused
// (no retry: the guard forbids it), every other host answers.
func TestGuardDenyDomains(t *testing.T) {
	curl := curlCmd(t)
	if !expect(t, "netns") {
		return
	}
	o := startOrigins(t)
	port := strconv.Itoa(o.httpPort)
	guard := filepath.Join(t.TempDir(), "guard.json")
	writeFile(t, guard, `{"deny_domains": ["127.0.0.1:`+port+`"]}`)
	ws := workspace(t)
	args := []string{"--network", "--guard", guard}
	out, rep := run(t, ws, args, append(slices.Clone(curl), "-fsS", "--noproxy", "", "http://localhost:"+port+"/")...)
	if out.code != 0 || !strings.Contains(out.stdout, o.token) {
		t.Fatalf("other host: exit %d, stdout %q, stderr %s", out.code, out.stdout, out.stderr)
	}
	if !rep.Enforcement.NetworkNamespace {
		t.Fatal("the full network under deny_domains should be the proxy's, in a namespace of its own")
	}
	out, rep = run(t, ws, args, append(slices.Clone(curl), "-fsS", "--noproxy", "", "http://127.0.0.1:"+port+"/")...)
	if out.code == 0 || strings.Contains(out.stdout, o.token) {
		t.Fatalf("denied host: exit %d, stdout %q", out.code, out.stdout)
	}
	checkProxyDenial(t, rep, "127.0.0.1", o.httpPort, "denied by denied_domains", "")
	if h := retryOf(t, rep); h.escalates() || len(h.Unresolved) != 1 || h.Unresolved[0].Reason != "forbidden by guard: deny_domains" {
		t.Fatalf("retry %+v: want none, forbidden by guard", h)
	}
}

// TestNetworkDomainsPipDownload: pip (requests, HTTP_PROXY) downloads a
// wheel from a local index through the proxy, and reaches nothing else
// (its version check would ask pypi.org: turned off, so the report's only
// proxy denial would be a real one).
func TestNetworkDomainsPipDownload(t *testing.T) {
	pip := needTool(t, "pip3")
	if !expect(t, "netns") {
		return
	}
	root := t.TempDir()
	wheel := "sbxdemo-1.0-py3-none-any.whl"
	writeWheel(t, filepath.Join(root, wheel), map[string]string{
		"sbxdemo/__init__.py":            "",
		"sbxdemo-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: sbxdemo\nVersion: 1.0\n",
		"sbxdemo-1.0.dist-info/WHEEL":    "Wheel-Version: 1.0\nGenerator: sbx-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
		"sbxdemo-1.0.dist-info/RECORD":   "sbxdemo/__init__.py,,\nsbxdemo-1.0.dist-info/METADATA,,\nsbxdemo-1.0.dist-info/WHEEL,,\nsbxdemo-1.0.dist-info/RECORD,,\n",
	})
	if err := os.MkdirAll(filepath.Join(root, "simple", "sbxdemo"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "simple", "sbxdemo", "index.html"), `<html><body><a href="../../`+wheel+`">`+wheel+`</a></body></html>`)
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.FileServer(http.Dir(root))}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	ws := workspace(t)
	args := []string{"--mode", "workspace-write", "--allow-domain", "pypi.test:" + port, "--resolve", "pypi.test:" + port + ":127.0.0.1", "--allow-private-addresses"}
	out, rep := run(t, ws, args, pip, "download", "--disable-pip-version-check", "--no-cache-dir", "--no-deps", "-d", "dl",
		"--trusted-host", "pypi.test", "--index-url", "http://pypi.test:"+port+"/simple/", "sbxdemo")
	if out.code != 0 {
		t.Fatalf("pip download: exit %d, stderr %s", out.code, out.stderr)
	}
	if _, err := os.Stat(filepath.Join(ws, "dl", wheel)); err != nil {
		t.Fatalf("the wheel was not downloaded: %v", err)
	}
	if ds := proxyDenials(t, rep); len(ds) != 0 {
		t.Fatalf("proxy denials %+v", ds)
	}
}

func writeWheel(t *testing.T, path string, files map[string]string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	z := zip.NewWriter(f)
	for name, body := range files {
		w, err := z.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(body))
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}
