//go:build linux

package supervisor

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/enforce/linux/seccomp"
	"github.com/sbx-sandbox/sbx/internal/policy/denial"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// This file decides bind and sendto, and connect and bind with the network
// off (notify.go decodes them; see supervise.go for the rules).

// bind decides bind: an AF_UNIX socket with a path makes that name, like
// mknod of a socket; inet addresses are the network's (network, with the
// network off inside a private namespace; otherwise nothing to check).
// An abstract or unnamed AF_UNIX address makes no file.
func (s *Supervisor) bind(c call) decision {
	addr, n := c.args[1], c.args[2]
	var fam [2]byte
	if n < 2 {
		return cont // EINVAL
	}
	if !readFull(c.tid, addr, fam[:]) {
		return s.blind(c, "bind", "", "cannot read the socket address from the task's memory")
	}
	if binary.LittleEndian.Uint16(fam[:]) != unix.AF_UNIX {
		if s.in.Sockets == seccomp.SocketsLoopbackNetns {
			return s.network(c)
		}
		return cont
	}
	const sunPath = 108 // sizeof(sockaddr_un.sun_path)
	if n <= 2 {
		return cont // autobind: an abstract name
	}
	buf := make([]byte, min(n-2, sunPath))
	if !readFull(c.tid, addr+2, buf) {
		return s.blind(c, "bind", "", "cannot read the socket address from the task's memory")
	}
	if buf[0] == 0 {
		return cont // abstract: no file
	}
	raw := string(buf)
	if i := bytes.IndexByte(buf, 0); i >= 0 {
		raw = string(buf[:i])
	}
	v := newTaskView(c.tid)
	r, ok := s.resolveAt(v, atFDCWD, raw, false)
	if !ok {
		return s.unseen(v, c, "create", raw)
	}
	d := s.entry(c, "create", denial.Create, r)
	if d.errno != 0 && v.loadRoot() && v.root != "/" {
		v.reset()
		if r, ok = s.resolveAt(v, atFDCWD, raw, false); !ok {
			return s.unseen(v, c, "create", raw)
		}
		d = s.entry(c, "create", denial.Create, r)
	}
	return d
}

// network decides connect and bind with the network off (inside a private
// network namespace): loopback and wildcard addresses continue, except a
// connect to a port only the host serves (hostLoopback); anything else is
// refused with what the namespace would say.
func (s *Supervisor) network(c call) decision {
	a, ok := inetSockaddr(c.tid, c.args[1], c.args[2])
	if !ok {
		return cont // unix sockets and AF_UNSPEC are not the network
	}
	if denial.IsolatedNetworkAllows(a.addr) {
		if c.nr == unix.SYS_CONNECT {
			return s.hostLoopback(c, a, "connect")
		}
		return cont
	}
	op, errno := "connect", unix.ENETUNREACH
	if c.nr == unix.SYS_BIND {
		op, errno = "bind", unix.EADDRNOTAVAIL
	}
	return s.refuse(errno, report.Denial{Operation: op, Syscall: c.name, PID: c.tid, Address: a.report(), Reason: "the network is off"})
}

// send decides sendto with the network off (sendmsg and sendmmsg are
// sendmsg.go's). A datagram to an address outside loopback fails in the
// private namespace with ENETUNREACH (no route), so it is refused with
// that and reported; one to a loopback port only the host has bound is
// reported (hostLoopback). Only UDP sockets are, and TCP Fast Open
// (sendOp): a stream socket otherwise ignores the address, and an
// unconnected UDP socket is the only other way to reach an address
// without connect, which network sees. A pathname unix address is
// unixSend's: the send is carried out by the supervisor, for a socket
// outside the writable roots refused (see unixconnect.go); so is every
// send that names an address, for the same race (a racing dup2 or a
// rewritten address). A sendto without an address is not notified: its
// address pointer is a register, which no thread can fill afterwards.
func (s *Supervisor) send(c call) decision {
	addr, n := c.args[4], c.args[5]
	flags := int(c.u32(3))
	iov := []remoteIovec{{c.args[1], c.args[2]}}
	if addr == 0 || n == 0 {
		return cont // connected, or EDESTADDRREQ
	}
	sa, ok := readSockaddr(c.tid, addr, n)
	if !ok {
		return s.blind(c, "send", "", "cannot read the socket address from the task's memory")
	}
	pre := cont
	if a, ok := inetRaw(sa.raw); ok && s.in.Sockets == seccomp.SocketsLoopbackNetns {
		op := sendOp(c.tid, c.fd(0), flags)
		switch {
		case denial.IsolatedNetworkAllows(a.addr):
			pre = s.hostLoopback(c, a, op)
		case op == "connect" || isUDPSocket(c.tid, c.fd(0)):
			return s.refuse(unix.ENETUNREACH, report.Denial{Operation: op, Syscall: c.name, PID: c.tid, Address: a.report(), Reason: "the network is off"})
		}
		if pre.errno != 0 {
			return pre
		}
	}
	return s.unixSend(c, sa, iov, flags, false, pre)
}

// sockAddr is an inet or inet6 socket address read from a task.
type sockAddr struct {
	family string
	addr   netip.Addr
	port   int
}

func (a sockAddr) report() *report.Address {
	return &report.Address{Family: a.family, Address: a.addr.Unmap().String(), Port: a.port}
}

// inetSockaddr reads the sockaddr of n bytes at p from the task; ok is false
// for any other family, or one that cannot be read.
func inetSockaddr(tid int, p, n uint64) (sockAddr, bool) {
	if n < 2 || n > 128 {
		return sockAddr{}, false
	}
	buf := make([]byte, n)
	if !readFull(tid, p, buf) {
		return sockAddr{}, false
	}
	return inetRaw(buf)
}

// inetRaw decodes an inet or inet6 socket address; ok is false for any
// other family.
func inetRaw(buf []byte) (sockAddr, bool) {
	if len(buf) < 2 {
		return sockAddr{}, false
	}
	port := int(binary.BigEndian.Uint16(buf[2:min(4, len(buf))]))
	switch binary.LittleEndian.Uint16(buf) {
	case unix.AF_INET:
		if len(buf) >= 8 {
			return sockAddr{"inet", netip.AddrFrom4([4]byte(buf[4:8])), port}, true
		}
	case unix.AF_INET6:
		if len(buf) >= 24 {
			return sockAddr{"inet6", netip.AddrFrom16([16]byte(buf[8:24])), port}, true
		}
	}
	return sockAddr{}, false
}

// sendOp is the operation a send with flags to an inet address is on the
// task's socket fd: "connect" when it is TCP Fast Open (MSG_FASTOPEN on a
// TCP socket connects it to the address and puts the data in the SYN, as
// connect and then send would; a program calls sendto or sendmsg with it,
// where curl's --tcp-fastopen on Linux sets TCP_FASTOPEN_CONNECT and calls
// connect, which network sees), else "send". Without this a Fast Open connect to a port only the
// host serves got ECONNREFUSED, and one outside loopback ENETUNREACH, with
// no denial.
//
// IMPORTANT: a Fast Open send with an address on a socket already connected
// fails with EISCONN in the kernel; to a port only the host serves, sbx
// refuses it first, with ECONNREFUSED and a connect denial (a failure
// either way: the errno and the denial differ).
func sendOp(tid int, fd int32, flags int) string {
	if flags&unix.MSG_FASTOPEN != 0 && socketProto(tid, fd) == protoTCP {
		return "connect"
	}
	return "send"
}

// isUDPSocket reports whether fd of the task is a datagram socket that
// sends to the address it is given: UDP, UDP-Lite or an ICMP ping socket,
// named by the socket's system.sockprotoname attribute (through
// /proc/PID/fd, the same access as reading the task's fds). Read only
// before a refusal.
func isUDPSocket(tid int, fd int32) bool {
	var buf [32]byte
	n, err := unix.Getxattr(fmt.Sprintf("/proc/%d/fd/%d", tid, fd), "system.sockprotoname", buf[:])
	if err != nil {
		return false
	}
	proto := strings.TrimRight(string(buf[:n]), "\x00")
	return strings.HasPrefix(proto, "UDP") || strings.HasPrefix(proto, "PING")
}

func familyName(f uint32) string {
	switch f {
	case unix.AF_INET:
		return "inet"
	case unix.AF_INET6:
		return "inet6"
	}
	return "unknown"
}
