//go:build linux

package supervisor

import (
	"fmt"
	"strconv"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/policy/denial"
	"github.com/sbx-sandbox/sbx/internal/report"
	"github.com/sbx-sandbox/sbx/internal/steptrace"
)

// The seccomp supervisor. The filter hands write-intent calls (and, with the
// network off, connect and bind) to a goroutine in the sbx parent through a
// user-notification listener. For each call it reads the path or address
// from the caller's memory, resolves it the way the kernel would, asks the
// denial package whether the policy forbids it, and answers:
//
//   - forbidden: fail the call with the errno the kernel rules would give
//     (EACCES for Landlock, EROFS for a read-only mount, ...) and record a
//     denial, with the path, the pid and the syscall;
//   - anything else: SECCOMP_USER_NOTIF_FLAG_CONTINUE, which makes the kernel
//     run the call as if nothing had intercepted it, Landlock and the mounts
//     included.
//
// IMPORTANT: the path is read from the caller's memory and resolved before
// the kernel looks it up, so another thread of the caller can change the
// string, a symlink or a directory in between (the usual TOCTOU of seccomp
// user notification). That is why the supervisor only ever refuses: a
// CONTINUE lets the kernel decide, with Landlock still the enforcer, so a
// racing thread can at most turn a refusal the supervisor would have made
// into whatever Landlock says, and a refusal is always safe. The exception
// is what Landlock cannot express, where the supervisor's refusal is the only
// check, and best effort: creating a carve-out that does not exist yet (a
// missing .git), writing a carve-out that could not be mounted read-only,
// and chmod/chown outside the writable roots (Landlock has no right for
// them).
//
// Where the supervisor cannot see (the path is in memory process_vm_readv
// cannot read, an fd, the cwd or the root reads "(deleted)" or cannot be
// read, a name of a deleted file that still has others), it fails closed:
// the call is refused with EACCES and a denial of confidence "inferred"
// that says what it could not see. What continues unseen is only what fails
// by itself (ENOENT or ENOTDIR on the way), what has no name in any
// directory (a pipe, an O_TMPFILE), and what a kernel wall decides alone: a
// read of a masked path, and the network inside a private namespace.
//
// The supervisor refuses only what the policy forbids and what would
// otherwise have succeeded as far as ordinary permissions go: a call the
// kernel would fail anyway (ENOENT, EEXIST, EISDIR, a read-only file
// system, DAC permissions) continues and is not a denial.

// seccompNotif mirrors struct seccomp_notif (include/uapi/linux/seccomp.h).
type seccompNotif struct {
	ID    uint64
	PID   uint32
	Flags uint32
	Data  struct {
		Nr   int32
		Arch uint32
		IP   uint64
		Args [6]uint64
	}
}

// seccompNotifResp mirrors struct seccomp_notif_resp.
type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

func ioctlPtr(fd int, req uint, p unsafe.Pointer) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(p))
	if errno != 0 {
		return errno
	}
	return nil
}

// The source and confidences of the denials the supervisor records:
// Observed when it read the call's path or address and the policy forbids
// it; Inferred when it refused a call it could not see through (see
// supervisor.blind), or let a call continue and infers what it will meet
// (a datagram to a host loopback port: see hostlisten.go).
const (
	SupervisorSource = "seccomp-supervisor"
	Observed         = report.ConfidenceObserved
	Inferred         = report.ConfidenceInferred
)

// Result is what the supervisor saw during one call.
type Result struct {
	Denials []report.Denial
	// Dropped counts occurrences of denials past the cap.
	Dropped int
	// Downgrades has a "denial-reports" entry when supervision was planned
	// but could not be set up at launch.
	Downgrades []report.Downgrade
	// Notified counts the notifications the supervisor received, allowed
	// or refused: each one is a round trip of the command's thread through
	// sbx's process, the cost the filter's notify rules are kept narrow
	// for (a plain read-only open must never be one; see
	// TestSupervisorReadsNotNotified).
	Notified int
}

// Supervisor answers one call's notifications. Create it with New, hand
// it the listener with Attach (or Receive), and end it with Finish.
type Supervisor struct {
	in    Input // what it knows of the plan, and all it knows
	check *denial.Checker
	log   *denial.Log
	euid  int
	roots map[DevIno]bool // write roots by inode, see confirmOutside

	stop int // eventfd: ask asks run to end; -1 once finish closed it (under mu)
	done chan struct{}

	// attached: attach or receive has run, so done will be closed.
	attached bool

	// notified counts notifications by syscall number; only run's
	// goroutine writes it, and finish reads it after done.
	notified map[int32]int

	mu        sync.Mutex
	downgrade *report.Downgrade
}

// DevIno names an inode: a write root's, or a masked file's (MaskedInodes).
type DevIno struct{ Dev, Ino uint64 }

// New makes a supervisor that knows in and nothing else.
func New(in Input) (*Supervisor, error) {
	stop, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("supervisor: eventfd: %w", err)
	}
	s := &Supervisor{
		in:    in,
		check: denial.NewChecker(in.Policy, denial.Extra{Devices: in.Devices}),
		log:   denial.NewLog(denial.DefaultCap),
		euid:  unix.Geteuid(),
		roots: map[DevIno]bool{},
		stop:  stop,
		done:  make(chan struct{}),
	}
	for _, r := range in.Policy.WriteRoots {
		var st unix.Stat_t
		if unix.Stat(r, &st) == nil {
			s.roots[DevIno{st.Dev, st.Ino}] = true
		}
	}
	return s, nil
}

// start runs the supervisor on listener, which it then owns.
func (s *Supervisor) start(listener int) {
	go func() {
		defer close(s.done)
		s.run(listener)
		unix.Close(listener)
	}()
}

// unavailable records that no listener could be had, and why.
func (s *Supervisor) unavailable(reason string) {
	s.mu.Lock()
	s.downgrade = &report.Downgrade{Feature: report.FeatureDenialReports, Reason: reason}
	s.mu.Unlock()
}

// Finish ends supervision after the command has ended: it answers what is
// still pending, closes the listener (a survivor's next supervised call
// then fails with ENOSYS) and returns what was seen.
func (s *Supervisor) Finish() Result {
	s.Ask()
	<-s.done
	s.mu.Lock()
	unix.Close(s.stop)
	s.stop = -1
	s.mu.Unlock()
	var res Result
	res.Denials, res.Dropped = s.log.Denials()
	for nr, n := range s.notified {
		res.Notified += n
		steptrace.Count("supervisor: notified "+notifiedName(nr), n)
	}
	s.mu.Lock()
	if s.downgrade != nil {
		res.Downgrades = append(res.Downgrades, *s.downgrade)
	}
	s.mu.Unlock()
	return res
}

// Ask asks run to end, without waiting: Process.Wait asks once the
// command is gone and what is left of its tree is about to be killed, so
// that the supervisor's thread wakes and ends beside that (a wake-up of
// ~0.1 ms here, on the call's path when finish asked alone).
func (s *Supervisor) Ask() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop >= 0 {
		var one = [8]byte{1}
		unix.Write(s.stop, one[:])
	}
}

// run answers notifications until the stop eventfd fires or no task uses
// the filter any more (POLLHUP).
func (s *Supervisor) run(listener int) {
	syncWakeUp(listener)
	fds := []unix.PollFd{{Fd: int32(listener), Events: unix.POLLIN}, {Fd: int32(s.stop), Events: unix.POLLIN}}
	for {
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := unix.Poll(fds, -1); err != nil {
			if err == unix.EINTR {
				continue
			}
			return
		}
		if fds[0].Revents&unix.POLLIN != 0 {
			s.answerOne(listener)
			continue
		}
		if fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 {
			return
		}
		if fds[1].Revents&unix.POLLIN != 0 {
			s.drain(listener)
			return
		}
	}
}

// seccompIoctlNotifSetFlags is SECCOMP_IOCTL_NOTIF_SET_FLAGS,
// _IOW('!', 4, __u64) (Linux 6.6), which x/sys does not name.
const seccompIoctlNotifSetFlags = 0x40082104

// syncWakeUp asks the kernel (Linux 6.6) to wake the supervisor on the
// notifying task's CPU and that task on the supervisor's when the answer
// comes back (SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP): the task is blocked for
// the whole round trip, so the two take turns on one CPU instead of waking
// each other across CPUs. Only a hint to the scheduler: where the kernel
// lacks it (EINVAL) nothing changes.
func syncWakeUp(listener int) {
	unix.Syscall(unix.SYS_IOCTL, uintptr(listener), seccompIoctlNotifSetFlags, unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP)
}

// drain answers the notifications already pending, without waiting.
func (s *Supervisor) drain(listener int) {
	fds := []unix.PollFd{{Fd: int32(listener), Events: unix.POLLIN}}
	for {
		fds[0].Revents = 0
		n, err := unix.Poll(fds, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 || fds[0].Revents&unix.POLLIN == 0 {
			return
		}
		s.answerOne(listener)
	}
}

// answerOne receives one notification, decides and answers it.
func (s *Supervisor) answerOne(listener int) {
	var n seccompNotif
	if err := ioctlPtr(listener, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(&n)); err != nil {
		// EINTR, or ENOENT: the caller was killed or interrupted by a
		// signal after the poll; it will call again if it still wants to.
		return
	}
	if s.notified == nil {
		s.notified = map[int32]int{}
	}
	s.notified[n.Data.Nr]++
	d := s.decide(&n)
	resp := seccompNotifResp{ID: n.ID}
	if d.op != nil {
		// Only if the notification is still live are the fds taken from
		// the task the right task's.
		id := n.ID
		dup, err := unix.FcntlInt(uintptr(listener), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil || ioctlPtr(listener, unix.SECCOMP_IOCTL_NOTIF_ID_VALID, unsafe.Pointer(&id)) != nil {
			if err == nil {
				unix.Close(dup)
			}
			d.op.close()
			return
		}
		// On a goroutine of its own: a connect or send can block until
		// another process of the command acts, whose supervised calls
		// must still be answered meanwhile.
		out := s.runPerformed(dup, n.ID, d.op)
		if out == nil {
			return
		}
		unix.Close(dup)
		d = decision{errno: out.errno, denials: out.denials}
		if out.cont {
			d = decision{}
		}
	}
	if d.errno != 0 || len(d.denials) > 0 {
		// The path was read from the caller's memory and /proc: only if the
		// notification is still live were those reads of the right task
		// (its pid cannot have been reused in between).
		id := n.ID
		if ioctlPtr(listener, unix.SECCOMP_IOCTL_NOTIF_ID_VALID, unsafe.Pointer(&id)) != nil {
			return
		}
	}
	if d.errno == 0 {
		resp.Flags = unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE
	} else {
		resp.Error = -int32(d.errno)
	}
	if err := ioctlPtr(listener, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp)); err != nil {
		// ENOENT: the caller is gone; it was not refused.
		return
	}
	for _, den := range d.denials {
		s.log.Add(den)
	}
}

// notifiedName names a notified syscall number for the trace.
func notifiedName(nr int32) string {
	if c, ok := atForm(uint32(nr), [6]uint64{}); ok {
		return c.name
	}
	return "syscall " + strconv.Itoa(int(nr))
}

// decision is the answer to one notification: errno 0 continues. The
// denials are recorded once the answer has been delivered; a call that
// continues has some only when what hides the object is a mount (a read of
// a masked path, see supervisor.read).
type decision struct {
	errno   syscall.Errno
	denials []report.Denial
	// op, when set, is carried out by the supervisor and answers the
	// notification with its own result (unixconnect.go).
	op *performed
}

var cont = decision{}

func (s *Supervisor) refuse(errno syscall.Errno, d report.Denial) decision {
	return s.refuseAll(decision{errno: errno, denials: []report.Denial{d}})
}

// Listener is the outcome of loading a plan's filter (enforce/linux's
// loadFilter): the listener fd (-1 when there is none) and, when
// supervision was planned but is not possible, why.
type Listener struct {
	FD          int
	Unavailable string
}

// Attach gives the supervisor what enforce/linux's loadFilter produced on the launcher
// thread.
func (s *Supervisor) Attach(l Listener) {
	s.attached = true
	if l.FD >= 0 {
		s.start(l.FD)
		return
	}
	if l.Unavailable != "" {
		s.unavailable(l.Unavailable)
	}
	close(s.done)
}

// Release ends a supervisor whose command never started.
func (s *Supervisor) Release() {
	if s.attached {
		s.Finish()
		return
	}
	unix.Close(s.stop)
}

// SendListener tells the parent, over the unix socket sock, the number of
// the stage's listener fd, or why there is none, and waits for the parent
// to have taken it (pidfd_getfd: the stage is its child, same uid) before
// the stage execs the command. It uses write and read, which the filter
// does not hand to the supervisor: a sendmsg carrying the listener would
// wait for the very supervisor it is handing the listener to.
func SendListener(sock int, l Listener) error {
	if l.FD < 0 {
		_, err := unix.Write(sock, []byte("N"+l.Unavailable))
		return err
	}
	if _, err := unix.Write(sock, []byte("L"+strconv.Itoa(l.FD))); err != nil {
		return fmt.Errorf("send seccomp listener: %w", err)
	}
	var ack [1]byte
	for {
		n, err := unix.Read(sock, ack[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil || n != 1 || ack[0] != 'A' {
			return fmt.Errorf("send seccomp listener: the parent did not take it (%v)", err)
		}
		return nil
	}
}

// Receive takes the stage's listener (see SendListener) and runs on it;
// sock it closes. A stage that ends before sending one reports its own
// error.
func (s *Supervisor) Receive(sock int, stagePid int) {
	s.attached = true
	go func() {
		defer close(s.done)
		fd, ok := s.awaitListener(sock, stagePid)
		unix.Close(sock)
		if !ok {
			return
		}
		s.run(fd)
		unix.Close(fd)
	}()
}

func (s *Supervisor) awaitListener(sock int, stagePid int) (int, bool) {
	fds := []unix.PollFd{{Fd: int32(sock), Events: unix.POLLIN}, {Fd: int32(s.stop), Events: unix.POLLIN}}
	for {
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := unix.Poll(fds, -1); err != nil {
			if err == unix.EINTR {
				continue
			}
			return -1, false
		}
		if fds[0].Revents != 0 {
			break
		}
		if fds[1].Revents != 0 {
			return -1, false
		}
	}
	buf := make([]byte, 1024)
	n, err := unix.Read(sock, buf)
	if err != nil || n == 0 {
		return -1, false
	}
	if buf[0] != 'L' {
		s.unavailable(string(buf[1:n]))
		return -1, false
	}
	num, err := strconv.Atoi(string(buf[1:n]))
	if err != nil {
		return -1, false
	}
	// The stage waits for the ack, so its fd is still the listener; a
	// failure leaves it without one, and it refuses to run the command.
	fd, err := takeStageFD(stagePid, num)
	if err != nil {
		s.unavailable("no seccomp listener: " + err.Error())
		return -1, false
	}
	if _, err := unix.Write(sock, []byte("A")); err != nil {
		unix.Close(fd)
		return -1, false
	}
	return fd, true
}

// takeStageFD copies fd num of the stage pid (sbx's child) into sbx,
// close-on-exec.
func takeStageFD(pid, num int) (int, error) {
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return -1, fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	defer unix.Close(pidfd)
	fd, err := unix.PidfdGetfd(pidfd, num, 0)
	if err != nil {
		return -1, fmt.Errorf("pidfd_getfd %d of the stage: %w", num, err)
	}
	return fd, nil
}
