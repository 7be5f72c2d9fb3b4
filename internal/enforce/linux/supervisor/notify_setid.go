//go:build linux

package supervisor

import (
	"errors"
	"fmt"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/report"
)

// The supervisor's half of the set-id rows (enforce/linux/seccomp/seccomp_setid.go). The filter
// hands it every call whose mode register holds S_ISUID or S_ISGID; it
// decides from those registers alone, as the filter did:
//
//   - S_ISUID anywhere, or either bit in the mode of a call that creates a
//     file: refused (EPERM), with a "setid" denial. The supervisor never
//     lets one through, so this rests on the filter, which routes only
//     such calls here (and with no listener the kernel fails them).
//   - S_ISGID in a chmod: the supervisor carries the chmod out itself,
//     never CONTINUE: it opens the object the way the kernel would look it
//     up for the task (inside the task's root, /proc/TID/root with
//     RESOLVE_IN_ROOT, so in the task's mount namespace, whose read-only
//     mounts still refuse it; or the task's own fd, by pidfd_getfd), on a
//     thread with the command's capabilities, fstats what it opened and
//     chmods that same open object when it is a directory. Anything else is
//     refused with a denial. What another thread renames or swaps after the
//     check changes nothing: the decision and the chmod are on one inode.
//
// A refused set-id bit gets no retry: no grant or mode short of no sandbox
// at all lets one be left behind (escalate.SmallestRetry).

// SetidOperation is the Denial operation of a refused set-id bit.
const SetidOperation = "setid"

// The reasons of a refused set-id bit.
const (
	setuidReason       = "the set-user-ID bit is never set inside the sandbox: the file would run with its owner's privileges after the call"
	setgidFileReason   = "the set-group-ID bit is never set on anything but a directory inside the sandbox: the file would run with its group's privileges after the call"
	setgidCreateReason = "a file is never created set-group-ID inside the sandbox: it would run with its group's privileges after the call"
)

// setid decides a call whose mode holds a set-id bit (setidMode).
func (s *Supervisor) setid(v *taskView, c call, mode uint32, chmod bool) decision {
	switch {
	case mode&unix.S_ISUID != 0:
		return s.refuse(unix.EPERM, report.Denial{Operation: SetidOperation, Path: s.setidPath(c), Syscall: c.name, PID: c.tid, Reason: setuidReason})
	case !chmod:
		return s.refuse(unix.EPERM, report.Denial{Operation: SetidOperation, Path: s.setidPath(c), Syscall: c.name, PID: c.tid, Reason: setgidCreateReason})
	}
	// The policy first: a chmod the supervisor would refuse anyway (outside
	// the roots, a carve-out) is refused as such.
	if d := s.decidePath(v, c); d.errno != 0 {
		return d
	}
	return s.chmodSetgid(newTaskView(c.tid), c, mode&0o7777)
}

// setidPath is the path of c's object for a denial, best effort: the
// refusal does not depend on it.
func (s *Supervisor) setidPath(c call) string {
	v := newTaskView(c.tid)
	if c.nr == unix.SYS_FCHMOD {
		p, _ := v.fdPath(c.fd(0))
		return p
	}
	raw, ok := readString(c.tid, c.args[1])
	if !ok {
		return ""
	}
	if r, ok := v.resolveAt(c.fd(0), raw, false); ok {
		return r.path
	}
	return raw
}

// chmodSetgid carries out the chmod c (S_ISGID in mode) for the task: see
// the top of this file.
func (s *Supervisor) chmodSetgid(v *taskView, c call, mode uint32) decision {
	if !v.loadRoot() {
		return s.blind(c, "chmod", "", v.blind)
	}
	if v.root != "/" {
		return s.blind(c, "chmod", "", "the task has a root of its own: "+v.root)
	}
	var flags uint32
	if c.nr == unix.SYS_FCHMODAT2 {
		if !haveFchmodat2() {
			return decision{errno: unix.ENOSYS} // what the kernel says, not an emulation
		}
		flags = c.u32(3)
	}
	byFD := c.nr == unix.SYS_FCHMOD
	raw := ""
	if !byFD {
		if flags&unix.AT_EMPTY_PATH != 0 && c.args[1] == 0 {
			byFD = true
		} else {
			var ok bool
			if raw, ok = readString(c.tid, c.args[1]); !ok {
				return s.blind(c, "chmod", "", "cannot read the path from the task's memory")
			}
			byFD = raw == "" && flags&unix.AT_EMPTY_PATH != 0
			if raw == "" && !byFD {
				return decision{errno: unix.ENOENT}
			}
		}
	}
	op := &setgidChmod{s: s, c: c, mode: mode, obj: -1, root: -1, report: s.setidPath(c)}
	if byFD {
		t, errno, blind := openTaskSock(c.tid, c.fd(0))
		switch {
		case errno != 0:
			return decision{errno: errno}
		case blind != "":
			return s.blind(c, "chmod", "", blind)
		}
		obj, err := unix.FcntlInt(uintptr(t.sock), unix.F_DUPFD_CLOEXEC, 0)
		t.close()
		if err != nil {
			return s.blind(c, "chmod", "", "dup: "+err.Error())
		}
		op.obj, op.fchmod = obj, c.nr == unix.SYS_FCHMOD
		op.path, _ = v.fdPath(c.fd(0))
	} else {
		op.path = raw
		if raw[0] != '/' {
			base, ok := v.dir(c.fd(0))
			if !ok {
				if v.blind != "" {
					return s.blind(c, "chmod", raw, v.blind)
				}
				return decision{errno: unix.ENOTDIR}
			}
			op.path = base + "/" + raw
		}
		root, err := unix.Open(fmt.Sprintf("/proc/%d/root", c.tid), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return s.blind(c, "chmod", op.path, "the task's root: "+err.Error())
		}
		op.root, op.nofollow = root, flags&unix.AT_SYMLINK_NOFOLLOW != 0
	}
	return decision{op: &performed{prepare: op.prepare, act: op.act, close: op.close}}
}

// setgidChmod is one chmod with S_ISGID the supervisor carries out.
type setgidChmod struct {
	s        *Supervisor
	c        call
	mode     uint32
	path     string // as the task names it: looked up in root, reported
	root     int    // the task's root (O_PATH), for a lookup by path
	nofollow bool   // AT_SYMLINK_NOFOLLOW
	obj      int    // the object: the task's fd, or what the lookup found
	fchmod   bool   // fchmod(2): an O_PATH fd is EBADF
	report   string // the path for a denial, as the supervisor resolved it
}

func (op *setgidChmod) close() {
	for _, fd := range []int{op.obj, op.root} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// prepare runs with the command's capabilities (runPerformed): the lookup
// is the command's.
func (op *setgidChmod) prepare() *outcome {
	if op.obj < 0 {
		fl := unix.O_PATH | unix.O_CLOEXEC
		if op.nofollow {
			fl |= unix.O_NOFOLLOW
		}
		obj, err := unix.Openat2(op.root, op.path, &unix.OpenHow{Flags: uint64(fl), Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS})
		if err != nil {
			var errno syscall.Errno
			if !errors.As(err, &errno) || errno == unix.EXDEV || (errno == unix.ELOOP && !op.nofollow) {
				// A /proc magic link the kernel would follow, or a loop:
				// sbx cannot tell which.
				d := op.s.blind(op.c, "chmod", op.path, fmt.Sprintf("looking up %s: %v (a /proc magic link is not followed)", op.path, err))
				return &outcome{errno: d.errno, denials: d.denials}
			}
			return &outcome{errno: errno} // ENOENT, ENOTDIR, EACCES: the kernel's answer
		}
		op.obj = obj
	}
	if op.fchmod {
		if fl, err := unix.FcntlInt(uintptr(op.obj), unix.F_GETFL, 0); err != nil || fl&unix.O_PATH != 0 {
			return &outcome{errno: unix.EBADF}
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(op.obj, &st); err != nil {
		d := op.s.blind(op.c, "chmod", op.path, "fstat: "+err.Error())
		return &outcome{errno: d.errno, denials: d.denials}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return nil
	case unix.S_IFLNK:
		return &outcome{errno: unix.EOPNOTSUPP} // a symlink's mode cannot change
	}
	d := op.s.refuse(unix.EPERM, report.Denial{Operation: SetidOperation, Path: op.report, Syscall: op.c.name, PID: op.c.tid, Reason: setgidFileReason})
	return &outcome{errno: d.errno, denials: d.denials}
}

// act chmods the directory prepare opened, through its fd: an O_PATH fd
// takes no fchmod, but its /proc/self/fd link reaches the same inode on the
// same mount.
func (op *setgidChmod) act() outcome {
	err := unix.Fchmodat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", op.obj), op.mode, 0)
	var errno syscall.Errno
	if err != nil && !errors.As(err, &errno) {
		errno = unix.EPERM
	}
	return outcome{errno: errno}
}

// haveFchmodat2 reports whether the kernel has fchmodat2 (6.6+): asked
// with a bad fd, it says EBADF, not ENOSYS.
var haveFchmodat2 = sync.OnceValue(func() bool {
	_, _, e := unix.Syscall6(unix.SYS_FCHMODAT2, ^uintptr(0), 0, 0, unix.AT_EMPTY_PATH, 0, 0)
	return e != unix.ENOSYS
})
