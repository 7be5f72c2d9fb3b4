//go:build linux

package seccomp

import (
	"fmt"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/report"
)

// SocketPolicy selects which socket families the filter lets through.
type SocketPolicy int

const (
	SocketsAny           SocketPolicy = iota // network on: no family restriction
	SocketsLoopbackNetns                     // network off inside a private network namespace
	SocketsUnixOnly                          // network off without a private namespace
)

func (s SocketPolicy) String() string {
	switch s {
	case SocketsAny:
		return "any"
	case SocketsLoopbackNetns:
		return "loopback-netns"
	case SocketsUnixOnly:
		return "unix-only"
	}
	return fmt.Sprintf("SocketPolicy(%d)", int(s))
}

// RuleAction is what the filter does with a call a rule matches.
type RuleAction int

const (
	// ActErrno fails the call with the rule's Errno without running it.
	ActErrno RuleAction = iota
	// ActNotify hands the call to the supervisor in the sbx parent
	// (SECCOMP_RET_USER_NOTIF), which refuses it with an errno or lets the
	// kernel run it, where Landlock still applies (enforce/linux/supervisor/supervise.go).
	ActNotify
)

// SeccompRule is one row of the filter table, with the reason it exists.
// A rule matches when the syscall number is Nr and every ArgCond holds; the
// filter then returns Errno without running the syscall (ActErrno), or asks
// the supervisor (ActNotify).
type SeccompRule struct {
	Name   string        // syscall name, e.g. "ioctl"
	Nr     uint32        // syscall number on the native arch
	Args   []ArgCond     // all must match (AND); empty = always
	Action RuleAction    // ActErrno unless set
	Errno  syscall.Errno // returned errno (ActErrno only; zero for ActNotify)
	Reason string
}

// NotifyScope is which calls the filter hands to the supervisor
// (SECCOMP_RET_USER_NOTIF). Plan.Supervise, in enforce/linux/plan.go, is whether the
// supervisor must run at all.
type NotifyScope int

const (
	// NotifyNone: the table has ActErrno rules only.
	NotifyNone NotifyScope = iota
	// NotifyWrites: write-intent file-system calls, and connect/bind or inet
	// socket creation when the network is off, go to the supervisor so that
	// what the policy forbids is reported as a denial.
	NotifyWrites
	// NotifyReads is NotifyWrites plus every open, for a policy whose
	// guard hides paths: a read of a hidden path is then reported too. Only
	// such a policy pays for supervised reads: ~30 us per open, 1388 opens
	// for a python script (bench/README.md "real workloads: where the
	// overhead was"). sbx serve's own state directory, masked from every
	// call of the server, does not count (policy.Policy.Unreported): the
	// mask alone keeps it out, and the report names it once.
	NotifyReads
)

func (s NotifyScope) String() string {
	switch s {
	case NotifyWrites:
		return "supervised"
	case NotifyReads:
		return "supervised-reads"
	}
	return "unsupervised"
}

// seccompArch is everything about the native architecture the filter
// depends on. The syscall numbers themselves come from unix.SYS_*, which
// x/sys generates per GOARCH, so the table below is right for whatever arch
// this file is built for as long as nativeSeccompArch names the same arch.
type seccompArch struct {
	name   string
	audit  uint32 // AUDIT_ARCH_* that seccomp_data.arch must equal
	x32Bit uint32 // __X32_SYSCALL_BIT on x86_64, zero elsewhere
}

// nativeSeccompArch is the only place that knows which architectures the
// table supports.
func nativeSeccompArch() (seccompArch, error) {
	switch runtime.GOARCH {
	case "amd64":
		// x32 syscalls arrive with AUDIT_ARCH_X86_64 and nr|0x40000000, so
		// the arch check alone does not catch them.
		return seccompArch{name: "x86_64", audit: unix.AUDIT_ARCH_X86_64, x32Bit: 0x40000000}, nil
	}
	return seccompArch{}, &report.UnsupportedFeatureError{
		Feature: report.FeatureSeccomp,
		Reason:  "no seccomp table for GOARCH=" + runtime.GOARCH,
	}
}

// SeccompRules returns the deny table for a socket policy, in the order the
// filter evaluates it: the first matching rule wins, so a narrower rule must
// come before a broader rule on the same syscall with a different errno.
// An unknown policy gets the SocketsUnixOnly table: it fails closed.
//
// Errno conventions: EPERM for a refused operation, EAFNOSUPPORT for a
// socket family the policy does not offer (so programs fall back the way
// they do on a kernel without that family), and likewise ENOSYS for
// memfd_secret, which a kernel without secretmem answers. MPTCP is refused
// with EPERM before the family checks under every network-off policy.
//
// IMPORTANT: this is a deny list on top of Landlock, not an allow list.
// Syscalls added to the kernel after this table (another mount API, another
// io_uring-like interface) are allowed until they are listed here.
func SeccompRules(s SocketPolicy) []SeccompRule { return SeccompTable(s, NotifyNone) }

// SeccompTable is SeccompRules plus, when supervised, the user-notification
// rules. Every ActErrno rule keeps its place and its priority over the
// notification rules, which come after all of them, with one exception: under
// SocketsUnixOnly, inet and inet6 socket() calls are notified before the
// family rule that would refuse them, so that the refusal is seen. The
// supervisor refuses those with the family rule's EAFNOSUPPORT, always: it
// never lets one through (see enforce/linux/supervisor/supervise.go), and without a listener the
// kernel fails them with ENOSYS. Either way the call is refused.
func SeccompTable(s SocketPolicy, sup NotifyScope) []SeccompRule {
	// The set-id rows come before every notification rule of the same
	// calls: a set-id mode is refused whatever the write rules decide.
	rules := append(alwaysRules(), setidRules(sup)...)
	switch s {
	case SocketsAny:
	case SocketsLoopbackNetns:
		rules = append(rules, mptcpRules()...)
		rules = append(rules, loopbackNetnsSocketRules()...)
		rules = append(rules, socketpairRule())
	default:
		rules = append(rules, mptcpRules()...)
		if sup != NotifyNone {
			rules = append(rules, inetSocketNotifyRules()...)
		}
		rules = append(rules, unixOnlySocketRules()...)
		rules = append(rules, socketpairRule())
	}
	if sup == NotifyNone {
		return rules
	}
	rules = append(rules, writeNotifyRules()...)
	if s != SocketsAny {
		rules = append(rules, netNotifyRules()...)
	}
	if sup == NotifyReads {
		rules = append(rules, readNotifyRules()...)
	}
	return rules
}

func argEq(i int, v uint32) ArgCond     { return ArgCond{Index: i, Op: CmpEq, Value: v} }
func argNe(i int, v uint32) ArgCond     { return ArgCond{Index: i, Op: CmpNe, Value: v} }
func argAnySet(i int, m uint32) ArgCond { return ArgCond{Index: i, Op: CmpAnySet, Mask: m} }

// OpenWriteFlags are the open(2) flags that make an open a write: the
// access modes and the flags that create or truncate. O_TMPFILE needs
// O_WRONLY or O_RDWR, so it is covered; O_APPEND alone opens read-only.
const OpenWriteFlags = unix.O_WRONLY | unix.O_RDWR | unix.O_CREAT | unix.O_TRUNC

// writeNotifyRules send every call that can change a file-system object to
// the supervisor. Each is one the kernel would otherwise check against
// Landlock (or, for chmod and chown, not check at all: see the IMPORTANT
// note in enforce/linux/supervisor/supervise.go). Reads never go there: they are not restricted, so
// supervising them would only cost time.
func writeNotifyRules() []SeccompRule {
	n := func(name string, nr uint32, reason string, args ...ArgCond) SeccompRule {
		return SeccompRule{Name: name, Nr: nr, Args: args, Action: ActNotify, Reason: reason}
	}
	rules := []SeccompRule{
		n("openat", unix.SYS_OPENAT, "open for writing, creating or truncating", argAnySet(2, OpenWriteFlags)),
		// openat2 is not here: setidRules answer it ENOSYS.
		n("mkdirat", unix.SYS_MKDIRAT, "creates a directory"),
		n("mknodat", unix.SYS_MKNODAT, "creates a file, fifo, socket or device node"),
		n("unlinkat", unix.SYS_UNLINKAT, "removes a file or directory"),
		n("renameat", unix.SYS_RENAMEAT, "removes a name and creates another"),
		n("renameat2", unix.SYS_RENAMEAT2, "removes a name and creates another, or exchanges two"),
		n("linkat", unix.SYS_LINKAT, "creates a hard link"),
		n("symlinkat", unix.SYS_SYMLINKAT, "creates a symbolic link"),
		n("truncate", unix.SYS_TRUNCATE, "changes a file's size by path"),
		n("fchmodat", unix.SYS_FCHMODAT, "changes a mode by path"),
		n("fchmodat2", unix.SYS_FCHMODAT2, "changes a mode by path (Linux 6.6)"),
		n("fchmod", unix.SYS_FCHMOD, "changes a mode through a file descriptor"),
		n("fchownat", unix.SYS_FCHOWNAT, "changes an owner by path"),
		n("fchown", unix.SYS_FCHOWN, "changes an owner through a file descriptor"),
		// Under every socket policy: an AF_UNIX bind makes a socket file (a
		// .git where none exists, like mkdir), and the sockaddr is behind a
		// pointer, so every bind goes. With the network off inside a private
		// namespace the supervisor also sees inet binds here (netNotifyRules).
		n("bind", unix.SYS_BIND, "an AF_UNIX bind creates a socket file by path (sockaddrs are behind a pointer, so every bind goes)"),
	}
	return append(rules, legacyWriteNotifyRules(n)...)
}

// readNotifyRules send the opens writeNotifyRules leave out (those without
// write flags: they come after the write rules) to the supervisor, which
// reports those of a path the guard hides (SupervisedReads only).
func readNotifyRules() []SeccompRule {
	n := func(name string, nr uint32, reason string, args ...ArgCond) SeccompRule {
		return SeccompRule{Name: name, Nr: nr, Args: args, Action: ActNotify, Reason: reason}
	}
	const reason = "open for reading: the guard hides paths, and a read of one is a denial"
	return append([]SeccompRule{n("openat", unix.SYS_OPENAT, reason)}, legacyReadNotifyRules(n, reason)...)
}

// netNotifyRules, with the network off, let the supervisor see connect and
// datagrams sent to an address (bind is in writeNotifyRules, under every
// policy, for AF_UNIX socket files): the private namespace would refuse a
// connect or a datagram to the outside anyway (ENETUNREACH), but without a
// record of it; and below Landlock ABI 9 nothing in the kernel keeps a
// pathname unix socket outside the writable roots (a host daemon's,
// ssh-agent's) out of reach, which the supervisor does by carrying the
// call out itself (enforce/linux/supervisor/unixconnect.go). With the network on nothing is
// supervised.
func netNotifyRules() []SeccompRule {
	return []SeccompRule{
		{Name: "connect", Nr: unix.SYS_CONNECT, Action: ActNotify,
			Reason: "network off: a connect outside loopback, or to a unix socket outside the writable roots, is a denial (sockaddrs are behind a pointer, so every connect goes)"},
		// A send without an address (addrlen 0: the common send on a
		// connected socket) is not notified, so it costs nothing.
		{Name: "sendto", Nr: unix.SYS_SENDTO, Action: ActNotify, Args: []ArgCond{argNe(5, 0)},
			Reason: "network off: a datagram to an address outside loopback is a denial"},
		// Every sendmsg and sendmmsg goes, with or without a destination,
		// and the supervisor carries each out itself: msg_name is behind a
		// pointer another thread can fill after any check.
		{Name: "sendmsg", Nr: unix.SYS_SENDMSG, Action: ActNotify,
			Reason: "network off: a datagram to an address outside loopback, or to a unix socket outside the writable roots, is a denial (msg_name is behind a pointer, so every sendmsg goes)"},
		{Name: "sendmmsg", Nr: unix.SYS_SENDMMSG, Action: ActNotify,
			Reason: "network off: as sendmsg, for each message"},
	}
}

// inetSocketNotifyRules come before unixOnlySocketRules' family rule; the
// supervisor always refuses them with EAFNOSUPPORT (see SeccompTable).
func inetSocketNotifyRules() []SeccompRule {
	const reason = "network off without a private namespace: an inet socket is a denial; the supervisor always refuses it with EAFNOSUPPORT"
	return []SeccompRule{
		{Name: "socket", Nr: unix.SYS_SOCKET, Action: ActNotify, Args: []ArgCond{argEq(0, unix.AF_INET)}, Reason: reason},
		{Name: "socket", Nr: unix.SYS_SOCKET, Action: ActNotify, Args: []ArgCond{argEq(0, unix.AF_INET6)}, Reason: reason},
	}
}

// alwaysRules apply under every policy that uses seccomp at all. The
// functions build fresh slices so callers may modify what they get.
func alwaysRules() []SeccompRule {
	const eperm = unix.EPERM
	return []SeccompRule{
		// Terminal input injection. ioctl's cmd is an unsigned int, so the
		// low-32-bit compare also catches TIOCSTI|1<<32.
		{Name: "ioctl", Nr: unix.SYS_IOCTL, Args: []ArgCond{argEq(1, unix.TIOCSTI)}, Errno: eperm,
			Reason: "TIOCSTI: pushes bytes into a terminal's input queue, so a sandboxed command could type into the user's shell (CVE-2017-5226)"},
		{Name: "ioctl", Nr: unix.SYS_IOCTL, Args: []ArgCond{argEq(1, unix.TIOCLINUX)}, Errno: eperm,
			Reason: "TIOCLINUX: pastes the console selection into input on a virtual console, the same injection as TIOCSTI"},

		// Other processes' memory.
		{Name: "ptrace", Nr: unix.SYS_PTRACE, Errno: eperm,
			Reason: "reads and writes memory and registers of same-uid processes; Yama may be off"},
		{Name: "process_vm_readv", Nr: unix.SYS_PROCESS_VM_READV, Errno: eperm,
			Reason: "reads another same-uid process's memory without ptrace"},
		{Name: "process_vm_writev", Nr: unix.SYS_PROCESS_VM_WRITEV, Errno: eperm,
			Reason: "writes another same-uid process's memory without ptrace"},

		// io_uring runs openat, connect, etc. from kernel context without a
		// syscall, so none of the rules in this table would see them.
		{Name: "io_uring_setup", Nr: unix.SYS_IO_URING_SETUP, Errno: eperm,
			Reason: "io_uring operations bypass seccomp, and it is a frequent kernel exploit target"},
		{Name: "io_uring_enter", Nr: unix.SYS_IO_URING_ENTER, Errno: eperm,
			Reason: "io_uring, see io_uring_setup; also covers rings inherited from outside"},
		{Name: "io_uring_register", Nr: unix.SYS_IO_URING_REGISTER, Errno: eperm,
			Reason: "io_uring, see io_uring_setup"},

		// Kernel attack surface with no use inside a sandbox.
		{Name: "bpf", Nr: unix.SYS_BPF, Errno: eperm,
			Reason: "loads programs into the kernel; the verifier is a recurring privilege-escalation source"},
		{Name: "perf_event_open", Nr: unix.SYS_PERF_EVENT_OPEN, Errno: eperm,
			Reason: "kernel and CPU side channels, and a recurring privilege-escalation source"},
		{Name: "userfaultfd", Nr: unix.SYS_USERFAULTFD, Errno: eperm,
			Reason: "stalls kernel page faults on user memory, the standard primitive for winning kernel races"},

		// Whole-system operations. They need capabilities a sandboxed
		// command should not have, but the caller may be root.
		{Name: "kexec_load", Nr: unix.SYS_KEXEC_LOAD, Errno: eperm,
			Reason: "replaces the running kernel"},
		{Name: "kexec_file_load", Nr: unix.SYS_KEXEC_FILE_LOAD, Errno: eperm,
			Reason: "replaces the running kernel"},
		{Name: "init_module", Nr: unix.SYS_INIT_MODULE, Errno: eperm,
			Reason: "loads kernel code"},
		{Name: "finit_module", Nr: unix.SYS_FINIT_MODULE, Errno: eperm,
			Reason: "loads kernel code from a file descriptor"},
		{Name: "delete_module", Nr: unix.SYS_DELETE_MODULE, Errno: eperm,
			Reason: "unloads kernel code other processes rely on"},
		{Name: "reboot", Nr: unix.SYS_REBOOT, Errno: eperm,
			Reason: "reboots the host, or kills the pid namespace's init"},
		{Name: "swapon", Nr: unix.SYS_SWAPON, Errno: eperm,
			Reason: "swapping to a file the sandbox can read exposes other processes' memory"},
		{Name: "swapoff", Nr: unix.SYS_SWAPOFF, Errno: eperm,
			Reason: "changes host memory configuration"},
		{Name: "acct", Nr: unix.SYS_ACCT, Errno: eperm,
			Reason: "writes accounting records of every process on the host to a chosen file"},

		// The mount table is set up by the launcher before the filter; inside
		// a user namespace these would let the command undo read-only binds.
		{Name: "mount", Nr: unix.SYS_MOUNT, Errno: eperm,
			Reason: "could remount read-only binds read-write or cover protected paths"},
		{Name: "umount2", Nr: unix.SYS_UMOUNT2, Errno: eperm,
			Reason: "could uncover paths hidden by the sandbox's mounts"},
		{Name: "pivot_root", Nr: unix.SYS_PIVOT_ROOT, Errno: eperm,
			Reason: "changes the root of the mount namespace"},
		{Name: "move_mount", Nr: unix.SYS_MOVE_MOUNT, Errno: eperm,
			Reason: "new mount API (Linux 5.2): same power as mount"},
		{Name: "open_tree", Nr: unix.SYS_OPEN_TREE, Errno: eperm,
			Reason: "new mount API: clones mount trees for move_mount"},
		{Name: "open_tree_attr", Nr: unix.SYS_OPEN_TREE_ATTR, Errno: eperm,
			Reason: "new mount API (Linux 6.15): open_tree plus mount_setattr"},
		{Name: "fsopen", Nr: unix.SYS_FSOPEN, Errno: eperm,
			Reason: "new mount API: creates a filesystem context"},
		{Name: "fsconfig", Nr: unix.SYS_FSCONFIG, Errno: eperm,
			Reason: "new mount API: configures a filesystem context, a past overflow site (CVE-2022-0185)"},
		{Name: "fsmount", Nr: unix.SYS_FSMOUNT, Errno: eperm,
			Reason: "new mount API: turns a filesystem context into a mount"},
		{Name: "fspick", Nr: unix.SYS_FSPICK, Errno: eperm,
			Reason: "new mount API: reconfigures an existing mount"},
		{Name: "mount_setattr", Nr: unix.SYS_MOUNT_SETATTR, Errno: eperm,
			Reason: "could clear MOUNT_ATTR_RDONLY on the sandbox's read-only binds"},
		// A command running as root keeps CAP_SYS_ADMIN; without Landlock's
		// ptrace scoping (kernels before 5.13) /proc/PID/ns/* of any host
		// process is open to it.
		{Name: "setns", Nr: unix.SYS_SETNS, Errno: eperm,
			Reason: "joins another process's network or mount namespace, out of the sandbox's"},
		// The supervisor resolves paths as the task's root names them, from
		// sbx's view; a task with its own root (or a deleted one: /proc/T/root
		// then reads "(deleted)") makes them mean other files. Unprivileged
		// after unshare(CLONE_NEWUSER), which the filter allows. EPERM is the
		// kernel's own answer without CAP_SYS_CHROOT, which programs (fakeroot
		// build tools, debootstrap checks) already handle.
		{Name: "chroot", Nr: unix.SYS_CHROOT, Errno: eperm,
			Reason: "a root of the task's own makes the paths the supervisor resolves name other files (invariant 1: it could not tell)"},

		// Memory no other process can read: process_vm_readv fails on it, so
		// a path placed there is invisible to the supervisor. ENOSYS, not
		// EPERM: it is what a kernel without secretmem (or booted without
		// secretmem.enable) answers, so programs that use it when they can
		// (key stores) take the fallback they already have.
		{Name: "memfd_secret", Nr: unix.SYS_MEMFD_SECRET, Errno: unix.ENOSYS,
			Reason: "secret memory is unreadable to process_vm_readv: a path placed there is one the supervisor cannot see"},

		// Kernel keyrings are not namespaced.
		{Name: "add_key", Nr: unix.SYS_ADD_KEY, Errno: eperm,
			Reason: "keyrings are shared with the user's session outside the sandbox"},
		{Name: "request_key", Nr: unix.SYS_REQUEST_KEY, Errno: eperm,
			Reason: "reads keys (Kerberos tickets, fscrypt keys) from the user's keyrings"},
		{Name: "keyctl", Nr: unix.SYS_KEYCTL, Errno: eperm,
			Reason: "reads and changes the user's keyrings; a recurring exploit target"},
	}
}

// mptcpRules come before the family checks so an MPTCP socket gets the same
// EPERM whichever network-off policy is active.
func mptcpRules() []SeccompRule {
	const reason = "MPTCP: Landlock's TCP bind/connect rules do not cover IPPROTO_MPTCP sockets"
	return []SeccompRule{
		{Name: "socket", Nr: unix.SYS_SOCKET, Errno: unix.EPERM, Reason: reason,
			Args: []ArgCond{argEq(0, unix.AF_INET), argEq(2, unix.IPPROTO_MPTCP)}},
		{Name: "socket", Nr: unix.SYS_SOCKET, Errno: unix.EPERM, Reason: reason,
			Args: []ArgCond{argEq(0, unix.AF_INET6), argEq(2, unix.IPPROTO_MPTCP)}},
	}
}

// loopbackNetnsSocketRules leave inet sockets alone because the private
// network namespace has only lo; the families they refuse either leave the
// namespace or are kernel code nobody in the sandbox needs.
func loopbackNetnsSocketRules() []SeccompRule {
	return []SeccompRule{
		// Disjoint from the family rule below (which lets AF_NETLINK
		// through), so their order does not matter; MPTCP's does.
		{Name: "socket", Nr: unix.SYS_SOCKET, Errno: unix.EAFNOSUPPORT,
			Args:   []ArgCond{argEq(0, unix.AF_NETLINK), argNe(2, unix.NETLINK_ROUTE)},
			Reason: "netlink other than NETLINK_ROUTE (audit, uevent, xfrm, netfilter) is host-wide or attack surface; getaddrinfo and ip need only route"},
		{Name: "socket", Nr: unix.SYS_SOCKET, Errno: unix.EAFNOSUPPORT,
			Args: []ArgCond{
				argNe(0, unix.AF_UNIX), argNe(0, unix.AF_INET), argNe(0, unix.AF_INET6), argNe(0, unix.AF_NETLINK),
			},
			Reason: "families other than unix, inet, inet6, netlink: AF_VSOCK reaches the hypervisor host from any namespace, AF_PACKET and the rest are unneeded kernel code"},
	}
}

// unixOnlySocketRules are for network off without a network namespace,
// where any inet socket would reach the real network.
//
// IMPORTANT: seccomp cannot see sockaddrs (they are behind a pointer), so
// abstract AF_UNIX sockets of host services stay reachable here; that is
// Landlock's abstract-unix scope to close, where the kernel has it.
func unixOnlySocketRules() []SeccompRule {
	return []SeccompRule{
		{Name: "socket", Nr: unix.SYS_SOCKET, Errno: unix.EAFNOSUPPORT,
			Args:   []ArgCond{argNe(0, unix.AF_UNIX)},
			Reason: "network off without a private network namespace: only AF_UNIX"},
	}
}

// socketpairRule exists because AF_UNIX is not the only family with
// socketpair: AF_TIPC has one since Linux 4.12, and asking for it makes the
// kernel autoload the tipc module.
func socketpairRule() SeccompRule {
	return SeccompRule{Name: "socketpair", Nr: unix.SYS_SOCKETPAIR, Errno: unix.EAFNOSUPPORT,
		Args:   []ArgCond{argNe(0, unix.AF_UNIX)},
		Reason: "only AF_UNIX pairs; AF_TIPC would autoload a network protocol module"}
}

// DescribeSeccomp renders the whole program a rule table compiles to,
// including the fixed architecture checks and the default, one line each.
func DescribeSeccomp(rules []SeccompRule) string {
	var b strings.Builder
	arch, err := nativeSeccompArch()
	if err != nil {
		fmt.Fprintf(&b, "unsupported: %v\n", err)
		return b.String()
	}
	fmt.Fprintf(&b, "arch!=%s -> KILL_PROCESS  # a foreign syscall ABI (i386 int 0x80) would make every number below mean another syscall\n", arch.name)
	if arch.x32Bit != 0 {
		fmt.Fprintf(&b, "nr&%#x -> KILL_PROCESS  # x32 ABI, same evasion as a foreign arch\n", arch.x32Bit)
	}
	for _, r := range rules {
		b.WriteString(r.String())
		b.WriteByte('\n')
	}
	b.WriteString("default -> ALLOW\n")
	return b.String()
}
