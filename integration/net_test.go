//go:build linux

package integration

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// hostServers are listeners on the host's loopback, started by the test
// outside any sandbox. TCP servers send token on accept; UDP servers answer
// every datagram with "pong " + token.
type hostServers struct {
	token string
	addrs map[string]string // "tcp4", "tcp6", "udp4", "udp6" -> HOST:PORT
}

func startHostServers(t *testing.T) *hostServers {
	t.Helper()
	s := &hostServers{token: fmt.Sprintf("sbx-it-token-%d", time.Now().UnixNano()), addrs: map[string]string{}}
	hosts := map[string]string{"4": "127.0.0.1:0"}
	if has(t, "ipv6-loopback") {
		hosts["6"] = "[::1]:0"
	}
	for v, host := range hosts {
		ln, err := net.Listen("tcp"+v, host)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Write([]byte(s.token))
				c.Close()
			}
		}()
		s.addrs["tcp"+v] = ln.Addr().String()

		pc, err := net.ListenPacket("udp"+v, host)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pc.Close() })
		go func() {
			buf := make([]byte, 512)
			for {
				_, from, err := pc.ReadFrom(buf)
				if err != nil {
					return
				}
				pc.WriteTo([]byte("pong "+s.token), from)
			}
		}()
		s.addrs["udp"+v] = pc.LocalAddr().String()
	}
	return s
}

// connectCase is one client the probe tries against the host servers.
type connectCase struct {
	kind    string // probe connect kind
	server  string // key into hostServers.addrs
	require []string
}

var connectCases = []connectCase{
	{kind: "tcp4", server: "tcp4"},
	{kind: "tcp6", server: "tcp6", require: []string{"ipv6-loopback"}},
	{kind: "udp4", server: "udp4"},
	{kind: "udp6", server: "udp6", require: []string{"ipv6-loopback"}},
	// An MPTCP client falls back to plain TCP against a TCP server, so ok
	// means the MPTCP socket reached the host.
	{kind: "mptcp4", server: "tcp4", require: []string{"mptcp"}},
	{kind: "mptcp6", server: "tcp6", require: []string{"mptcp", "ipv6-loopback"}},
}

// networkOffErrno is what a client gets with network off. In a private
// network namespace only lo exists and nothing listens on it: TCP gets a
// RST (ECONNREFUSED), UDP an ICMP port unreachable (ECONNREFUSED on recv),
// both for 127.0.0.1 and ::1. Without a namespace (no user namespaces) the
// seccomp filter allows AF_UNIX only (EAFNOSUPPORT). MPTCP is refused by
// seccomp before any family check (EPERM).
func networkOffErrno(t *testing.T, kind string) string {
	switch {
	case strings.HasPrefix(kind, "mptcp"):
		return "EPERM"
	case has(t, "netns"):
		return "ECONNREFUSED"
	}
	return "EAFNOSUPPORT"
}

func TestHostLoopbackNetworkOff(t *testing.T) {
	srv := startHostServers(t)
	for _, mode := range [][]string{readOnly, wsWrite} {
		for _, c := range connectCases {
			t.Run(mode[1]+"/"+c.kind, func(t *testing.T) {
				for _, f := range c.require {
					Require(t, f)
				}
				// The same client reaches the server outside the sandbox.
				want(t, probeDirect(t, nil, "connect", c.kind, srv.addrs[c.server]), "")
				r, rep := probe(t, workspace(t), mode, "connect", c.kind, srv.addrs[c.server])
				want(t, r, networkOffErrno(t, c.kind))
				wantNetworkOffReport(t, rep)
			})
		}
	}
}

// wantNetworkOffReport checks how the report of a network-off call says the
// network was cut: a private network namespace, or (without one) the netns
// downgrade, the seccomp AF_UNIX-only filter and, from ABI 4, Landlock's TCP
// rules.
func wantNetworkOffReport(t *testing.T, rep *report) {
	t.Helper()
	c := caps(t)
	e := rep.Enforcement
	if e.NetworkNamespace != c.namespaces {
		t.Errorf("report: network_namespace = %t, want %t", e.NetworkNamespace, c.namespaces)
	}
	wantSockets := "loopback-netns"
	if !c.namespaces {
		wantSockets = "unix-only"
		if rep.degraded("netns") == "" {
			t.Errorf("no network namespace, but degraded has no netns: %+v", rep.Degraded)
		}
	}
	if e.Seccomp == nil || e.Seccomp.Sockets != wantSockets {
		t.Errorf("report: seccomp %+v, want sockets %s", e.Seccomp, wantSockets)
	}
	if e.Landlock != nil && e.Landlock.NetTCP != c.landlockNetTCP(false) {
		t.Errorf("report: landlock.net_tcp = %t, want %t (ABI %d, namespaces %t)", e.Landlock.NetTCP, c.landlockNetTCP(false), c.abi, c.namespaces)
	}
}

func TestHostLoopbackNetworkOn(t *testing.T) {
	srv := startHostServers(t)
	modes := [][]string{{"--mode", "workspace-write", "--network"}, {"--mode", "read-only", "--network"}, danger}
	for _, mode := range modes {
		for _, c := range connectCases {
			t.Run(strings.Join(mode[1:], "")+"/"+c.kind, func(t *testing.T) {
				for _, f := range c.require {
					Require(t, f)
				}
				r, rep := probe(t, workspace(t), mode, "connect", c.kind, srv.addrs[c.server])
				want(t, r, "")
				if r.OK && !strings.Contains(r.Detail, srv.token) {
					t.Errorf("reached something other than the test's server: %q", r.Detail)
				}
				if rep.Enforcement.NetworkNamespace {
					t.Error("report: network_namespace = true with network on")
				}
			})
		}
	}
}

// TestLocalServerInsideNetworkOff: test suites start servers on loopback;
// inside the private namespace they must keep working with network off.
// Without a namespace (no user namespaces) no inet socket can be made at all:
// the netns downgrade says so, and --require netns refuses (TestRequire).
func TestLocalServerInsideNetworkOff(t *testing.T) {
	c := caps(t)
	for _, mode := range [][]string{readOnly, wsWrite} {
		for _, kind := range []string{"tcp4", "tcp6"} {
			t.Run(mode[1]+"/"+kind, func(t *testing.T) {
				if kind == "tcp6" {
					Require(t, "ipv6-loopback")
				}
				r, rep := probe(t, workspace(t), mode, "listen-and-connect", kind)
				wantNetworkOffReport(t, rep)
				if !c.namespaces {
					want(t, r, "EAFNOSUPPORT")
					return
				}
				want(t, r, "")
			})
		}
	}
}

// TestSocketFamilies: with network off, AF_VSOCK (reaches the hypervisor
// host from any namespace) and AF_PACKET are refused by seccomp with
// EAFNOSUPPORT; AF_UNIX always works, AF_INET inside the namespace. With the
// network on the families are not filtered: the sandboxed socket() must
// then give what it gives without sbx (a kernel without the vsock module,
// like the VM guest's, says EAFNOSUPPORT by itself; a user without
// CAP_NET_RAW gets EPERM for AF_PACKET).
func TestSocketFamilies(t *testing.T) {
	c := caps(t)
	cases := []struct {
		family string
		errno  string // with network off
	}{
		{"vsock", "EAFNOSUPPORT"},
		{"packet", "EAFNOSUPPORT"},
		{"unix", ""},
		{"inet", map[bool]string{true: "", false: "EAFNOSUPPORT"}[c.namespaces]},
		{"inet6", map[bool]string{true: "", false: "EAFNOSUPPORT"}[c.namespaces]},
	}
	for _, mode := range [][]string{readOnly, wsWrite} {
		for _, cs := range cases {
			t.Run(mode[1]+"/"+cs.family, func(t *testing.T) {
				if cs.family == "inet6" {
					Require(t, "ipv6-loopback")
				}
				r, _ := probe(t, workspace(t), mode, "socket", cs.family)
				want(t, r, cs.errno)
			})
		}
	}
	for _, family := range []string{"vsock", "packet"} {
		t.Run("network-on/"+family, func(t *testing.T) {
			base := probeDirect(t, nil, "socket", family)
			if base.Errno == "EAFNOSUPPORT" {
				t.Logf("this kernel has no %s sockets even without sbx: the network-off EAFNOSUPPORT above is then the kernel's as much as the filter's", family)
			}
			r, _ := probe(t, workspace(t), []string{"--mode", "workspace-write", "--network"}, "socket", family)
			wantErrno := base.Errno
			if family == "packet" && base.OK {
				// Root outside; the command holds no CAP_NET_RAW.
				wantErrno = "EPERM"
			}
			want(t, r, wantErrno)
		})
	}
}

// TestAbstractUnixScope: with network off the command cannot reach an
// abstract unix socket outside the sandbox: the private network namespace
// has its own abstract namespace (ECONNREFUSED: no such name there), and
// without one Landlock ABI 6 scopes abstract sockets (EPERM). Below ABI 6
// without a namespace nothing stops it, which the report says
// (landlock-scope, netns). With network on it is reachable.
func TestAbstractUnixScope(t *testing.T) {
	c := caps(t)
	name := fmt.Sprintf("sbx-it-abstract-%d-%d", os.Getpid(), time.Now().UnixNano())
	ln, err := net.Listen("unix", "@"+name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	token := "abstract-" + name
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conn.Write([]byte(token))
			conn.Close()
		}
	}()
	want(t, probeDirect(t, nil, "abstract-connect", name), "")
	offErrno := "ECONNREFUSED"
	switch {
	case !c.namespaces && c.abi >= 6:
		offErrno = "EPERM"
	case !c.namespaces:
		offErrno = ""
	}
	for _, mode := range [][]string{readOnly, wsWrite} {
		t.Run(mode[1], func(t *testing.T) {
			r, rep := probe(t, workspace(t), mode, "abstract-connect", name)
			want(t, r, offErrno)
			if r.OK && (rep.degraded("landlock-scope") == "" && rep.degraded("landlock") == "" || rep.degraded("netns") == "") {
				t.Errorf("reached a socket outside the sandbox, but degraded does not say landlock-scope and netns: %+v", rep.Degraded)
			}
		})
	}
	for _, mode := range [][]string{{"--mode", "workspace-write", "--network"}, danger} {
		t.Run(modeName(mode), func(t *testing.T) {
			r, _ := probe(t, workspace(t), mode, "abstract-connect", name)
			want(t, r, "")
			if r.OK && r.Detail != token {
				t.Errorf("reached something other than the test's server: %q", r.Detail)
			}
		})
	}
}

// TestUDPSendNetworkOff: with the network off a datagram sent with sendto to
// an address outside loopback fails in the private namespace (ENETUNREACH,
// no route) and the supervisor reports it as a "send" denial with the
// address; one to loopback is sent and not reported. Without a namespace no
// inet socket can be made (EAFNOSUPPORT, a "socket" denial).
func TestUDPSendNetworkOff(t *testing.T) {
	c := caps(t)
	const outside = "192.0.2.1:9" // TEST-NET-1: never a local address
	for _, mode := range [][]string{readOnly, wsWrite} {
		t.Run(mode[1]+"/outside", func(t *testing.T) {
			r, rep := probe(t, workspace(t), mode, "sendto", "udp4", outside)
			if !c.namespaces {
				want(t, r, "EAFNOSUPPORT")
				return
			}
			want(t, r, "ENETUNREACH")
			if !c.supervised {
				return
			}
			var found bool
			for _, d := range rep.Denials {
				if d.Operation == "send" {
					found = d.Syscall == "sendto" && d.Address != nil && d.Address.Family == "inet" && d.Address.Address == "192.0.2.1" && d.Address.Port == 9
					if !found {
						t.Errorf("send denial %+v (address %+v), want sendto inet 192.0.2.1:9", d, d.Address)
					}
				}
			}
			if !found {
				t.Errorf("no send denial in %+v", rep.Denials)
			}
		})
		t.Run(mode[1]+"/loopback", func(t *testing.T) {
			r, rep := probe(t, workspace(t), mode, "sendto", "udp4", "127.0.0.1:9")
			if !c.namespaces {
				want(t, r, "EAFNOSUPPORT")
				return
			}
			want(t, r, "")
			if len(rep.Denials) != 0 {
				t.Errorf("loopback datagram reported: %+v", rep.Denials)
			}
		})
	}
}

// hostLoopbackReason is the reason of a denial of a host loopback service.
const hostLoopbackReason = "host loopback is not reachable with the network off"

// netDenial is a network denial of a report: a denial whose Address is
// set.
type netDenial = denial

func (d denial) String() string {
	if d.Address == nil {
		return fmt.Sprintf("%s %s (%s, %s) %q", d.Operation, d.Syscall, d.Source, d.Confidence, d.Reason)
	}
	return fmt.Sprintf("%s %s %s [%s]:%d (%s, %s) %q", d.Operation, d.Syscall, d.Address.Family, d.Address.Address, d.Address.Port, d.Source, d.Confidence, d.Reason)
}

func netDenials(t *testing.T, rep *report) []netDenial {
	t.Helper()
	var ds []netDenial
	if err := json.Unmarshal(rep.raw["denials"], &ds); err != nil {
		t.Fatalf("denials %s: %v", rep.raw["denials"], err)
	}
	return ds
}

// wantHostDenial asserts the report has exactly one denial: op by syscall
// of hostport, a host loopback service, with confidence.
func wantHostDenial(t *testing.T, rep *report, op, syscall, hostport, confidence string) {
	t.Helper()
	ap := netip.MustParseAddrPort(hostport)
	family := "inet"
	if ap.Addr().Is6() {
		family = "inet6"
	}
	ds := netDenials(t, rep)
	if len(ds) != 1 {
		t.Fatalf("denials %v, want exactly one %s of %s", ds, op, hostport)
	}
	d := ds[0]
	if d.Operation != op || d.Syscall != syscall || d.Source != "seccomp-supervisor" || d.Confidence != confidence ||
		d.Reason != hostLoopbackReason || d.Address == nil || d.Address.Family != family ||
		d.Address.Address != ap.Addr().String() || d.Address.Port != int(ap.Port()) {
		t.Errorf("denial %v, want %s %s %s [%s]:%d (seccomp-supervisor, %s) %q", d, op, syscall, family, ap.Addr(), ap.Port(), confidence, hostLoopbackReason)
	}
}

// wantNoDenial asserts an ordinary outcome: no denial, no retry.
func wantNoDenial(t *testing.T, rep *report) {
	t.Helper()
	if ds := netDenials(t, rep); len(ds) != 0 {
		t.Errorf("denials %v, want none", ds)
	}
	if r := string(rep.raw["retry"]); r != "" && r != "null" {
		t.Errorf("retry %s without a denial", r)
	}
}

// retryOutcome runs the report's retry argv (sbx run ...), which must grant
// the network with --network. A retry that also asks for more (a tool's
// cache: --sandbox-permissions with an empty --justification) runs with the
// justification filled in and an --approver that approves, as a runtime
// sends it once its user said yes; through sbx serve its request runs
// preauthorized (serveRetry).
func retryOutcome(t *testing.T, dir string, rep *report) outcome {
	t.Helper()
	if viaServe {
		return serveRetry(t, dir, rep, func(add map[string]any) bool {
			n, _ := add["network"].(map[string]any)
			return n["enabled"] == true && n["allowed_domains"] == nil
		})
	}
	var retry struct {
		Argv []string `json:"argv"`
	}
	if err := json.Unmarshal(rep.raw["retry"], &retry); err != nil || len(retry.Argv) < 3 || retry.Argv[0] != "sbx" || retry.Argv[1] != "run" {
		t.Fatalf("retry %s (%v), want argv sbx run ...", rep.raw["retry"], err)
	}
	argv := slices.Clone(retry.Argv[1:])
	dash := slices.Index(argv, "--")
	if dash < 0 || !slices.Contains(argv[:dash], "--network") {
		t.Fatalf("retry argv %q, want --network before --", retry.Argv)
	}
	if i := slices.Index(argv[:dash], "--justification"); i >= 0 {
		argv[i+1] = "reach the host's service"
		argv = slices.Insert(argv, dash, "--approver", approver(t))
	}
	t.Logf("retry: %q", argv)
	return sbx(t, opts{args: argv, dir: dir})
}

// freePort returns a port of network that nothing on the host uses (one
// just released).
func freePort(t *testing.T, network, host string) string {
	t.Helper()
	var addr string
	if strings.HasPrefix(network, "tcp") {
		ln, err := net.Listen(network, host+":0")
		if err != nil {
			t.Fatal(err)
		}
		addr = ln.Addr().String()
		ln.Close()
	} else {
		pc, err := net.ListenPacket(network, host+":0")
		if err != nil {
			t.Fatal(err)
		}
		addr = pc.LocalAddr().String()
		pc.Close()
	}
	return addr
}

// TestHostServiceCutOff (issue #12 §5): with the network off, a host
// service on loopback is out of reach of the private namespace. A TCP
// connect to it fails with ECONNREFUSED, as if it were down; that is a
// connect denial (observed: the supervisor refused it), and the retry
// (--network) reaches the service. A UDP connect succeeds and its datagram
// is lost (ECONNREFUSED on recv): a connect denial, inferred; so is a
// datagram sent with sendto (a send denial).
func TestHostServiceCutOff(t *testing.T) {
	Require(t, "netns")
	Require(t, "user-notif")
	srv := startHostServers(t)
	cases := []struct {
		probe                       []string
		server, op, syscall, confid string
		errno                       string
		reply                       string // in the retry's detail
	}{
		{[]string{"connect", "tcp4"}, "tcp4", "connect", "connect", "observed", "ECONNREFUSED", srv.token},
		{[]string{"connect", "tcp6"}, "tcp6", "connect", "connect", "observed", "ECONNREFUSED", srv.token},
		{[]string{"connect", "udp4"}, "udp4", "connect", "connect", "inferred", "ECONNREFUSED", "pong " + srv.token},
		{[]string{"connect", "udp6"}, "udp6", "connect", "connect", "inferred", "ECONNREFUSED", "pong " + srv.token},
		{[]string{"sendto", "udp4"}, "udp4", "send", "sendto", "inferred", "", "sent to"},
		{[]string{"sendto", "udp6"}, "udp6", "send", "sendto", "inferred", "", "sent to"},
	}
	for _, mode := range [][]string{readOnly, wsWrite} {
		for _, c := range cases {
			t.Run(mode[1]+"/"+strings.Join(c.probe, "-"), func(t *testing.T) {
				if strings.HasSuffix(c.server, "6") {
					Require(t, "ipv6-loopback")
				}
				hostport := srv.addrs[c.server]
				ws := workspace(t)
				r, rep := probe(t, ws, mode, append(c.probe, hostport)...)
				want(t, r, c.errno)
				wantHostDenial(t, rep, c.op, c.syscall, hostport, c.confid)
				again := parseProbe(t, retryOutcome(t, ws, rep))
				want(t, again, "")
				if !strings.Contains(again.Detail, c.reply) {
					t.Errorf("retry reached %q, want %q", again.Detail, c.reply)
				}
			})
		}
	}
	// The case of the issue: bash's /dev/tcp says "Connection refused".
	t.Run("bash-dev-tcp", func(t *testing.T) {
		bash := needTool(t, "bash")
		ap := netip.MustParseAddrPort(srv.addrs["tcp4"])
		ws := workspace(t)
		out, rep := run(t, ws, wsWrite, bash, "-c", fmt.Sprintf("echo > /dev/tcp/%s/%d", ap.Addr(), ap.Port()))
		if out.code == 0 || !strings.Contains(out.stderr, "Connection refused") {
			t.Errorf("exit %d, stderr %q: want a failure with Connection refused", out.code, out.stderr)
		}
		wantHostDenial(t, rep, "connect", "connect", srv.addrs["tcp4"], "observed")
		if again := retryOutcome(t, ws, rep); again.code != 0 {
			t.Errorf("retry: exit %d, stderr %q", again.code, again.stderr)
		}
	})
	// A network namespace the command makes itself (with a user namespace
	// of its own) is not the sandbox's: --network would not reach the host
	// from there either, so nothing is reported.
	t.Run("own-netns", func(t *testing.T) {
		bash, unshare := needTool(t, "bash"), needTool(t, "unshare")
		ap := netip.MustParseAddrPort(srv.addrs["tcp4"])
		out, rep := run(t, workspace(t), wsWrite, unshare, "-Un", bash, "-c", fmt.Sprintf("echo > /dev/tcp/%s/%d", ap.Addr(), ap.Port()))
		if !strings.Contains(out.stderr, "Network is unreachable") {
			t.Logf("the nested namespace was not made (stderr %q): the case proves little here", out.stderr)
		}
		wantNoDenial(t, rep)
	})
}

// TestHostServiceAbsent: a loopback port nothing on the host serves is an
// ordinary failure with the network off: ECONNREFUSED (or a datagram sent
// into nothing), and no denial.
func TestHostServiceAbsent(t *testing.T) {
	Require(t, "netns")
	Require(t, "user-notif")
	cases := []struct {
		probe   []string
		network string
		host    string
		errno   string
	}{
		{[]string{"connect", "tcp4"}, "tcp4", "127.0.0.1", "ECONNREFUSED"},
		{[]string{"connect", "tcp6"}, "tcp6", "::1", "ECONNREFUSED"},
		{[]string{"connect", "udp4"}, "udp4", "127.0.0.1", "ECONNREFUSED"},
		{[]string{"connect", "udp6"}, "udp6", "::1", "ECONNREFUSED"},
		{[]string{"sendto", "udp4"}, "udp4", "127.0.0.1", ""},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.probe, "-"), func(t *testing.T) {
			if strings.HasSuffix(c.network, "6") {
				Require(t, "ipv6-loopback")
			}
			host := c.host
			if strings.Contains(host, ":") {
				host = "[" + host + "]"
			}
			hostport := freePort(t, c.network, host)
			r, rep := probe(t, workspace(t), wsWrite, append(c.probe, hostport)...)
			want(t, r, c.errno)
			wantNoDenial(t, rep)
		})
	}
}

// TestOwnServerOnHostPort: the command's own server inside the sandbox, on
// the very port a host service listens on, works and is no denial.
func TestOwnServerOnHostPort(t *testing.T) {
	Require(t, "netns")
	Require(t, "user-notif")
	srv := startHostServers(t)
	for _, kind := range []string{"tcp4", "tcp6"} {
		t.Run(kind, func(t *testing.T) {
			if kind == "tcp6" {
				Require(t, "ipv6-loopback")
			}
			ap := netip.MustParseAddrPort(srv.addrs[kind])
			r, rep := probe(t, workspace(t), wsWrite, "listen-and-connect", kind, strconv.Itoa(int(ap.Port())))
			want(t, r, "")
			wantNoDenial(t, rep)
		})
	}
}
