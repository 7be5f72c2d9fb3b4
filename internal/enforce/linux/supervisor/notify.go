//go:build linux

package supervisor

import (
	"bytes"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/enforce/linux/seccomp"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// This file decodes one notified call and decides it (see supervise.go for
// the rules the decisions follow).

// call is a notified syscall in its *at form: legacy calls (open, mkdir,
// rename, ...) are mapped by atForm, keeping their own name for the report.
type call struct {
	name string
	nr   uint32
	args [6]uint64
	tid  int
}

func (c call) fd(i int) int32   { return int32(uint32(c.args[i])) }
func (c call) u32(i int) uint32 { return uint32(c.args[i]) }

func (s *Supervisor) decide(n *seccompNotif) decision {
	if abi, name, foreign := seccomp.ForeignABI(n.Data.Arch, n.Data.Nr); foreign {
		// First: under another ABI the number means another syscall.
		return s.refuseForeignABI(n, abi, name)
	}
	c, ok := atForm(uint32(n.Data.Nr), n.Data.Args)
	if !ok {
		// The filter sent a call this file does not decode: a table and a
		// decoder out of step. Nothing was checked, so nothing may pass.
		c = call{name: fmt.Sprintf("syscall %d", n.Data.Nr), tid: int(n.PID)}
		return s.blind(c, "syscall", "", "the supervisor does not decode this call")
	}
	c.tid = int(n.PID)
	switch c.nr {
	case unix.SYS_SOCKET:
		// Only inet and inet6 get here (seccomp.SocketsUnixOnly), and the table
		// would refuse them: always refuse, with the table's errno.
		return s.refuse(unix.EAFNOSUPPORT, report.Denial{Operation: "socket", Syscall: c.name, PID: c.tid,
			Address: &report.Address{Family: familyName(c.u32(0))}, Reason: "the network is off"})
	case unix.SYS_BIND:
		return s.bind(c)
	case unix.SYS_CONNECT:
		return s.unixConnect(c)
	case unix.SYS_SENDTO:
		return s.send(c)
	case unix.SYS_SENDMSG:
		return s.sendMsg(c)
	case unix.SYS_SENDMMSG:
		return s.sendMmsg(c)
	}
	v := newTaskView(c.tid)
	if mode, chmod, ok := seccomp.SetidMode(c.nr, c.u32); ok && mode&seccomp.SetidBits != 0 {
		// Only set-id rows route such a call here: never CONTINUE it.
		return s.setid(v, c, mode, chmod)
	}
	d := s.decidePath(v, c)
	if d.errno != 0 && !v.rootKnown {
		// Paths were resolved as if the task's root were "/". Before
		// refusing, make sure: a chrooted task's paths mean other files.
		// (The filter refuses chroot, so only a root sbx gave the task can
		// differ; a root that cannot be read is a refusal all the same.)
		if !v.loadRoot() {
			return s.blind(c, "syscall", "", v.blind)
		}
		if v.root != "/" {
			v.reset()
			d = s.decidePath(v, c)
		}
	}
	return d
}

// blind refuses a call the supervisor could not see through, failing
// closed (invariant 1 of DESIGN.md): EACCES, what Landlock says, and a
// denial with confidence "inferred" whose reason says what was not seen.
func (s *Supervisor) blind(c call, op, path, what string) decision {
	return decision{errno: unix.EACCES, denials: []report.Denial{{Operation: op, Path: path, Syscall: c.name, PID: c.tid,
		Source: SupervisorSource, Confidence: Inferred, Count: 1,
		Reason: "the supervisor could not see what the call would reach (" + what + "), so it refused it"}}}
}

// unseen is the answer to a resolution that failed: the call fails by
// itself (ENOENT, ENOTDIR, ELOOP) and continues, or sbx could not see, and
// it is refused; the object has no name, and it continues.
func (s *Supervisor) unseen(v *taskView, c call, op, raw string) decision {
	if v.blind == "" || v.nameless {
		return cont
	}
	return s.blind(c, op, raw, v.blind)
}

// pathString reads a path argument; a path the task's memory does not give
// (process_vm_readv fails: unmapped, or memory no other process may read)
// is a refusal.
func (s *Supervisor) pathString(v *taskView, c call, addr uint64) (string, bool) {
	raw, ok := readString(c.tid, addr)
	if !ok {
		v.cannot("cannot read the path at %#x from the task's memory", addr)
	}
	return raw, ok
}

func (s *Supervisor) refuseAll(d decision) decision {
	for i := range d.denials {
		d.denials[i].Source, d.denials[i].Confidence, d.denials[i].Count = SupervisorSource, Observed, 1
	}
	return d
}

// pathMax is PATH_MAX: a longer path is ENAMETOOLONG for the kernel.
const pathMax = 4096

// readString reads a NUL-terminated string of at most pathMax bytes from
// the task's memory with process_vm_readv (the same access check as
// /proc/PID/mem, one syscall instead of three), page by page so that a
// string near the end of a mapping is still read.
func readString(tid int, addr uint64) (string, bool) {
	var buf [pathMax]byte
	page := uint64(unix.Getpagesize())
	off := 0
	// Most paths are short: read 256 bytes first, then the rest page by page.
	want := 256
	for off < len(buf) {
		a := addr + uint64(off)
		chunk := min(len(buf)-off, int(page-a%page), want)
		want = len(buf)
		n, err := unix.ProcessVMReadv(tid,
			[]unix.Iovec{{Base: &buf[off], Len: uint64(chunk)}},
			[]unix.RemoteIovec{{Base: uintptr(a), Len: chunk}}, 0)
		if err != nil || n <= 0 {
			return "", false
		}
		if i := bytes.IndexByte(buf[off:off+n], 0); i >= 0 {
			return string(buf[:off+i]), true
		}
		off += n
	}
	return "", false
}

// readFull reads exactly len(buf) bytes from the task's memory.
func readFull(tid int, addr uint64, buf []byte) bool {
	if len(buf) == 0 {
		return true
	}
	n, err := unix.ProcessVMReadv(tid,
		[]unix.Iovec{{Base: (*byte)(unsafe.Pointer(&buf[0])), Len: uint64(len(buf))}},
		[]unix.RemoteIovec{{Base: uintptr(addr), Len: len(buf)}}, 0)
	return err == nil && n == len(buf)
}

// nativeNames are the calls every architecture has, already in *at form.
var nativeNames = map[uint32]string{
	unix.SYS_OPENAT: "openat", unix.SYS_OPENAT2: "openat2", unix.SYS_MKDIRAT: "mkdirat", unix.SYS_MKNODAT: "mknodat",
	unix.SYS_UNLINKAT: "unlinkat", unix.SYS_RENAMEAT: "renameat", unix.SYS_RENAMEAT2: "renameat2",
	unix.SYS_LINKAT: "linkat", unix.SYS_SYMLINKAT: "symlinkat", unix.SYS_TRUNCATE: "truncate",
	unix.SYS_FCHMODAT: "fchmodat", unix.SYS_FCHMODAT2: "fchmodat2", unix.SYS_FCHMOD: "fchmod",
	unix.SYS_FCHOWNAT: "fchownat", unix.SYS_FCHOWN: "fchown",
	unix.SYS_CONNECT: "connect", unix.SYS_BIND: "bind", unix.SYS_SOCKET: "socket",
	unix.SYS_SENDTO: "sendto", unix.SYS_SENDMSG: "sendmsg", unix.SYS_SENDMMSG: "sendmmsg",
}

func atFormNative(nr uint32, a [6]uint64) (call, bool) {
	name, ok := nativeNames[nr]
	if !ok {
		return call{}, false
	}
	return call{name: name, nr: nr, args: a}, true
}
