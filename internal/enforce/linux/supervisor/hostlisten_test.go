//go:build linux

package supervisor

import (
	"net"
	"net/netip"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseProcAddr(t *testing.T) {
	// The words are in host byte order; these are little-endian spellings.
	if !littleEndian() {
		t.Skip("cases are spelled for a little-endian host")
	}
	tests := []struct {
		in   string
		want netip.AddrPort
		ok   bool
	}{
		{"0100007F:1F90", netip.MustParseAddrPort("127.0.0.1:8080"), true},
		{"00000000:0035", netip.MustParseAddrPort("0.0.0.0:53"), true},
		{"3500007F:0035", netip.MustParseAddrPort("127.0.0.53:53"), true},
		{"00000000000000000000000001000000:0016", netip.MustParseAddrPort("[::1]:22"), true},
		{"0000000000000000FFFF00000100007F:0050", netip.MustParseAddrPort("[::ffff:127.0.0.1]:80"), true},
		{"0100007F", netip.AddrPort{}, false},
		{"0100007:1F90", netip.AddrPort{}, false},
		{"0100007F:XYZ", netip.AddrPort{}, false},
	}
	for _, tt := range tests {
		a, p, ok := parseProcAddr(tt.in)
		if ok != tt.ok || ok && netip.AddrPortFrom(a, uint16(p)) != tt.want {
			t.Errorf("parseProcAddr(%q) = %v %d %t, want %v %t", tt.in, a, p, ok, tt.want, tt.ok)
		}
	}
}

func littleEndian() bool {
	a, _, _ := parseProcAddr("0100007F:0000")
	return a == netip.MustParseAddr("127.0.0.1")
}

func TestSocketTakes(t *testing.T) {
	v4, v6 := netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()
	listen := func(family int, addr string, v6only int) inetSocket {
		return inetSocket{family: family, state: tcpListen, addr: netip.MustParseAddr(addr), port: 80, v6only: v6only}
	}
	tests := []struct {
		name   string
		k      inetSocket
		proto  ipProto
		target netip.Addr
		want   bool
	}{
		{"v4 listener, v4 target", listen(unix.AF_INET, "127.0.0.1", -1), protoTCP, v4, true},
		{"v4 wildcard", listen(unix.AF_INET, "0.0.0.0", -1), protoTCP, v4, true},
		{"v4 wildcard, other loopback address", listen(unix.AF_INET, "0.0.0.0", -1), protoTCP, netip.MustParseAddr("127.0.0.53"), true},
		{"other v4 address", listen(unix.AF_INET, "127.0.0.53", -1), protoTCP, v4, false},
		{"other port", inetSocket{family: unix.AF_INET, state: tcpListen, addr: v4, port: 81}, protoTCP, v4, false},
		{"not listening", inetSocket{family: unix.AF_INET, state: 1, addr: v4, port: 80}, protoTCP, v4, false},
		{"bound to another device", inetSocket{family: unix.AF_INET, state: tcpListen, addr: v4, port: 80, ifindex: 2}, protoTCP, v4, false},
		{"bound to lo", inetSocket{family: unix.AF_INET, state: tcpListen, addr: v4, port: 80, ifindex: loopbackIfindex}, protoTCP, v4, true},
		{"dual-stack wildcard, v4 target", listen(unix.AF_INET6, "::", 0), protoTCP, v4, true},
		{"v6-only wildcard, v4 target", listen(unix.AF_INET6, "::", 1), protoTCP, v4, false},
		{"v6 wildcard of unknown v6only, v4 target", listen(unix.AF_INET6, "::", -1), protoTCP, v4, false},
		{"mapped listener, v4 target", listen(unix.AF_INET6, "::ffff:127.0.0.1", 0), protoTCP, v4, true},
		{"v6 listener, v6 target", listen(unix.AF_INET6, "::1", 1), protoTCP, v6, true},
		{"v6-only wildcard, v6 target", listen(unix.AF_INET6, "::", 1), protoTCP, v6, true},
		{"v4 listener, v6 target", listen(unix.AF_INET, "0.0.0.0", -1), protoTCP, v6, false},
		{"udp bound", inetSocket{family: unix.AF_INET, state: tcpClose, addr: v4, port: 80}, protoUDP, v4, true},
		{"udp connected", inetSocket{family: unix.AF_INET, state: 1, addr: v4, port: 80}, protoUDP, v4, false},
		{"tcp listener, udp call", listen(unix.AF_INET, "127.0.0.1", -1), protoUDP, v4, false},
	}
	for _, tt := range tests {
		if got := tt.k.takes(tt.proto, tt.target, 80); got != tt.want {
			t.Errorf("%s: takes = %t, want %t", tt.name, got, tt.want)
		}
	}
}

// TestHostTakes: a listener and a bound UDP port of this process are the
// host's; a closed port is not.
func TestHostTakes(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	v4 := netip.MustParseAddr("127.0.0.1")
	tcpPort, udpPort := ln.Addr().(*net.TCPAddr).Port, pc.LocalAddr().(*net.UDPAddr).Port
	if !hostTakes(protoTCP, v4, tcpPort) {
		t.Errorf("hostTakes(tcp, %d) = false for a listener", tcpPort)
	}
	if !hostTakes(protoUDP, v4, udpPort) {
		t.Errorf("hostTakes(udp, %d) = false for a bound port", udpPort)
	}
	if hostTakes(protoUDP, v4, tcpPort) && hostTakes(protoTCP, v4, udpPort) {
		t.Errorf("hostTakes confuses tcp and udp")
	}
	// The /proc fallback sees the same listener.
	found := false
	for _, k := range procSockets("/proc/self/net", protoTCP, unix.AF_INET) {
		found = found || k.takes(protoTCP, v4, tcpPort)
	}
	if !found {
		t.Errorf("/proc/self/net/tcp has no listener on %d", tcpPort)
	}
	// The sock_diag answer has the listener, and says v6only for IPv6.
	diag, err := openDiag()
	if err != nil {
		t.Skipf("no sock_diag: %v", err)
	}
	defer unix.Close(diag)
	socks, err := diagSockets(diag, protoTCP, unix.AF_INET, tcpPort)
	if err != nil {
		t.Skipf("no sock_diag: %v", err)
	}
	if len(socks) == 0 || !socks[0].takes(protoTCP, v4, tcpPort) {
		t.Errorf("sock_diag: %+v, want the listener on %d", socks, tcpPort)
	}
	ln6, err := net.Listen("tcp6", "[::]:0")
	if err != nil {
		t.Logf("no IPv6: %v", err)
		return
	}
	defer ln6.Close()
	p6 := ln6.Addr().(*net.TCPAddr).Port
	socks, err = diagSockets(diag, protoTCP, unix.AF_INET6, p6)
	if err != nil || len(socks) != 1 || socks[0].v6only != 1 {
		// Go's "tcp6" listener sets IPV6_V6ONLY.
		t.Errorf("sock_diag of [::]:%d: %+v %v, want one v6only socket", p6, socks, err)
	}
	if hostTakes(protoTCP, v4, p6) {
		t.Errorf("a v6-only wildcard listener takes 127.0.0.1:%d", p6)
	}
}

// TestInSandboxNetNS: this process is in its own user namespace's network
// namespace, which is the sandbox's only for a plan without a user
// namespace.
func TestInSandboxNetNS(t *testing.T) {
	s := &Supervisor{}
	if !s.inSandboxNetNS(os.Getpid()) {
		t.Error("own network namespace not recognised as owned by own user namespace")
	}
	s.in.NewUserNS = true
	if s.inSandboxNetNS(os.Getpid()) {
		t.Error("a plan with a user namespace takes sbx's own namespace for the sandbox's")
	}
}

// TestNSMayServe: the test's listener is seen in its own namespace through
// /proc/PID/net.
func TestNSMayServe(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	if !nsMayServe(os.Getpid(), protoTCP, port) {
		t.Errorf("nsMayServe(%d) = false with a listener", port)
	}
	ln.Close()
	if nsMayServe(os.Getpid(), protoTCP, port) {
		t.Errorf("nsMayServe(%d) = true after close", port)
	}
}

// TestSendOp: MSG_FASTOPEN makes a send on a TCP socket (IPv4 or IPv6) the
// connect it is; a UDP socket's, or a TCP send without it, stays a send.
func TestSendOp(t *testing.T) {
	cases := []struct {
		name        string
		family, typ int
		flags       int
		want        string
	}{
		{"tcp fast open", unix.AF_INET, unix.SOCK_STREAM, unix.MSG_FASTOPEN, "connect"},
		{"tcp6 fast open", unix.AF_INET6, unix.SOCK_STREAM, unix.MSG_FASTOPEN | unix.MSG_NOSIGNAL, "connect"},
		{"tcp", unix.AF_INET, unix.SOCK_STREAM, unix.MSG_NOSIGNAL, "send"},
		{"udp fast open flag", unix.AF_INET, unix.SOCK_DGRAM, unix.MSG_FASTOPEN, "send"},
		{"udp", unix.AF_INET, unix.SOCK_DGRAM, 0, "send"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fd, err := unix.Socket(c.family, c.typ|unix.SOCK_CLOEXEC, 0)
			if err == unix.EAFNOSUPPORT {
				t.Skipf("SKIP: socket: %v (a kernel without IPv6)", err)
			}
			if err != nil {
				t.Fatalf("socket: %v", err)
			}
			defer unix.Close(fd)
			if got := sendOp(os.Getpid(), int32(fd), c.flags); got != c.want {
				t.Errorf("sendOp = %q, want %q", got, c.want)
			}
		})
	}
}
