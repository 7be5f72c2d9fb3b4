//go:build linux

package seccomp

import "golang.org/x/sys/unix"

// Set-id bits (DESIGN.md invariant 7: nothing outlives the call with more
// privilege than it had). The owner of a file may set S_ISUID and S_ISGID
// on it without any capability, so a command that runs as root (or as any
// user) could leave a set-id copy of a shell behind for someone else to run
// after the call. The mode is a register of every call that sets one, so
// the filter refuses them race-free:
//
//   - S_ISUID in the mode of chmod, fchmod, fchmodat, fchmodat2, of an open
//     that creates (O_CREAT, O_TMPFILE), of creat and of mknod: always.
//   - S_ISGID in the mode of a call that creates a file: always (mkdir
//     ignores both bits; a directory inherits S_ISGID from its parent by
//     itself).
//   - S_ISGID in the mode of the chmod family: the filter cannot tell a
//     directory (where setgid is ordinary: shared group directories, git's
//     core.sharedRepository, tar -p) from a file. Unsupervised it refuses
//     them all; supervised it hands them to the supervisor, which carries
//     the chmod out itself on the object it opened, with the command's
//     capabilities, for a directory, and refuses it for anything else
//     (enforce/linux/supervisor/notify_setid.go). It never lets the kernel run the call.
//   - openat2, whose mode is behind a pointer the filter cannot read,
//     answers ENOSYS, as a kernel before 5.6 does: callers fall back to
//     openat.
//
// Supervised, every mode row hands the call to the supervisor, which
// refuses all but the setgid chmod of a directory from the same registers
// the filter tested (no memory is read to decide), so that each refusal is
// a denial in the report; without a listener the kernel fails a notified
// call with ENOSYS, so a supervisor that is gone still refuses.

// UnsupervisedSetgid ends the reason of every "denial-reports" downgrade:
// without the supervisor the filter refuses every S_ISGID chmod, which
// directories need too.
const UnsupervisedSetgid = "; setgid directories cannot be made (the filter alone refuses every set-group-ID chmod: it cannot tell a directory from a file)"

// SetidBits are the mode bits a sandboxed call may not set.
const SetidBits = unix.S_ISUID | unix.S_ISGID

// openCreateFlags are the open flags with which the mode register counts:
// the kernel ignores the mode of any other open (build_open_how), so it may
// hold anything. O_TMPFILE includes O_DIRECTORY, which alone is an ordinary
// read of a directory: only its own bit is tested.
const openCreateFlags = unix.O_CREAT | (unix.O_TMPFILE &^ unix.O_DIRECTORY)

// modeCall is a system call that takes a file mode: which argument holds
// it and, for an open, which holds the flags (-1: none, the mode always
// counts). chmod is true for the calls that change an existing object's
// mode rather than create one.
type modeCall struct {
	name  string
	nr    uint32
	mode  int
	flags int
	chmod bool
}

// modeCalls are every call of the native architecture that takes a mode
// a set-id bit can be in, in their native argument order.
func modeCalls() []modeCall {
	return append([]modeCall{
		{name: "openat", nr: unix.SYS_OPENAT, mode: 3, flags: 2},
		{name: "mknodat", nr: unix.SYS_MKNODAT, mode: 2, flags: -1},
		{name: "fchmodat", nr: unix.SYS_FCHMODAT, mode: 2, flags: -1, chmod: true},
		{name: "fchmodat2", nr: unix.SYS_FCHMODAT2, mode: 2, flags: -1, chmod: true},
		{name: "fchmod", nr: unix.SYS_FCHMOD, mode: 1, flags: -1, chmod: true},
	}, legacyModeCalls()...)
}

// setidRules are the rows that keep set-id bits off files, with
// pidfd_getfd and kcmp (setidRules is also where the calls that reach
// into another process's file table live, beside ptrace's rules in
// alwaysRules). sup says whether the refusals are the supervisor's to
// report (see the comment at the top of this file).
func setidRules(sup NotifyScope) []SeccompRule {
	var rules []SeccompRule
	for _, m := range modeCalls() {
		r := SeccompRule{Name: m.name, Nr: m.nr, Errno: unix.EPERM}
		if m.flags >= 0 {
			r.Args = append(r.Args, argAnySet(m.flags, openCreateFlags))
		}
		r.Args = append(r.Args, argAnySet(m.mode, SetidBits))
		if m.chmod {
			r.Reason = "a set-user-ID bit, or a set-group-ID bit on anything but a directory, would outlive the call with its owner's privileges (supervised: setgid directories are made by the supervisor)"
		} else {
			r.Reason = "a file created set-user-ID or set-group-ID would outlive the call with its owner's privileges"
		}
		if sup != NotifyNone {
			r.Action, r.Errno = ActNotify, 0
		}
		rules = append(rules, r)
	}
	return append(rules,
		SeccompRule{Name: "openat2", Nr: unix.SYS_OPENAT2, Errno: unix.ENOSYS,
			Reason: "its mode (and flags) are behind a pointer the filter cannot read, so a set-id bit could not be refused; ENOSYS, as before Linux 5.6, makes callers fall back to openat"},
		SeccompRule{Name: "pidfd_getfd", Nr: unix.SYS_PIDFD_GETFD, Errno: unix.EPERM,
			Reason: "copies another same-uid process's file descriptors (sbx's stage's status pipe, the seccomp listener) without ptrace"},
		SeccompRule{Name: "kcmp", Nr: unix.SYS_KCMP, Errno: unix.EPERM,
			Reason: "compares other processes' file descriptors and memory: nothing inside a call needs it, and it probes what sbx's processes hold"},
	)
}

// SetidMode returns the mode a call of number nr sets, when it is a mode
// call whose mode counts (an open only with O_CREAT or O_TMPFILE), and
// whether it is of the chmod family. arg returns the low 32 bits of an
// argument, as the filter reads them. The call is in its *at form (the
// supervisor's atForm maps creat, mknod and chmod), so the supervisor finds
// the mode in the register the filter tested.
func SetidMode(nr uint32, arg func(i int) uint32) (mode uint32, chmod, ok bool) {
	for _, m := range modeCalls() {
		if m.nr != nr {
			continue
		}
		if m.flags >= 0 && arg(m.flags)&openCreateFlags == 0 {
			return 0, false, false
		}
		return arg(m.mode), m.chmod, true
	}
	return 0, false, false
}
