//go:build linux && amd64

package seccomp

import (
	"errors"
	"os"
	"os/exec"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

var allSocketPolicies = []SocketPolicy{SocketsAny, SocketsLoopbackNetns, SocketsUnixOnly}

// seccompTableID names one compiled table: a socket policy, supervised or not.
type seccompTableID struct {
	policy SocketPolicy
	sup    NotifyScope
}

func (id seccompTableID) String() string { return id.policy.String() + "/" + id.sup.String() }

func (id seccompTableID) rules() []SeccompRule { return SeccompTable(id.policy, id.sup) }

var allSeccompTables = func() []seccompTableID {
	var out []seccompTableID
	for _, sup := range []NotifyScope{NotifyNone, NotifyWrites} {
		for _, p := range allSocketPolicies {
			out = append(out, seccompTableID{p, sup})
		}
	}
	return out
}()

// firstMatch is the table's meaning in plain Go, independent of the
// compiler: the index of the first rule matching d, or -1.
func firstMatch(rules []SeccompRule, d seccompData) int {
	for i, r := range rules {
		if uint32(d.Nr) == r.Nr && condsHold(r.Args, d) {
			return i
		}
	}
	return -1
}

func condsHold(conds []ArgCond, d seccompData) bool {
	for _, c := range conds {
		v := uint32(d.Args[c.Index])
		var ok bool
		switch c.Op {
		case CmpEq:
			ok = v == c.Value
		case CmpNe:
			ok = v != c.Value
		case CmpMaskedEq:
			ok = v&c.Mask == c.Value
		case CmpAnySet:
			ok = v&c.Mask != 0
		}
		if !ok {
			return false
		}
	}
	return true
}

// foreignRetT is what the filter returns for a foreign ABI's syscall: the
// supervisor's, when the table notifies it of anything.
func foreignRetT(rules []SeccompRule) uint32 {
	for _, r := range rules {
		if r.Action == ActNotify {
			return retNotifyT
		}
	}
	return retKillT
}

// referenceRet is what the whole filter should return for d.
func referenceRet(rules []SeccompRule, d seccompData) uint32 {
	if d.Arch != unix.AUDIT_ARCH_X86_64 || uint32(d.Nr)&0x40000000 != 0 {
		return foreignRetT(rules)
	}
	if i := firstMatch(rules, d); i >= 0 {
		return wantRet(rules[i])
	}
	return retAllowT
}

// wantRet is what a matching rule makes the filter return, written apart
// from the compiler's SeccompRule.ret.
func wantRet(r SeccompRule) uint32 {
	if r.Action == ActNotify {
		return retNotifyT
	}
	return retErrno(r.Errno)
}

// matchingData synthesises a seccomp_data that satisfies every condition of
// r, with junk in the high words to prove only the low words count.
func matchingData(t *testing.T, r SeccompRule) seccompData {
	t.Helper()
	d := x86(r.Nr)
	for i := range d.Args {
		d.Args[i] = 0xa5a5a5a5_00000000
	}
	for i := range d.Args {
		var conds, candidates []uint32
		for _, c := range r.Args {
			if c.Index != i {
				continue
			}
			conds = append(conds, c.Value)
			switch c.Op {
			case CmpAnySet:
				candidates = append(candidates, c.Mask)
			case CmpNe:
			default:
				candidates = append(candidates, c.Value)
			}
		}
		if len(conds) == 0 {
			continue
		}
		for v := uint32(0xdead0000); v < 0xdead0000+64; v++ {
			candidates = append(candidates, v)
		}
		found := false
		for _, v := range candidates {
			d.Args[i] = d.Args[i]&^0xffffffff | uint64(v)
			if condsHoldAt(r.Args, i, d) {
				found = true
				break
			}
		}
		if !found {
			t.Fatalf("cannot satisfy the conditions of %s on arg%d", r, i)
		}
	}
	return d
}

func condsHoldAt(conds []ArgCond, i int, d seccompData) bool {
	var at []ArgCond
	for _, c := range conds {
		if c.Index == i {
			at = append(at, c)
		}
	}
	return condsHold(at, d)
}

type seccompCase struct {
	name  string
	table seccompTableID
	data  seccompData
	want  uint32
}

// seccompCases is written from the issue, not from the table, so dropping or
// weakening a rule in seccomp.go fails here.
func seccompCases() []seccompCase {
	const hi = 1 << 32
	eperm, eafno := retErrno(unix.EPERM), retErrno(unix.EAFNOSUPPORT)
	var cases []seccompCase
	// add states a case for both the unsupervised and the supervised table:
	// the notification rules never change what an ERRNO rule decides.
	// Its few exceptions are overridden in supervisedCases.
	add := func(p SocketPolicy, name string, d seccompData, want uint32) {
		for _, sup := range []NotifyScope{NotifyNone, NotifyWrites} {
			cases = append(cases, seccompCase{name: name, table: seccompTableID{p, sup}, data: d, want: want})
		}
	}
	// addForeign states a foreign ABI's syscall: killed without a
	// supervisor, sent to it (which refuses and names it) with one.
	addForeign := func(p SocketPolicy, name string, d seccompData) {
		cases = append(cases, seccompCase{name: name, table: seccompTableID{p, NotifyNone}, data: d, want: retKillT},
			seccompCase{name: name, table: seccompTableID{p, NotifyWrites}, data: d, want: retNotifyT})
	}
	denied := []struct {
		name string
		nr   uint32
	}{
		{"ptrace", unix.SYS_PTRACE}, {"process_vm_readv", unix.SYS_PROCESS_VM_READV},
		{"process_vm_writev", unix.SYS_PROCESS_VM_WRITEV},
		{"io_uring_setup", unix.SYS_IO_URING_SETUP}, {"io_uring_enter", unix.SYS_IO_URING_ENTER},
		{"io_uring_register", unix.SYS_IO_URING_REGISTER},
		{"bpf", unix.SYS_BPF}, {"perf_event_open", unix.SYS_PERF_EVENT_OPEN}, {"userfaultfd", unix.SYS_USERFAULTFD},
		{"kexec_load", unix.SYS_KEXEC_LOAD}, {"kexec_file_load", unix.SYS_KEXEC_FILE_LOAD},
		{"init_module", unix.SYS_INIT_MODULE}, {"finit_module", unix.SYS_FINIT_MODULE},
		{"delete_module", unix.SYS_DELETE_MODULE}, {"reboot", unix.SYS_REBOOT},
		{"swapon", unix.SYS_SWAPON}, {"swapoff", unix.SYS_SWAPOFF}, {"acct", unix.SYS_ACCT},
		{"mount", unix.SYS_MOUNT}, {"umount2", unix.SYS_UMOUNT2}, {"pivot_root", unix.SYS_PIVOT_ROOT},
		{"move_mount", unix.SYS_MOVE_MOUNT}, {"open_tree", unix.SYS_OPEN_TREE},
		{"open_tree_attr", unix.SYS_OPEN_TREE_ATTR}, {"fsopen", unix.SYS_FSOPEN},
		{"fsconfig", unix.SYS_FSCONFIG}, {"fsmount", unix.SYS_FSMOUNT}, {"fspick", unix.SYS_FSPICK},
		{"mount_setattr", unix.SYS_MOUNT_SETATTR}, {"setns", unix.SYS_SETNS},
		{"add_key", unix.SYS_ADD_KEY}, {"request_key", unix.SYS_REQUEST_KEY}, {"keyctl", unix.SYS_KEYCTL},
		// A root of the task's own, or a deleted one, is a path the
		// supervisor cannot resolve (invariant 1).
		{"chroot", unix.SYS_CHROOT},
	}
	allowed := []struct {
		name string
		nr   uint32
	}{
		{"read", unix.SYS_READ}, {"write", unix.SYS_WRITE}, {"open", unix.SYS_OPEN}, {"openat", unix.SYS_OPENAT},
		{"close", unix.SYS_CLOSE}, {"clone", unix.SYS_CLONE}, {"clone3", unix.SYS_CLONE3},
		{"execve", unix.SYS_EXECVE}, {"mmap", unix.SYS_MMAP}, {"getpid", unix.SYS_GETPID},
		{"prctl", unix.SYS_PRCTL}, {"seccomp (stacking only narrows)", unix.SYS_SECCOMP},
		{"statmount (read-only)", unix.SYS_STATMOUNT}, {"listmount (read-only)", unix.SYS_LISTMOUNT},
	}
	for _, p := range allSocketPolicies {
		for _, s := range denied {
			add(p, s.name, x86(s.nr), eperm)
			add(p, s.name+" with args", x86(s.nr, ^uint64(0), 1, 2, 3, 4, 5), eperm)
		}
		for _, s := range allowed {
			add(p, s.name, x86(s.nr), retAllowT)
		}

		add(p, "ioctl TIOCSTI", x86(unix.SYS_IOCTL, 0, unix.TIOCSTI), eperm)
		add(p, "ioctl TIOCSTI|1<<32", x86(unix.SYS_IOCTL, 0, hi|unix.TIOCSTI), eperm)
		add(p, "ioctl TIOCLINUX", x86(unix.SYS_IOCTL, 3, unix.TIOCLINUX), eperm)
		add(p, "ioctl TIOCLINUX|high bits", x86(unix.SYS_IOCTL, 3, 0xffffffff<<32|unix.TIOCLINUX), eperm)
		add(p, "ioctl TCGETS", x86(unix.SYS_IOCTL, 0, unix.TCGETS), retAllowT)
		add(p, "ioctl TIOCGWINSZ", x86(unix.SYS_IOCTL, 0, unix.TIOCGWINSZ), retAllowT)
		add(p, "ioctl TIOCSTI in arg2, not cmd", x86(unix.SYS_IOCTL, unix.TIOCSTI, unix.TCGETS, unix.TIOCSTI), retAllowT)
		add(p, "ioctl 0x15412 is not TIOCSTI", x86(unix.SYS_IOCTL, 0, 0x10000|unix.TIOCSTI), retAllowT)

		addForeign(p, "i386 ioctl (int 0x80)", seccompData{Nr: 54, Arch: unix.AUDIT_ARCH_I386, Args: [6]uint64{0, unix.TIOCSTI}})
		addForeign(p, "i386 with an allowed number", seccompData{Nr: unix.SYS_READ, Arch: unix.AUDIT_ARCH_I386})
		addForeign(p, "aarch64 arch", seccompData{Nr: unix.SYS_READ, Arch: unix.AUDIT_ARCH_AARCH64})
		addForeign(p, "x32 ioctl", x86(0x40000000|514, 0, unix.TIOCSTI))
		addForeign(p, "x32 getpid", x86(0x40000000|unix.SYS_GETPID))
		// nr -1 (the "skip this syscall" value ptracers use) has the x32
		// bit too; nothing issues it on purpose.
		addForeign(p, "nr -1", seccompData{Nr: -1, Arch: unix.AUDIT_ARCH_X86_64})

		// Secret memory hides a path from the supervisor; ENOSYS is what a
		// kernel without secretmem says, so programs take their fallback.
		add(p, "memfd_secret", x86(unix.SYS_MEMFD_SECRET), retErrno(unix.ENOSYS))
		add(p, "memfd_secret with args", x86(unix.SYS_MEMFD_SECRET, unix.O_CLOEXEC, 1<<32), retErrno(unix.ENOSYS))
		add(p, "memfd_create (readable memory)", x86(unix.SYS_MEMFD_CREATE, 0x1000, unix.MFD_CLOEXEC), retAllowT)
		add(p, "unshare (user namespaces stay allowed)", x86(unix.SYS_UNSHARE, unix.CLONE_NEWUSER|unix.CLONE_NEWNS), retAllowT)
		add(p, "fchdir (not chroot)", x86(unix.SYS_FCHDIR, 3), retAllowT)
		add(p, "socket AF_UNIX", x86(unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC), retAllowT)
		add(p, "socketpair AF_UNIX", x86(unix.SYS_SOCKETPAIR, unix.AF_UNIX, unix.SOCK_SEQPACKET), retAllowT)
	}

	open := SocketsAny
	add(open, "socket AF_INET", x86(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM), retAllowT)
	add(open, "socket AF_INET MPTCP", x86(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP), retAllowT)
	add(open, "socket AF_VSOCK", x86(unix.SYS_SOCKET, unix.AF_VSOCK, unix.SOCK_STREAM), retAllowT)
	add(open, "socket AF_PACKET", x86(unix.SYS_SOCKET, unix.AF_PACKET, unix.SOCK_RAW), retAllowT)
	add(open, "socket netlink audit", x86(unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_AUDIT), retAllowT)
	add(open, "socketpair AF_TIPC", x86(unix.SYS_SOCKETPAIR, unix.AF_TIPC, unix.SOCK_SEQPACKET), retAllowT)

	ns := SocketsLoopbackNetns
	add(ns, "socket AF_INET tcp", x86(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, 0), retAllowT)
	add(ns, "socket AF_INET explicit IPPROTO_TCP", x86(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_TCP), retAllowT)
	add(ns, "socket AF_INET udp", x86(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK), retAllowT)
	add(ns, "socket AF_INET6 tcp", x86(unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_STREAM), retAllowT)
	add(ns, "socket AF_INET|1<<32 is AF_INET", x86(unix.SYS_SOCKET, hi|unix.AF_INET, unix.SOCK_STREAM), retAllowT)
	add(ns, "socket AF_INET MPTCP", x86(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP), eperm)
	add(ns, "socket AF_INET6 MPTCP", x86(unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_STREAM, unix.IPPROTO_MPTCP), eperm)
	add(ns, "socket MPTCP|1<<32", x86(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, hi|unix.IPPROTO_MPTCP), eperm)
	add(ns, "socket AF_UNIX with protocol 262 is not MPTCP", x86(unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_STREAM, unix.IPPROTO_MPTCP), retAllowT)
	add(ns, "socket netlink route", x86(unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE), retAllowT)
	add(ns, "socket netlink audit", x86(unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_AUDIT), eafno)
	add(ns, "socket netlink uevent", x86(unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_DGRAM, unix.NETLINK_KOBJECT_UEVENT), eafno)
	add(ns, "socket netlink route|1<<32 is route", x86(unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW, hi|unix.NETLINK_ROUTE), retAllowT)
	add(ns, "socket AF_VSOCK", x86(unix.SYS_SOCKET, unix.AF_VSOCK, unix.SOCK_STREAM), eafno)
	add(ns, "socket AF_VSOCK|1<<32", x86(unix.SYS_SOCKET, hi|unix.AF_VSOCK, unix.SOCK_STREAM), eafno)
	add(ns, "socket AF_PACKET", x86(unix.SYS_SOCKET, unix.AF_PACKET, unix.SOCK_RAW), eafno)
	add(ns, "socket AF_BLUETOOTH", x86(unix.SYS_SOCKET, unix.AF_BLUETOOTH, unix.SOCK_STREAM), eafno)
	add(ns, "socketpair AF_TIPC", x86(unix.SYS_SOCKETPAIR, unix.AF_TIPC, unix.SOCK_SEQPACKET), eafno)
	add(ns, "socketpair AF_INET", x86(unix.SYS_SOCKETPAIR, unix.AF_INET, unix.SOCK_STREAM), eafno)

	uo := SocketsUnixOnly
	add(uo, "socket AF_UNIX dgram", x86(unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_DGRAM), retAllowT)
	add(uo, "socket AF_INET", x86(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM), eafno)
	add(uo, "socket AF_INET6", x86(unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_DGRAM), eafno)
	add(uo, "socket AF_UNIX|1<<32 is AF_UNIX", x86(unix.SYS_SOCKET, hi|unix.AF_UNIX, unix.SOCK_STREAM), retAllowT)
	add(uo, "socket AF_INET MPTCP", x86(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP), eperm)
	add(uo, "socket AF_INET6 MPTCP", x86(unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_STREAM, unix.IPPROTO_MPTCP), eperm)
	add(uo, "socket netlink route", x86(unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE), eafno)
	add(uo, "socket AF_VSOCK", x86(unix.SYS_SOCKET, unix.AF_VSOCK, unix.SOCK_STREAM), eafno)
	add(uo, "socket AF_PACKET", x86(unix.SYS_SOCKET, unix.AF_PACKET, unix.SOCK_RAW), eafno)
	add(uo, "socketpair AF_TIPC", x86(unix.SYS_SOCKETPAIR, unix.AF_TIPC, unix.SOCK_SEQPACKET), eafno)
	return append(supervisedCases(cases), setidCases()...)
}

func compiledFor(t *testing.T, p seccompTableID) ([]SeccompRule, []unix.SockFilter) {
	t.Helper()
	rules := p.rules()
	prog, err := CompileSeccomp(rules)
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	if err := verifyFilter(prog); err != nil {
		t.Fatalf("%s: compiled program fails verification: %v", p, err)
	}
	return rules, prog
}

func TestSeccompTable(t *testing.T) {
	for _, tt := range seccompCases() {
		t.Run(tt.table.String()+"/"+tt.name, func(t *testing.T) {
			rules, prog := compiledFor(t, tt.table)
			got, err := runFilter(prog, tt.data)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("filter: got %s, want %s", describeRet(got), describeRet(tt.want))
			}
			if ref := referenceRet(rules, tt.data); ref != tt.want {
				t.Errorf("table semantics: got %s, want %s", describeRet(ref), describeRet(tt.want))
			}
		})
	}
}

// TestSeccompTableCoversEveryRule fails when a rule exists that no
// hand-written case above blocks.
func TestSeccompTableCoversEveryRule(t *testing.T) {
	cases := seccompCases()
	for _, p := range allSeccompTables {
		rules := p.rules()
		covered := make([]bool, len(rules))
		for _, c := range cases {
			if c.table != p {
				continue
			}
			if i := firstMatch(rules, c.data); i >= 0 && c.want == wantRet(rules[i]) {
				covered[i] = true
			}
		}
		for i, r := range rules {
			if !covered[i] {
				t.Errorf("%s: rule %d (%s) has no blocked case in seccompCases", p, i, r)
			}
		}
	}
}

// TestSeccompEveryRuleReachable synthesises a matching call for each rule
// and requires that exactly that rule decides it: a rule shadowed by an
// earlier one, or compiled wrongly, fails.
func TestSeccompEveryRuleReachable(t *testing.T) {
	for _, p := range allSeccompTables {
		rules, prog := compiledFor(t, p)
		for i, r := range rules {
			d := matchingData(t, r)
			if j := firstMatch(rules, d); j != i {
				t.Errorf("%s: rule %d (%s) is shadowed by rule %d (%s)", p, i, r, j, rules[j])
				continue
			}
			got, err := runFilter(prog, d)
			if err != nil {
				t.Fatal(err)
			}
			if want := wantRet(r); got != want {
				t.Errorf("%s: rule %d (%s): filter returned %s, want %s", p, i, r, describeRet(got), describeRet(want))
			}
		}
	}
}

// TestSeccompMatchesReference runs the compiled programs against the plain-Go
// semantics on every combination of the values the table mentions.
func TestSeccompMatchesReference(t *testing.T) {
	for _, p := range allSeccompTables {
		rules, prog := compiledFor(t, p)
		vals := []uint64{0, 1, 0xffffffff, 1 << 32}
		nrs := []uint32{unix.SYS_READ, unix.SYS_GETPID, 0x40000000 | unix.SYS_IOCTL}
		for _, r := range rules {
			nrs = append(nrs, r.Nr)
			for _, c := range r.Args {
				vals = append(vals, uint64(c.Value), 0xffffffff<<32|uint64(c.Value), uint64(c.Value)+1)
				if c.Op == CmpAnySet {
					// The whole mask, its lowest bit alone, and every bit but the mask.
					vals = append(vals, uint64(c.Mask), uint64(c.Mask&-c.Mask), uint64(^c.Mask), 1<<32|uint64(c.Mask))
				}
			}
		}
		slices.Sort(vals)
		vals = slices.Compact(vals)
		n := 0
		for _, nr := range slices.Compact(slices.Sorted(slices.Values(nrs))) {
			for _, a0 := range vals {
				for _, a1 := range vals {
					for _, a2 := range vals {
						d := x86(nr, a0, a1, a2)
						got, err := runFilter(prog, d)
						if err != nil {
							t.Fatal(err)
						}
						if want := referenceRet(rules, d); got != want {
							t.Fatalf("%s: nr=%d args=%#x,%#x,%#x: filter %s, table %s", p, nr, a0, a1, a2, describeRet(got), describeRet(want))
						}
						n++
					}
				}
			}
		}
		// Every syscall number, between the table's ones too (the
		// compiled search must allow those), with each value in turn as
		// every argument.
		for nr := uint32(0); nr < 1024; nr++ {
			for _, v := range vals {
				d := x86(nr, v, v, v, v, v, v)
				got, err := runFilter(prog, d)
				if err != nil {
					t.Fatal(err)
				}
				if want := referenceRet(rules, d); got != want {
					t.Fatalf("%s: nr=%d args all %#x: filter %s, table %s", p, nr, v, describeRet(got), describeRet(want))
				}
				n++
			}
		}
		t.Logf("%s: %d rules, %d instructions, %d inputs agree", p, len(rules), len(prog), n)
	}
}

func TestSeccompRulesInvariants(t *testing.T) {
	nrOf := map[string]uint32{}
	nameOf := map[uint32]string{}
	for _, p := range allSeccompTables {
		rules := p.rules()
		if !reflect.DeepEqual(rules, p.rules()) {
			t.Errorf("%s: SeccompTable is not deterministic", p)
		}
		for i, r := range rules {
			if r.Name == "" || r.Reason == "" {
				t.Errorf("%s: rule %d (%s) lacks a name or a reason", p, i, r)
			}
			// Catches a row whose name and number were copied apart.
			if nr, ok := nrOf[r.Name]; ok && nr != r.Nr {
				t.Errorf("%s: %s has numbers %d and %d", p, r.Name, nr, r.Nr)
			}
			if name, ok := nameOf[r.Nr]; ok && name != r.Name {
				t.Errorf("%s: number %d is both %s and %s", p, r.Nr, name, r.Name)
			}
			nrOf[r.Name], nameOf[r.Nr] = r.Nr, r.Name
		}
		desc := DescribeSeccomp(rules)
		for _, r := range rules {
			if !strings.Contains(desc, r.String()+"\n") {
				t.Errorf("%s: DescribeSeccomp lacks %q", p, r)
			}
		}
		for _, line := range []string{"arch!=x86_64 -> KILL_PROCESS", "nr&0x40000000 -> KILL_PROCESS", "default -> ALLOW\n"} {
			if !strings.Contains(desc, line) {
				t.Errorf("%s: DescribeSeccomp lacks %q", p, line)
			}
		}
	}
	base := SeccompRules(SocketsAny)
	for _, p := range []SocketPolicy{SocketsLoopbackNetns, SocketsUnixOnly} {
		if rules := SeccompRules(p); !reflect.DeepEqual(rules[:len(base)], base) {
			t.Errorf("%s does not start with the SocketsAny rules", p)
		}
	}
	for _, r := range base {
		if r.Nr == unix.SYS_SOCKET || r.Nr == unix.SYS_SOCKETPAIR {
			t.Errorf("SocketsAny restricts sockets: %s", r)
		}
	}
	if !reflect.DeepEqual(SeccompRules(SocketPolicy(99)), SeccompRules(SocketsUnixOnly)) {
		t.Error("an unknown SocketPolicy does not fail closed to SocketsUnixOnly")
	}
	if !reflect.DeepEqual(SeccompTable(SocketPolicy(99), NotifyWrites), SeccompTable(SocketsUnixOnly, NotifyWrites)) {
		t.Error("an unknown SocketPolicy does not fail closed to SocketsUnixOnly when supervised")
	}
	r := SeccompRules(SocketsUnixOnly)
	r[0].Args[0].Value = 0
	if reflect.DeepEqual(r, SeccompRules(SocketsUnixOnly)) {
		t.Error("SeccompRules returns shared slices")
	}
}

func TestSocketPolicyString(t *testing.T) {
	for p, want := range map[SocketPolicy]string{
		SocketsAny: "any", SocketsLoopbackNetns: "loopback-netns", SocketsUnixOnly: "unix-only", 7: "SocketPolicy(7)",
	} {
		if got := p.String(); got != want {
			t.Errorf("SocketPolicy(%d).String() = %q, want %q", int(p), got, want)
		}
	}
}

func TestLoadSeccompRejectsEmptyProgram(t *testing.T) {
	if err := LoadSeccomp(nil); err == nil || !strings.HasPrefix(err.Error(), "seccomp: ") {
		t.Fatalf("got %v, want a seccomp: error", err)
	}
}

// seccompChildEnv names the test a re-executed test binary should run as
// the restricted child. Restrictions cannot be undone, so they are applied
// only in that child (go-landlock's RunInSubprocess pattern).
const seccompChildEnv = "SBX_SECCOMP_TEST_CHILD"

func inSeccompChild(t *testing.T) bool { return os.Getenv(seccompChildEnv) == t.Name() }

// runSeccompChild re-executes the test binary to run only test name as the
// child. Its stdin is /dev/null so that, should TIOCSTI ever get through,
// it has no terminal to type into.
func runSeccompChild(t *testing.T) (string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), seccompChildEnv+"="+t.Name())
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// loadUnixOnlyFilter restricts the calling goroutine's thread for good.
func loadUnixOnlyFilter(t *testing.T) {
	t.Helper()
	// Never unlocked: the filter belongs to this thread, and the runtime
	// must not hand it to another goroutine.
	runtime.LockOSThread()
	prog, err := CompileSeccomp(SeccompRules(SocketsUnixOnly))
	if err != nil {
		t.Fatal(err)
	}
	if nnp, _ := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0); nnp == 0 {
		if err := LoadSeccomp(prog); err == nil || !strings.Contains(err.Error(), "no_new_privs") {
			t.Fatalf("LoadSeccomp without no_new_privs: got %v, want a no_new_privs error", err)
		}
	} else {
		t.Log("no_new_privs already set by the environment; not testing its absence")
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		t.Fatalf("prctl(PR_SET_NO_NEW_PRIVS): %v", err)
	}
	if err := LoadSeccomp(prog); err != nil {
		t.Fatal(err)
	}
}

func TestSeccompKernel(t *testing.T) {
	if !inSeccompChild(t) {
		out, err := runSeccompChild(t)
		t.Logf("child output:\n%s", out)
		if err != nil || !strings.Contains(out, "--- PASS: "+t.Name()) {
			t.Fatalf("restricted child failed: %v", err)
		}
		return
	}
	loadUnixOnlyFilter(t)

	wantErrno := func(name string, want syscall.Errno, r1 uintptr, errno syscall.Errno) {
		t.Helper()
		if errno != want {
			t.Errorf("%s: got r1=%d errno=%v (%s), want %s", name, int(r1), errno, errnoName(errno), errnoName(want))
		} else {
			t.Logf("%s: %s as expected", name, errnoName(want))
		}
	}
	var c byte = 'x'
	r1, _, errno := unix.Syscall(unix.SYS_IOCTL, 0, uintptr(unix.TIOCSTI)|1<<32, uintptr(unsafe.Pointer(&c)))
	wantErrno("ioctl(0, TIOCSTI|1<<32)", unix.EPERM, r1, errno)

	// The neighbouring ioctl reaches the kernel, which finds no terminal.
	var tio unix.Termios
	r1, _, errno = unix.Syscall(unix.SYS_IOCTL, 0, unix.TCGETS, uintptr(unsafe.Pointer(&tio)))
	wantErrno("ioctl(0, TCGETS)", unix.ENOTTY, r1, errno)

	r1, _, errno = unix.Syscall(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, 0)
	wantErrno("socket(AF_INET, SOCK_STREAM, 0)", unix.EAFNOSUPPORT, r1, errno)

	r1, _, errno = unix.Syscall(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP)
	wantErrno("socket(AF_INET, SOCK_STREAM, IPPROTO_MPTCP)", unix.EPERM, r1, errno)

	var pair [2]int32
	r1, _, errno = unix.Syscall6(unix.SYS_SOCKETPAIR, unix.AF_TIPC, unix.SOCK_SEQPACKET, 0, uintptr(unsafe.Pointer(&pair)), 0, 0)
	wantErrno("socketpair(AF_TIPC)", unix.EAFNOSUPPORT, r1, errno)

	r1, _, errno = unix.Syscall(unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if errno != 0 {
		t.Errorf("socket(AF_UNIX): %v", errno)
	} else {
		unix.Close(int(r1))
	}

	ppid := os.Getppid()
	r1, _, errno = unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_ATTACH, uintptr(ppid), 0, 0, 0, 0)
	if errno == 0 {
		// Let the parent go before failing: it is the parent test binary, waiting on us.
		unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_DETACH, uintptr(ppid), 0, 0, 0, 0)
	}
	wantErrno("ptrace(PTRACE_ATTACH, ppid)", unix.EPERM, r1, errno)

	// Reading our own memory would succeed without the filter.
	var src, dst [8]byte
	local := unix.Iovec{Base: &dst[0], Len: uint64(len(dst))}
	remote := unix.Iovec{Base: &src[0], Len: uint64(len(src))}
	r1, _, errno = unix.Syscall6(unix.SYS_PROCESS_VM_READV, uintptr(unix.Getpid()),
		uintptr(unsafe.Pointer(&local)), 1, uintptr(unsafe.Pointer(&remote)), 1, 0)
	wantErrno("process_vm_readv(self)", unix.EPERM, r1, errno)

	if _, _, errno := unix.Syscall(unix.SYS_GETPID, 0, 0, 0); errno != 0 {
		t.Errorf("getpid: %v", errno)
	}
}

// TestSeccompKernelKillsX32 checks that the kernel applies KILL_PROCESS to
// an x32 syscall: the child must die of SIGSYS rather than get an errno.
func TestSeccompKernelKillsX32(t *testing.T) {
	if !inSeccompChild(t) {
		out, err := runSeccompChild(t)
		t.Logf("child output:\n%s", out)
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("child: got %v, want death by SIGSYS", err)
		}
		ws, ok := exit.Sys().(syscall.WaitStatus)
		if !ok || !ws.Signaled() || ws.Signal() != unix.SIGSYS {
			t.Fatalf("child: got %v, want death by SIGSYS", err)
		}
		return
	}
	// SIGSYS dumps core by default; keep the test from leaving one behind.
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	loadUnixOnlyFilter(t)
	_, _, errno := unix.Syscall(0x40000000|unix.SYS_GETPID, 0, 0, 0)
	t.Fatalf("x32 getpid returned errno %v instead of killing the process", errno)
}

// TestCompileSeccompSearch: the rules are searched by syscall number, and
// a left half too long for a conditional jump is jumped over with JA; for
// every number, the program decides as the table does (the first matching
// rule, in table order, whatever the order of the numbers).
func TestCompileSeccompSearch(t *testing.T) {
	var rules []SeccompRule
	// Numbers out of order, each with rules of six conditions: the left
	// half of the search is over 255 instructions.
	for _, nr := range []uint32{40, 3, 17, 29, 8, 35, 12, 21, 1, 33, 26, 5} {
		for v := uint32(1); v <= 4; v++ {
			var args []ArgCond
			for i := range 6 {
				args = append(args, ArgCond{Index: i, Op: CmpEq, Value: v + uint32(i)})
			}
			rules = append(rules, SeccompRule{Name: "r", Nr: nr, Args: args, Errno: unix.Errno(v)})
		}
		rules = append(rules, SeccompRule{Name: "last", Nr: nr, Args: []ArgCond{{Index: 0, Op: CmpEq, Value: 9}}, Action: ActNotify})
	}
	prog, err := CompileSeccomp(rules)
	if err != nil {
		t.Fatal(err)
	}
	far := false
	for _, ins := range prog {
		if ins.Code == tJa {
			far = true
		}
	}
	if !far {
		t.Fatalf("a %d-instruction program has no far jump: the test no longer covers it", len(prog))
	}
	for nr := uint32(0); nr < 64; nr++ {
		for v := uint64(0); v <= 10; v++ {
			d := x86(nr, v, v+1, v+2, v+3, v+4, v+5)
			got, err := runFilter(prog, d)
			if err != nil {
				t.Fatal(err)
			}
			if want := referenceRet(rules, d); got != want {
				t.Fatalf("nr=%d v=%d: filter %s, table %s", nr, v, describeRet(got), describeRet(want))
			}
		}
	}
}
