//go:build linux

package supervisor

import (
	"fmt"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/report"
)

// Operations the supervisor carries out for the task instead of letting the
// kernel run them (a connect or a datagram to a pathname unix socket with
// the network off, every sendmsg: unixconnect.go and sendmsg.go say why).
// The address is resolved once, in the task's view, and the operation runs
// on a thread of sbx's with the command's capabilities; the notification is
// answered with the operation's own result, never CONTINUE.

// outcome is what a performed operation answers: val or -errno, or
// continue (only where Landlock decides: ABI 9).
type outcome struct {
	val     int64
	errno   syscall.Errno
	cont    bool
	denials []report.Denial
}

// performed is an operation the supervisor carries out for the task, on a
// thread of its own: prepare decides (an outcome ends it there: a refusal,
// or the call's own failure), act carries it out (it may block, like the
// task would); then close.
type performed struct {
	prepare func() *outcome
	act     func() outcome
	close   func()
}

// performAt is the operation op (connect, send) on the task's socket t to
// address a, carried out by act with the address to use: for a pathname
// unix address, prepare first resolves it in the task's view and holds the
// socket file it names (unixTarget, refusing one outside the writable
// roots), and act gets the /proc/self/fd path of that file instead, so
// nothing the task changes later is read again. refuse, when not nil, may
// still refuse once the target is known, or prepare the task's socket for
// it (a connect's is marked as a call's: markCallSocket).
func (s *Supervisor) performAt(c call, op string, t *taskSocket, a sockaddrCopy, refuse func(si *socketInode) *outcome, act func(addr []byte) outcome) *performed {
	addr := a.raw
	var si *socketInode
	return &performed{
		close: func() {
			if si != nil {
				si.close()
			}
			t.close()
		},
		prepare: func() *outcome {
			if t.domain != unix.AF_UNIX || a.unixPath == "" {
				return nil
			}
			var out *outcome
			if si, out = s.unixTarget(c, op, t, a); out != nil {
				return out
			}
			if refuse != nil {
				if out := refuse(si); out != nil {
					return out
				}
			}
			addr = procSockaddr(si.obj)
			return nil
		},
		act: func() outcome { return act(addr) },
	}
}

// rawSockaddrCall runs connect(fd, addr) with the bytes as they are, so that
// an address of any family gets the kernel's own answer; EINTR is retried.
func rawSockaddrCall(nr uintptr, fd int, addr []byte) syscall.Errno {
	var p unsafe.Pointer
	if len(addr) > 0 {
		p = unsafe.Pointer(&addr[0])
	}
	for {
		_, _, errno := unix.Syscall(nr, uintptr(fd), uintptr(p), uintptr(len(addr)))
		runtime.KeepAlive(addr)
		if errno != unix.EINTR {
			return errno
		}
	}
}

// runPerformed carries out op on a thread of its own. Where sbx is root,
// the thread first lowers its effective capabilities to the command's, so
// that file permissions on the way to a socket apply as they would to the
// command, and raises them again before it is unlocked: it is not left to
// die with the goroutine, because a child sbx forked from that thread
// (a stage) would die with it (PR_SET_PDEATHSIG). It returns the outcome
// when prepare ended the operation (the caller answers it); otherwise the
// goroutine acts and answers the notification id on listener, which it
// closes, by itself, since acting can block.
func (s *Supervisor) runPerformed(listener int, id uint64, op *performed) *outcome {
	decided := make(chan *outcome, 1)
	go func() {
		if s.euid == 0 {
			runtime.LockOSThread()
			restore, err := lowerCapabilities(s.in.Capabilities)
			if err != nil {
				runtime.UnlockOSThread()
				op.close()
				decided <- &outcome{errno: unix.EACCES, denials: []report.Denial{{Operation: "connect", Source: SupervisorSource,
					Confidence: Inferred, Count: 1, Reason: "the supervisor could not take the command's capabilities: " + err.Error()}}}
				return
			}
			defer func() {
				// A thread whose capabilities could not be restored stays
				// locked, and so ends with the goroutine.
				if restore() == nil {
					runtime.UnlockOSThread()
				}
			}()
		}
		if out := op.prepare(); out != nil {
			op.close()
			decided <- out
			return
		}
		decided <- nil
		defer unix.Close(listener)
		defer op.close()
		out := op.act()
		resp := seccompNotifResp{ID: id}
		switch {
		case out.cont:
			resp.Flags = unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE
		case out.errno != 0:
			resp.Error = -int32(out.errno)
		default:
			resp.Val = out.val
		}
		// Recorded before the answer: once answered, the command may
		// end, and the call's result be read, before this goroutine runs
		// again (the operation was carried out either way, so a caller
		// killed meanwhile does not make them wrong).
		for _, d := range out.denials {
			s.log.Add(d)
		}
		ioctlPtr(listener, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp))
	}()
	return <-decided
}

// lowerCapabilities sets the calling thread's effective capabilities to
// keep, and returns what sets them back (the permitted set stays, so they
// can be raised again).
func lowerCapabilities(keep []int) (restore func() error, err error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var orig, data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &orig[0]); err != nil {
		return nil, fmt.Errorf("capget: %w", err)
	}
	data = orig
	data[0].Effective, data[1].Effective = 0, 0
	for _, c := range keep {
		data[c/32].Effective |= 1 << (c % 32)
	}
	data[0].Effective &= data[0].Permitted
	data[1].Effective &= data[1].Permitted
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return nil, fmt.Errorf("capset: %w", err)
	}
	return func() error {
		h := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		return unix.Capset(&h, &orig[0])
	}, nil
}
