//go:build linux

package supervisor

import (
	"encoding/binary"
	"path/filepath"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/enforce/linux/seccomp"
	"github.com/sbx-sandbox/sbx/internal/policy/denial"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// sendmsg and sendmmsg with the network off: the supervisor carries out
// every one itself, with or without a destination, on its copy of the
// task's socket (see the top of unixconnect.go). A destination, the data
// and the ancillary data are read once from the task's memory; a thread
// that fills msg_name or swaps the fd (dup2) after that changes nothing,
// which a CONTINUE could not promise: the kernel would read both again.
//
// Ancillary data is sent as the task wrote it, except SCM_RIGHTS, whose
// fd numbers are the task's: each is taken from the task (pidfd_getfd) and
// sbx's copy sent, so the receiver gets the task's file and never one of
// sbx's. SCM_CREDENTIALS is refused (EACCES, an inferred denial): the
// credentials would have to be sbx's, and the kernel would refuse the
// task's (EPERM) or attach sbx's where the task named its own.
//
// Side effects, measured (BenchmarkSendmsgSupervised, TestUnixSendmsg*):
// a receiver with SO_PASSCRED sees sbx's process as the sender, as after a
// connect sbx carried out; a send that fails with EPIPE raises SIGPIPE in
// the task (sbx sends it, unless MSG_NOSIGNAL) as the kernel would; each
// sendmsg costs a round trip to the supervisor.

const (
	msghdrSize  = 56 // sizeof(struct msghdr) on 64-bit
	mmsghdrSize = 64 // sizeof(struct mmsghdr)
	// maxControl bounds the ancillary data read (the kernel's bound,
	// net.core.optmem_max, is smaller): ENOBUFS beyond.
	maxControl = 1 << 20
	// maxBatch bounds the data of one sendmmsg the supervisor copies: the
	// messages past it are left unsent, which sendmmsg may do.
	maxBatch = 4 * maxDatagram
	scmMaxFD = 253 // SCM_MAX_FD
)

// taskMessage is one message of a sendmsg or sendmmsg, read once.
type taskMessage struct {
	addr    sockaddrCopy // raw nil: no destination
	data    []byte
	control []byte // as sbx sends it: SCM_RIGHTS names sbx's copies
	fds     []int  // sbx's copies of the fds it passes
	pre     decision
}

func (m *taskMessage) close() {
	for _, fd := range m.fds {
		unix.Close(fd)
	}
}

// readMessage reads the struct msghdr at p of the task t, sent with flags
// (MSG_FASTOPEN makes an address a connect: sendOp). d is set when
// the call ends there: its own failure (EFAULT, EINVAL, EMSGSIZE), a
// refusal, or (d.errno 0) a continue.
func (s *Supervisor) readMessage(c call, t *taskSocket, p uint64, budget, flags int) (m *taskMessage, d *decision) {
	fail := func(errno syscall.Errno) (*taskMessage, *decision) { return nil, &decision{errno: errno} }
	blind := func(what string) (*taskMessage, *decision) {
		b := s.blind(c, "send", "", what)
		return nil, &b
	}
	var hdr [msghdrSize]byte
	if !readFull(c.tid, p, hdr[:]) {
		return blind("cannot read struct msghdr from the task's memory")
	}
	u64 := func(off int) uint64 { return binary.LittleEndian.Uint64(hdr[off:]) }
	name, namelen := u64(0), uint64(binary.LittleEndian.Uint32(hdr[8:]))
	iovp, iovlen, ctl, ctllen := u64(16), u64(24), u64(32), u64(40)
	m = &taskMessage{}
	if name != 0 && namelen != 0 {
		if namelen > unix.SizeofSockaddrAny {
			return fail(unix.EINVAL)
		}
		var ok bool
		if m.addr, ok = readSockaddr(c.tid, name, namelen); !ok {
			return blind("cannot read the socket address from the task's memory")
		}
	}
	if iovlen > 1024 { // UIO_MAXIOV
		return fail(unix.EMSGSIZE)
	}
	iov, ok := readIovecs(c.tid, iovp, iovlen)
	if !ok {
		return fail(unix.EFAULT)
	}
	var total uint64
	for i, v := range iov {
		if total+v.len > uint64(budget) {
			if t.sotype != unix.SOCK_STREAM {
				return fail(unix.EMSGSIZE)
			}
			// A stream takes a short send: the rest is the task's to
			// send again, as after a signal.
			iov[i].len = uint64(budget) - total
			iov = iov[:i+1]
		}
		total += iov[i].len
	}
	m.data = make([]byte, total)
	off := 0
	for _, v := range iov {
		if v.len > 0 && !readFull(c.tid, v.base, m.data[off:off+int(v.len)]) {
			return fail(unix.EFAULT)
		}
		off += int(v.len)
	}
	if ctllen > 0 {
		if ctllen > maxControl {
			return fail(unix.ENOBUFS)
		}
		raw := make([]byte, ctllen)
		if !readFull(c.tid, ctl, raw) {
			return fail(unix.EFAULT)
		}
		var errno syscall.Errno
		var why string
		if m.control, m.fds, errno, why = translateControl(t, raw); errno != 0 || why != "" {
			m.close()
			if why != "" {
				return blind(why)
			}
			return fail(errno)
		}
	}
	if a, ok := inetRaw(m.addr.raw); ok && s.in.Sockets == seccomp.SocketsLoopbackNetns {
		op := sendOp(c.tid, c.fd(0), flags)
		switch {
		case denial.IsolatedNetworkAllows(a.addr):
			m.pre = s.hostLoopback(c, a, op)
		case op == "connect" || t.sotype == unix.SOCK_DGRAM:
			m.close()
			r := s.refuse(unix.ENETUNREACH, report.Denial{Operation: op, Syscall: c.name, PID: c.tid, Address: a.report(), Reason: "the network is off"})
			return nil, &r
		}
		if m.pre.errno != 0 {
			m.close()
			return nil, &m.pre
		}
	}
	return m, nil
}

// translateControl rebuilds the task's ancillary data for sbx to send
// (see the top of this file). errno is the kernel's answer to malformed
// data; why, what sbx cannot send for the task.
func translateControl(t *taskSocket, raw []byte) (out []byte, fds []int, errno syscall.Errno, why string) {
	const hdr = unix.SizeofCmsghdr
	closeAll := func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
	for off := 0; off+hdr <= len(raw); {
		l := binary.LittleEndian.Uint64(raw[off:])
		if l < hdr || l > uint64(len(raw)-off) {
			closeAll()
			return nil, nil, unix.EINVAL, ""
		}
		level := int32(binary.LittleEndian.Uint32(raw[off+8:]))
		typ := int32(binary.LittleEndian.Uint32(raw[off+12:]))
		data := raw[off+hdr : off+int(l)]
		if level == unix.SOL_SOCKET && typ == unix.SCM_CREDENTIALS {
			closeAll()
			return nil, nil, 0, "the message passes SCM_CREDENTIALS, which the supervisor cannot send as the task's"
		}
		if level == unix.SOL_SOCKET && typ == unix.SCM_RIGHTS {
			n := len(data) / 4
			if n > scmMaxFD {
				closeAll()
				return nil, nil, unix.EINVAL, ""
			}
			mine := make([]int, n)
			for i := range mine {
				fd, errno, blind := t.take(int32(binary.LittleEndian.Uint32(data[i*4:])))
				if fd < 0 {
					closeAll()
					return nil, nil, errno, blind
				}
				fds = append(fds, fd)
				mine[i] = fd
			}
			out = append(out, unix.UnixRights(mine...)...)
		} else {
			b := make([]byte, unix.CmsgSpace(len(data)))
			binary.LittleEndian.PutUint64(b, uint64(unix.CmsgLen(len(data))))
			binary.LittleEndian.PutUint32(b[8:], uint32(level))
			binary.LittleEndian.PutUint32(b[12:], uint32(typ))
			copy(b[hdr:], data)
			out = append(out, b...)
		}
		off += int((l + 7) &^ 7)
	}
	return out, fds, 0, ""
}

// sendMsg decides a sendmsg on a network-off plan by carrying it out.
func (s *Supervisor) sendMsg(c call) decision {
	t, failed := s.takeSocket(c, "send", nil)
	if t == nil {
		return failed
	}
	m, d := s.readMessage(c, t, c.args[1], maxDatagram, int(c.u32(2)))
	if d != nil {
		t.close()
		return *d
	}
	if m.addr.abstract && s.in.AbstractScoped {
		m.close()
		t.close()
		return m.pre // IMPORTANT: see the top of unixconnect.go
	}
	return decision{op: s.sendMessages(c, t, []*taskMessage{m}, nil, int(c.u32(2)))}
}

// sendMmsg decides a sendmmsg on a network-off plan by carrying it out,
// message by message, as sendmsg; it answers with the count sent, and
// writes each msg_len as the kernel does.
func (s *Supervisor) sendMmsg(c call) decision {
	t, failed := s.takeSocket(c, "send", nil)
	if t == nil {
		return failed
	}
	vlen := min(c.u32(2), 1024) // UIO_MAXIOV, as the kernel caps it
	if vlen == 0 {
		t.close()
		return cont // 0, from a register no thread can change
	}
	var msgs []*taskMessage
	var lens []uint64
	budget := maxBatch
	var tail decision // what ended the batch early, for its denials
	for i := range uint64(vlen) {
		p := c.args[1] + i*mmsghdrSize
		m, d := s.readMessage(c, t, p, min(budget, maxDatagram), int(c.u32(3)))
		if d == nil && m.addr.abstract && s.in.AbstractScoped {
			m.close()
			d = &m.pre
			if i == 0 {
				t.close()
				return m.pre // IMPORTANT: see the top of unixconnect.go
			}
		}
		if d != nil {
			if i == 0 {
				t.close()
				return *d
			}
			tail = *d
			break
		}
		msgs, lens = append(msgs, m), append(lens, p+msghdrSize)
		if budget -= len(m.data); budget <= 0 {
			break
		}
	}
	op := s.sendMessages(c, t, msgs, lens, int(c.u32(3)))
	if len(tail.denials) > 0 {
		act := op.act
		op.act = func() outcome {
			out := act()
			out.denials = append(out.denials, tail.denials...)
			return out
		}
	}
	return decision{op: op}
}

// sendMessages is the performed operation of sendmsg (lens nil) or
// sendmmsg (lens: where to write each message's msg_len in the task).
func (s *Supervisor) sendMessages(c call, t *taskSocket, msgs []*taskMessage, lens []uint64, flags int) *performed {
	addrs := make([][]byte, len(msgs))
	var sis []*socketInode
	limit := len(msgs)
	var stopped *outcome // the refusal that ended a sendmmsg's batch
	return &performed{
		close: func() {
			for _, si := range sis {
				si.close()
			}
			for _, m := range msgs {
				m.close()
			}
			t.close()
		},
		prepare: func() *outcome {
			for i, m := range msgs {
				addrs[i] = m.addr.raw
				if t.domain != unix.AF_UNIX || m.addr.unixPath == "" {
					continue
				}
				if t.root < 0 {
					if why := t.openRoot(!filepath.IsAbs(m.addr.unixPath)); why != "" {
						d := s.blind(c, "send", m.addr.unixPath, why)
						return &outcome{errno: d.errno, denials: d.denials}
					}
				} else if t.cwd == "" && !filepath.IsAbs(m.addr.unixPath) {
					if why := t.openRoot(true); why != "" {
						d := s.blind(c, "send", m.addr.unixPath, why)
						return &outcome{errno: d.errno, denials: d.denials}
					}
				}
				si, out := s.unixTarget(c, "send", t, m.addr)
				if out != nil {
					if i == 0 || lens == nil || out.cont {
						return out
					}
					limit, stopped = i, out
					break
				}
				sis = append(sis, si)
				addrs[i] = procSockaddr(si.obj)
			}
			return nil
		},
		act: func() outcome {
			var res outcome
			for i := range limit {
				out := sendMessage(t, msgs[i], addrs[i], flags)
				res.denials = append(res.denials, msgs[i].pre.denials...)
				if out.errno != 0 {
					if i == 0 {
						res.errno = out.errno
					}
					return res
				}
				if lens == nil {
					res.val = out.val
					return res
				}
				var l [4]byte
				binary.LittleEndian.PutUint32(l[:], uint32(out.val))
				writeFull(c.tid, lens[i], l[:])
				res.val++
			}
			if stopped != nil {
				res.denials = append(res.denials, stopped.denials...)
			}
			return res
		},
	}
}

// sendMessage sends m to addr on the task's socket, with flags; EPIPE
// raises SIGPIPE in the task as the kernel would have (sbx itself ignores
// it: Go does for fds other than stdout and stderr).
func sendMessage(t *taskSocket, m *taskMessage, addr []byte, flags int) outcome {
	var h unix.Msghdr
	if len(addr) > 0 {
		h.Name, h.Namelen = &addr[0], uint32(len(addr))
	}
	var iov unix.Iovec
	if len(m.data) > 0 {
		iov.Base = &m.data[0]
		iov.SetLen(len(m.data))
		h.Iov = &iov
		h.SetIovlen(1)
	}
	if len(m.control) > 0 {
		h.Control = &m.control[0]
		h.SetControllen(len(m.control))
	}
	for {
		n, _, errno := unix.Syscall(unix.SYS_SENDMSG, uintptr(t.sock), uintptr(unsafe.Pointer(&h)), uintptr(flags))
		runtime.KeepAlive(addr)
		runtime.KeepAlive(m)
		if errno == unix.EINTR {
			continue
		}
		if errno == unix.EPIPE && flags&unix.MSG_NOSIGNAL == 0 {
			unix.PidfdSendSignal(t.pidfd, unix.SIGPIPE, nil, 0)
		}
		return outcome{val: int64(n), errno: errno}
	}
}

// writeFull writes buf into the task's memory at addr.
func writeFull(tid int, addr uint64, buf []byte) bool {
	n, err := unix.ProcessVMWritev(tid,
		[]unix.Iovec{{Base: &buf[0], Len: uint64(len(buf))}},
		[]unix.RemoteIovec{{Base: uintptr(addr), Len: len(buf)}}, 0)
	return err == nil && n == len(buf)
}
