//go:build linux

package supervisor

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/report"
)

// This file decides a connect (or a datagram) to loopback with the network
// off. The private network namespace has a loopback of its own, so a
// service listening on the host's loopback (a database, a dev server, the
// systemd-resolved stub on 127.0.0.53) is out of reach: the command gets
// ECONNREFUSED, or its datagrams are lost, exactly as if the service were
// down. That is a denial when, and only when, the host has a socket that
// would take the call and the sandbox's namespace has none: a port nobody
// serves on the host is an ordinary failure, and one the command serves
// itself inside the sandbox works.
//
// The host's sockets are those of sbx's own network namespace (what
// --network gives the command), asked with sock_diag, which says whether an
// IPv6 wildcard listener also takes IPv4 (IPV6_V6ONLY); without sock_diag
// (a kernel without inet_diag) /proc/self/net/{tcp,udp}{,6} is read
// instead, where that is unknown and such a listener does not count. The
// sandbox's are read from /proc/TID/net of the caller.

// hostLoopbackReason is the reason of every such denial.
const hostLoopbackReason = "host loopback is not reachable with the network off"

type ipProto int

const (
	protoOther ipProto = iota
	protoTCP
	protoUDP
)

// hostLoopback decides a connect (op "connect": connect, or a TCP Fast
// Open sendto or sendmsg, see sendOp) or an addressed datagram (op "send")
// to loopback. A TCP connect the host would take is refused with
// the ECONNREFUSED the namespace gives (the supervisor refused it: observed);
// a UDP one continues (a UDP connect succeeds, its datagrams are lost) and
// is recorded as inferred. Whenever something cannot be told, the call
// continues with no denial.
//
// IMPORTANT: the listeners are read before the kernel runs the call; a
// server the command starts at that moment, on that port, is missed (the
// connect is refused, where it might have raced to success).
func (s *Supervisor) hostLoopback(c call, a sockAddr, op string) decision {
	target := a.addr.Unmap()
	if target.IsUnspecified() {
		// Linux connects (and sends) to the unspecified address on
		// loopback (the BSD convention): 127.0.0.1 and ::1.
		if target.Is4() {
			target = netip.AddrFrom4([4]byte{127, 0, 0, 1})
		} else {
			target = netip.IPv6Loopback()
		}
	}
	if !target.IsLoopback() {
		return cont
	}
	proto := socketProto(c.tid, c.fd(0))
	if proto == protoOther || op == "send" && proto != protoUDP {
		// A stream socket ignores sendto's address; other protocols
		// (UDP-Lite, ping, SCTP) are not looked up.
		return cont
	}
	if !hostTakes(proto, target, a.port) || !s.inSandboxNetNS(c.tid) || nsMayServe(c.tid, proto, a.port) {
		return cont
	}
	d := report.Denial{Operation: op, Syscall: c.name, PID: c.tid, Address: a.report(), Reason: hostLoopbackReason}
	if proto == protoTCP {
		return s.refuse(unix.ECONNREFUSED, d)
	}
	d.Source, d.Confidence, d.Count = SupervisorSource, Inferred, 1
	return decision{denials: []report.Denial{d}}
}

// socketProto names the protocol of the task's socket fd by its
// system.sockprotoname attribute ("TCP", "TCPv6", "UDP", "UDPv6").
func socketProto(tid int, fd int32) ipProto {
	var buf [32]byte
	n, err := unix.Getxattr(fmt.Sprintf("/proc/%d/fd/%d", tid, fd), "system.sockprotoname", buf[:])
	if err != nil {
		return protoOther
	}
	switch strings.TrimRight(string(buf[:n]), "\x00") {
	case "TCP", "TCPv6":
		return protoTCP
	case "UDP", "UDPv6":
		return protoUDP
	}
	return protoOther
}

// inetSocket is one socket of a namespace, as sock_diag or /proc/net shows
// it.
type inetSocket struct {
	family int // unix.AF_INET or unix.AF_INET6
	state  int // TCP_* state: 10 listen; a bound, unconnected UDP socket is 7 (close)
	addr   netip.Addr
	port   int
	// v6only is IPV6_V6ONLY of an AF_INET6 socket: 1 set, 0 clear, -1
	// unknown (read from /proc).
	v6only int
	// ifindex is the device the socket is bound to (SO_BINDTODEVICE), 0 for
	// none or unknown.
	ifindex int
}

const (
	tcpListen = 10 // TCP_LISTEN
	tcpClose  = 7  // TCP_CLOSE: an unconnected UDP socket
	// loopbackIfindex is the loopback device's index in every network
	// namespace (LOOPBACK_IFINDEX).
	loopbackIfindex = 1
)

// takes says whether the socket receives a connect or datagram to target
// (a loopback address) on port: a TCP listener or an unconnected UDP socket
// on that port, bound to target or to a wildcard that covers it.
func (k inetSocket) takes(proto ipProto, target netip.Addr, port int) bool {
	want := tcpListen
	if proto == protoUDP {
		want = tcpClose
	}
	if k.state != want || k.port != port || k.ifindex != 0 && k.ifindex != loopbackIfindex {
		return false
	}
	if target.Is4() {
		switch k.family {
		case unix.AF_INET:
			return k.addr == target || k.addr.IsUnspecified()
		case unix.AF_INET6:
			// A mapped bind, or the IPv6 wildcard of a dual-stack socket.
			return k.addr == netip.AddrFrom16(target.As16()) || k.addr.IsUnspecified() && k.v6only == 0
		}
		return false
	}
	return k.family == unix.AF_INET6 && (k.addr == target || k.addr.IsUnspecified())
}

// hostTakes says whether a socket of sbx's (the host's) network namespace
// takes a call to target:port.
func hostTakes(proto ipProto, target netip.Addr, port int) bool {
	families := []int{unix.AF_INET6}
	if target.Is4() {
		families = []int{unix.AF_INET, unix.AF_INET6}
	}
	diag, err := openDiag()
	if err == nil {
		defer unix.Close(diag)
	}
	for _, f := range families {
		var socks []inetSocket
		if err == nil {
			socks, err = diagSockets(diag, proto, f, port)
		}
		if err != nil {
			socks = procSockets("/proc/self/net", proto, f)
		}
		for _, k := range socks {
			if k.takes(proto, target, port) {
				return true
			}
		}
	}
	return false
}

// nsMayServe says whether the task's network namespace has a socket on
// port (a TCP listener, any UDP socket), at any address: then the call is
// the command's own business, never a denial. It says true when the
// namespace cannot be read.
//
// IMPORTANT: reading /proc/TID/net/tcp walks the kernel's whole TCP
// established hash, shared by every namespace: 2 ms per file on this
// machine, against 40 µs for the host's sock_diag. It runs only when the
// host serves the port, so it costs a call that is refused anyway, or one to
// the command's own server on a port the host serves too. A sock_diag
// socket opened in the sandbox's namespace before the seccomp filter (and
// handed over with the listener) would make it as cheap.
func nsMayServe(tid int, proto ipProto, port int) bool {
	dir := fmt.Sprintf("/proc/%d/net", tid)
	for _, f := range []int{unix.AF_INET, unix.AF_INET6} {
		socks, ok := readProcSockets(dir, proto, f)
		if !ok {
			return true
		}
		for _, k := range socks {
			if k.port == port && (proto == protoUDP || k.state == tcpListen) {
				return true
			}
		}
	}
	return false
}

// Namespace ioctls (linux/nsfs.h).
const (
	nsGetUserns = 0xb701 // NS_GET_USERNS
	nsGetParent = 0xb702 // NS_GET_PARENT
)

// inSandboxNetNS says whether the task is in the network namespace sbx
// made for the call, and not one the command made itself (a user namespace
// and a network namespace of its own, where --network would not help
// either). The command holds no capability, so a network namespace of its
// own comes with a user namespace of its own: sbx's is owned by sbx's user
// namespace (root) or by the user namespace the stage was cloned into, a
// child of sbx's.
func (s *Supervisor) inSandboxNetNS(tid int) bool {
	ns, err := unix.Open(fmt.Sprintf("/proc/%d/ns/net", tid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(ns)
	owner, err := unix.IoctlRetInt(ns, nsGetUserns)
	if err != nil {
		return false
	}
	defer unix.Close(owner)
	if s.in.NewUserNS {
		parent, err := unix.IoctlRetInt(owner, nsGetParent)
		if err != nil {
			return false
		}
		defer unix.Close(parent)
		owner = parent
	}
	var got, self unix.Stat_t
	if unix.Fstat(owner, &got) != nil || unix.Stat("/proc/self/ns/user", &self) != nil {
		return false
	}
	return got.Dev == self.Dev && got.Ino == self.Ino
}

// openDiag opens a sock_diag socket in the calling thread's network
// namespace: sbx's, on any thread but a launcher's, which never runs the
// supervisor.
func openDiag() (int, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return -1, fmt.Errorf("sock_diag: socket: %w", err)
	}
	// The kernel answers a dump at once; the timeout only keeps a broken
	// one from stalling the command's call.
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 1}); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("sock_diag: SO_RCVTIMEO: %w", err)
	}
	return fd, nil
}

// diagSockets dumps the sockets of family and proto on port with the
// sock_diag socket fd (inet_diag_req_v2): TCP listeners, or unconnected UDP
// sockets. Each dump is read to its end, so fd can take the next one.
func diagSockets(fd int, proto ipProto, family, port int) ([]inetSocket, error) {
	ipproto, states := unix.IPPROTO_TCP, uint32(1)<<tcpListen
	if proto == protoUDP {
		ipproto, states = unix.IPPROTO_UDP, uint32(1)<<tcpClose
	}
	// struct nlmsghdr (16 bytes), then struct inet_diag_req_v2 (56 bytes):
	// family, protocol, ext, pad, states, then inet_diag_sockid with sport.
	req := make([]byte, unix.SizeofNlMsghdr+56)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	ne.PutUint32(req[8:], 1)
	body := req[unix.SizeofNlMsghdr:]
	body[0], body[1] = byte(family), byte(ipproto)
	ne.PutUint32(body[4:], states)
	binary.BigEndian.PutUint16(body[8:], uint16(port))
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, fmt.Errorf("sock_diag: send: %w", err)
	}
	var socks []inetSocket
	buf := make([]byte, 32<<10)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return nil, fmt.Errorf("sock_diag: recv: %w", err)
		}
		msgs := buf[:n]
		for len(msgs) >= unix.SizeofNlMsghdr {
			l := int(ne.Uint32(msgs[0:]))
			if l < unix.SizeofNlMsghdr || l > len(msgs) {
				return nil, fmt.Errorf("sock_diag: message of %d bytes in %d", l, len(msgs))
			}
			switch typ := ne.Uint16(msgs[4:]); typ {
			case unix.NLMSG_DONE:
				return socks, nil
			case unix.NLMSG_ERROR:
				if l >= unix.SizeofNlMsghdr+4 {
					if e := int32(ne.Uint32(msgs[unix.SizeofNlMsghdr:])); e != 0 {
						return nil, fmt.Errorf("sock_diag: %w", unix.Errno(-e))
					}
				}
				return socks, nil
			case unix.SOCK_DIAG_BY_FAMILY:
				if k, ok := parseDiagMsg(msgs[unix.SizeofNlMsghdr:l]); ok {
					socks = append(socks, k)
				}
			}
			msgs = msgs[(l+unix.NLMSG_ALIGNTO-1)&^(unix.NLMSG_ALIGNTO-1):]
		}
	}
}

// inetDiagSKV6Only is INET_DIAG_SKV6ONLY, the attribute the kernel adds to
// every listening or unconnected AF_INET6 socket.
const inetDiagSKV6Only = 11

// parseDiagMsg reads struct inet_diag_msg (72 bytes) and its attributes.
func parseDiagMsg(b []byte) (inetSocket, bool) {
	const size = 72
	if len(b) < size {
		return inetSocket{}, false
	}
	ne := binary.NativeEndian
	k := inetSocket{family: int(b[0]), state: int(b[1]), port: int(binary.BigEndian.Uint16(b[4:])),
		ifindex: int(ne.Uint32(b[40:])), v6only: -1}
	switch k.family {
	case unix.AF_INET:
		k.addr = netip.AddrFrom4([4]byte(b[8:12]))
	case unix.AF_INET6:
		k.addr = netip.AddrFrom16([16]byte(b[8:24]))
	default:
		return inetSocket{}, false
	}
	for a := b[size:]; len(a) >= 4; {
		l, typ := int(ne.Uint16(a[0:])), ne.Uint16(a[2:])
		if l < 4 || l > len(a) {
			break
		}
		if typ == inetDiagSKV6Only && l >= 5 {
			k.v6only = int(a[4])
		}
		a = a[min((l+3)&^3, len(a)):]
	}
	return k, true
}

// procSockets is readProcSockets for the host, where a file that cannot be
// read means no socket is known.
func procSockets(dir string, proto ipProto, family int) []inetSocket {
	socks, _ := readProcSockets(dir, proto, family)
	return socks
}

// readProcSockets parses dir/{tcp,tcp6,udp,udp6} (one line per socket:
// "sl local_address rem_address st ...", addresses as hex words in host
// byte order, the port in hex). ok is false when the file cannot be read.
func readProcSockets(dir string, proto ipProto, family int) ([]inetSocket, bool) {
	name := map[ipProto]string{protoTCP: "tcp", protoUDP: "udp"}[proto]
	if family == unix.AF_INET6 {
		name += "6"
	}
	f, err := os.Open(dir + "/" + name)
	if err != nil {
		// A kernel without IPv6 has no tcp6 file: no IPv6 socket.
		return nil, family == unix.AF_INET6 && os.IsNotExist(err)
	}
	defer f.Close()
	var socks []inetSocket
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 {
			continue
		}
		addr, port, ok := parseProcAddr(fields[1])
		st, err := strconv.ParseUint(fields[3], 16, 8)
		if !ok || err != nil {
			continue
		}
		socks = append(socks, inetSocket{family: family, state: int(st), addr: addr, port: port, v6only: -1})
	}
	return socks, sc.Err() == nil
}

// parseProcAddr parses "0100007F:1F90" (IPv4) or 32 hex digits and a port
// (IPv6): each 32-bit word is printed in host byte order.
func parseProcAddr(s string) (netip.Addr, int, bool) {
	h, p, ok := strings.Cut(s, ":")
	port, err := strconv.ParseUint(p, 16, 16)
	if !ok || err != nil || len(h)%8 != 0 {
		return netip.Addr{}, 0, false
	}
	var raw [16]byte
	for i := 0; i < len(h)/8 && i < 4; i++ {
		w, err := strconv.ParseUint(h[i*8:i*8+8], 16, 32)
		if err != nil {
			return netip.Addr{}, 0, false
		}
		binary.NativeEndian.PutUint32(raw[i*4:], uint32(w))
	}
	switch len(h) {
	case 8:
		return netip.AddrFrom4([4]byte(raw[:4])), int(port), true
	case 32:
		return netip.AddrFrom16(raw), int(port), true
	}
	return netip.Addr{}, 0, false
}
