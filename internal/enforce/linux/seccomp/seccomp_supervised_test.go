//go:build linux && amd64

package seccomp

import (
	"reflect"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// The supervised tables: what the user-notification rules add to the
// ERRNO table of seccomp_test.go, and that they take nothing from it.

// supervisedCases adds what supervision changes, from the issue: every
// write-intent file-system call and, with the network off, connect and bind
// (or inet socket creation without a namespace) go to the supervisor;
// nothing else does. Cases already in base for the same table and name are
// replaced, so the exceptions to "supervision changes no ERRNO decision" are
// spelt out here.
func supervisedCases(base []seccompCase) []seccompCase {
	notify, allow := retNotifyT, retAllowT
	var extra []seccompCase
	add := func(id seccompTableID, name string, d seccompData, want uint32) {
		extra = append(extra, seccompCase{name: name, table: id, data: d, want: want})
	}
	const (
		wr, rw, creat, trunc = unix.O_WRONLY, unix.O_RDWR, unix.O_CREAT, unix.O_TRUNC
		hi                   = 1 << 32
	)
	openFlags := []struct {
		name  string
		flags uint64
		want  uint32
	}{
		{"O_RDONLY", unix.O_RDONLY, allow},
		{"O_RDONLY|O_CLOEXEC|O_DIRECTORY", unix.O_CLOEXEC | unix.O_DIRECTORY, allow},
		{"O_PATH", unix.O_PATH, allow},
		{"O_APPEND alone is a read", unix.O_APPEND, allow},
		{"O_NOFOLLOW|O_NONBLOCK", unix.O_NOFOLLOW | unix.O_NONBLOCK, allow},
		{"O_WRONLY only in the high word", hi | unix.O_RDONLY, allow},
		{"O_WRONLY", wr, notify},
		{"O_RDWR", rw, notify},
		{"O_CREAT", creat, notify},
		{"O_TRUNC", trunc, notify},
		{"O_WRONLY|O_CREAT|O_TRUNC", wr | creat | trunc, notify},
		{"O_CREAT|O_EXCL|O_CLOEXEC", creat | unix.O_EXCL | unix.O_CLOEXEC, notify},
		{"O_TMPFILE|O_WRONLY", unix.O_TMPFILE | wr, notify},
		{"O_WRONLY|O_APPEND", wr | unix.O_APPEND, notify},
		{"O_WRONLY with junk in the high word", 0xffffffff<<32 | wr, notify},
	}
	always := []struct {
		name string
		nr   uint32
	}{
		{"creat", unix.SYS_CREAT},
		{"mkdir", unix.SYS_MKDIR}, {"mkdirat", unix.SYS_MKDIRAT},
		{"mknod", unix.SYS_MKNOD}, {"mknodat", unix.SYS_MKNODAT},
		{"unlink", unix.SYS_UNLINK}, {"unlinkat", unix.SYS_UNLINKAT}, {"rmdir", unix.SYS_RMDIR},
		{"rename", unix.SYS_RENAME}, {"renameat", unix.SYS_RENAMEAT}, {"renameat2", unix.SYS_RENAMEAT2},
		{"link", unix.SYS_LINK}, {"linkat", unix.SYS_LINKAT},
		{"symlink", unix.SYS_SYMLINK}, {"symlinkat", unix.SYS_SYMLINKAT},
		{"truncate", unix.SYS_TRUNCATE},
		{"chmod", unix.SYS_CHMOD}, {"fchmodat", unix.SYS_FCHMODAT}, {"fchmodat2", unix.SYS_FCHMODAT2}, {"fchmod", unix.SYS_FCHMOD},
		{"chown", unix.SYS_CHOWN}, {"lchown", unix.SYS_LCHOWN}, {"fchownat", unix.SYS_FCHOWNAT}, {"fchown", unix.SYS_FCHOWN},
		// An AF_UNIX bind makes a socket file, under every socket policy.
		{"bind", unix.SYS_BIND},
	}
	// Calls that stay fast under supervision: reads, and writes through a
	// file descriptor that was checked when it was opened.
	never := []struct {
		name string
		nr   uint32
	}{
		{"read", unix.SYS_READ}, {"write", unix.SYS_WRITE}, {"pwrite64", unix.SYS_PWRITE64},
		{"ftruncate", unix.SYS_FTRUNCATE}, {"newfstatat", unix.SYS_NEWFSTATAT}, {"statx", unix.SYS_STATX},
		{"getdents64", unix.SYS_GETDENTS64}, {"readlinkat", unix.SYS_READLINKAT}, {"execve", unix.SYS_EXECVE},
		{"close", unix.SYS_CLOSE}, {"sendto", unix.SYS_SENDTO}, {"socketpair AF_UNIX", unix.SYS_SOCKETPAIR},
	}
	for _, p := range allSocketPolicies {
		sup, unsup := seccompTableID{p, NotifyWrites}, seccompTableID{p, NotifyNone}
		for _, f := range openFlags {
			add(sup, "openat "+f.name, x86(unix.SYS_OPENAT, 3, 0x1000, f.flags, 0o644), f.want)
			add(sup, "open "+f.name, x86(unix.SYS_OPEN, 0x1000, f.flags, 0o644), f.want)
			add(sup, "openat flags in arg1, not arg2: "+f.name, x86(unix.SYS_OPENAT, 3, f.flags, 0, 0), allow)
			add(unsup, "openat "+f.name, x86(unix.SYS_OPENAT, 3, 0x1000, f.flags, 0o644), allow)
		}
		for _, c := range always {
			add(sup, c.name, x86(c.nr), notify)
			add(sup, c.name+" with args", x86(c.nr, ^uint64(0), 1, 2, 3, 4, 5), notify)
			add(unsup, c.name, x86(c.nr), allow)
		}
		for _, c := range never {
			add(sup, c.name, x86(c.nr, unix.AF_UNIX, 1, 2), allow)
		}
		add(unsup, "connect", x86(unix.SYS_CONNECT, 3, 0x1000, 16), allow)
		add(unsup, "bind", x86(unix.SYS_BIND, 3, 0x1000, 16), allow)
		add(sup, "bind", x86(unix.SYS_BIND, 3, 0x1000, 16), notify)
	}
	ns := seccompTableID{SocketsLoopbackNetns, NotifyWrites}
	add(ns, "connect", x86(unix.SYS_CONNECT, 3, 0x1000, 16), notify)
	add(ns, "socket AF_INET tcp", x86(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, 0), allow)
	add(ns, "sendto with an address", x86(unix.SYS_SENDTO, 3, 0x1000, 4, 0, 0x2000, 16), notify)
	add(ns, "sendto without an address", x86(unix.SYS_SENDTO, 3, 0x1000, 4, 0, 0, 0), allow)
	add(ns, "sendmsg", x86(unix.SYS_SENDMSG, 3, 0x1000, 0), notify)
	add(ns, "sendmsg MSG_NOSIGNAL", x86(unix.SYS_SENDMSG, 3, 0x1000, unix.MSG_NOSIGNAL), notify)
	add(ns, "sendmsg MSG_DONTROUTE (no exemption)", x86(unix.SYS_SENDMSG, 3, 0x1000, unix.MSG_DONTROUTE), notify)
	add(ns, "sendmmsg", x86(unix.SYS_SENDMMSG, 3, 0x1000, 2, 0), notify)
	open := seccompTableID{SocketsAny, NotifyWrites}
	add(open, "connect (network on: not supervised)", x86(unix.SYS_CONNECT, 3, 0x1000, 16), allow)
	add(open, "socket AF_INET", x86(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM), allow)
	add(open, "sendmsg (network on: not supervised)", x86(unix.SYS_SENDMSG, 3, 0x1000, 0), allow)
	add(open, "sendmmsg (network on: not supervised)", x86(unix.SYS_SENDMMSG, 3, 0x1000, 2, 0), allow)
	add(open, "sendto (network on: not supervised)", x86(unix.SYS_SENDTO, 3, 0x1000, 4, 0, 0x2000, 16), allow)
	uo := seccompTableID{SocketsUnixOnly, NotifyWrites}
	add(uo, "socket AF_INET", x86(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM), notify)
	add(uo, "socket AF_INET6", x86(unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_DGRAM), notify)
	add(uo, "socket AF_INET|1<<32", x86(unix.SYS_SOCKET, 1<<32|unix.AF_INET, unix.SOCK_STREAM), notify)
	add(uo, "socket AF_INET MPTCP", x86(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP), retErrno(unix.EPERM))
	add(uo, "socket AF_INET6 MPTCP", x86(unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_STREAM, unix.IPPROTO_MPTCP), retErrno(unix.EPERM))
	add(uo, "socket AF_PACKET", x86(unix.SYS_SOCKET, unix.AF_PACKET, unix.SOCK_RAW), retErrno(unix.EAFNOSUPPORT))
	// No inet socket can exist, but a pathname unix socket outside the
	// writable roots is the supervisor's to keep out of reach.
	add(uo, "connect (a unix socket path)", x86(unix.SYS_CONNECT, 3, 0x1000, 16), notify)
	add(uo, "sendto with an address", x86(unix.SYS_SENDTO, 3, 0x1000, 4, 0, 0x2000, 16), notify)
	add(uo, "sendto without an address", x86(unix.SYS_SENDTO, 3, 0x1000, 4, 0, 0, 0), allow)
	add(uo, "sendmsg", x86(unix.SYS_SENDMSG, 3, 0x1000, 0), notify)
	add(uo, "sendmsg MSG_DONTROUTE (no exemption)", x86(unix.SYS_SENDMSG, 3, 0x1000, unix.MSG_DONTROUTE), notify)
	add(uo, "sendmmsg", x86(unix.SYS_SENDMMSG, 3, 0x1000, 2, 0), notify)

	type key struct {
		table seccompTableID
		name  string
	}
	override := map[key]bool{}
	for _, c := range extra {
		override[key{c.table, c.name}] = true
	}
	var out []seccompCase
	for _, c := range base {
		if !override[key{c.table, c.name}] {
			out = append(out, c)
		}
	}
	return append(out, extra...)
}

// TestSeccompSupervisedKeepsErrnoRules: supervision adds notification rules
// and changes no ERRNO rule: the supervised table holds the unsupervised one
// in order, and every notification rule comes after the last ERRNO rule,
// except inet socket() under SocketsUnixOnly, which the supervisor always
// refuses, and the set-id rows (seccomp_setid.go), which it refuses but for
// a setgid directory it makes itself: those are the same rows, notified.
func TestSeccompSupervisedKeepsErrnoRules(t *testing.T) {
	isSetid := func(r SeccompRule) bool {
		n := len(r.Args)
		return n > 0 && r.Args[n-1].Op == CmpAnySet && r.Args[n-1].Mask == SetidBits
	}
	for _, p := range allSocketPolicies {
		plain, sup := SeccompRules(p), SeccompTable(p, NotifyWrites)
		for i, r := range plain {
			if isSetid(r) {
				r.Action, r.Errno = ActNotify, 0
				if !reflect.DeepEqual(sup[i], r) {
					t.Errorf("%s: set-id row %d is %s supervised, want %s", p, i, sup[i], r)
				}
			}
		}
		plain = slices.DeleteFunc(slices.Clone(plain), isSetid)
		var errnoRules []SeccompRule
		lastErrno := -1
		for i, r := range sup {
			if r.Action == ActErrno {
				errnoRules = append(errnoRules, r)
				lastErrno = i
			}
		}
		if !reflect.DeepEqual(errnoRules, plain) {
			t.Errorf("%s: the ERRNO rules of the supervised table differ from the unsupervised table", p)
		}
		for i, r := range sup[:lastErrno+1] {
			if r.Action != ActNotify {
				continue
			}
			isInetSocket := r.Nr == unix.SYS_SOCKET && len(r.Args) == 1 && r.Args[0].Op == CmpEq &&
				(r.Args[0].Value == unix.AF_INET || r.Args[0].Value == unix.AF_INET6)
			if (p != SocketsUnixOnly || !isInetSocket) && !isSetid(r) {
				t.Errorf("%s: notification rule %d (%s) comes before an ERRNO rule", p, i, r)
			}
		}
		for _, r := range plain {
			if r.Action != ActErrno {
				t.Errorf("%s: unsupervised table has a notification rule: %s", p, r)
			}
		}
	}
}

// TestSeccompSupervisedCoversWriteSyscalls pins the list of write-intent
// calls from the issue against the table, by name.
func TestSeccompSupervisedCoversWriteSyscalls(t *testing.T) {
	// openat2 is not here: the filter answers it ENOSYS (setidCases).
	want := []string{"open", "openat", "creat", "mkdir", "mkdirat", "unlink", "unlinkat", "rmdir",
		"rename", "renameat", "renameat2", "link", "linkat", "symlink", "symlinkat", "truncate", "mknod", "mknodat",
		"chmod", "fchmodat", "fchmodat2", "fchmod", "chown", "lchown", "fchownat", "fchown", "bind"}
	for _, p := range allSocketPolicies {
		notified := map[string]bool{}
		for _, r := range SeccompTable(p, NotifyWrites) {
			if r.Action == ActNotify {
				notified[r.Name] = true
			}
		}
		for _, name := range want {
			if !notified[name] {
				t.Errorf("%s: %s is not supervised", p, name)
			}
		}
		if got := notified["connect"]; got != (p != SocketsAny) {
			t.Errorf("%s: connect supervised = %t, want %t", p, got, p != SocketsAny)
		}
	}
}

// TestSeccompSupervisedReads: SupervisedReads is the Supervised table with
// only the read-open rules added at the end, so every other decision stays
// the one the Supervised cases pin; and in it every open goes to the
// supervisor while reads through a descriptor stay fast.
func TestSeccompSupervisedReads(t *testing.T) {
	for _, p := range allSocketPolicies {
		t.Run(p.String(), func(t *testing.T) {
			want := append(SeccompTable(p, NotifyWrites), readNotifyRules()...)
			if got := SeccompTable(p, NotifyReads); !reflect.DeepEqual(got, want) {
				t.Fatalf("SupervisedReads table is not the Supervised table plus readNotifyRules:\n%s", DescribeSeccomp(got))
			}
			_, prog := compiledFor(t, seccompTableID{p, NotifyReads})
			for _, c := range []struct {
				name string
				data seccompData
				want uint32
			}{
				{"openat O_RDONLY", x86(unix.SYS_OPENAT, 3, 0x1000, unix.O_RDONLY, 0), retNotifyT},
				{"openat O_RDONLY|O_DIRECTORY", x86(unix.SYS_OPENAT, 3, 0x1000, unix.O_RDONLY|unix.O_DIRECTORY, 0), retNotifyT},
				{"open O_RDONLY", x86(unix.SYS_OPEN, 0x1000, unix.O_RDONLY, 0), retNotifyT},
				{"openat O_WRONLY", x86(unix.SYS_OPENAT, 3, 0x1000, unix.O_WRONLY, 0), retNotifyT},
				{"read", x86(unix.SYS_READ, 3, 0x1000, 10), retAllowT},
				{"newfstatat", x86(unix.SYS_NEWFSTATAT, 3, 0x1000, 0x2000, 0), retAllowT},
			} {
				got, err := runFilter(prog, c.data)
				if err != nil {
					t.Fatal(err)
				}
				if got != c.want {
					t.Errorf("%s: got %s, want %s", c.name, describeRet(got), describeRet(c.want))
				}
			}
		})
	}
}
