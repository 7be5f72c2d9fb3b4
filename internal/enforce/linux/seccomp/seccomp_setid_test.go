//go:build linux && amd64

package seccomp

import (
	"testing"

	"golang.org/x/sys/unix"
)

// setidCases are seccompCases for the set-id rows (issue 27 §2) and the
// calls that reach into another process's file table (§3), written from
// the issue: every call that takes a mode refuses S_ISUID and S_ISGID
// (unsupervised: EPERM; supervised: to the supervisor, which refuses all
// but a setgid directory), an open only when its mode counts, and the
// same calls without a set-id bit go on as before.
func setidCases() []seccompCase {
	eperm := retErrno(unix.EPERM)
	var cases []seccompCase
	add := func(p SocketPolicy, sup NotifyScope, name string, d seccompData, want uint32) {
		cases = append(cases, seccompCase{name: name, table: seccompTableID{p, sup}, data: d, want: want})
	}
	const (
		suid, sgid = unix.S_ISUID, unix.S_ISGID
		hi         = 1 << 32
		wrCreat    = unix.O_WRONLY | unix.O_CREAT
	)
	tmpfile := uint64(unix.O_TMPFILE | unix.O_RDWR)
	calls := []struct {
		name string
		args func(mode uint64) seccompData
	}{
		{"chmod", func(m uint64) seccompData { return x86(unix.SYS_CHMOD, 0x1000, m) }},
		{"fchmod", func(m uint64) seccompData { return x86(unix.SYS_FCHMOD, 3, m) }},
		{"fchmodat", func(m uint64) seccompData { return x86(unix.SYS_FCHMODAT, 3, 0x1000, m) }},
		{"fchmodat2", func(m uint64) seccompData { return x86(unix.SYS_FCHMODAT2, 3, 0x1000, m, 0) }},
		{"open O_CREAT", func(m uint64) seccompData { return x86(unix.SYS_OPEN, 0x1000, wrCreat, m) }},
		{"open O_TMPFILE", func(m uint64) seccompData { return x86(unix.SYS_OPEN, 0x1000, tmpfile, m) }},
		{"openat O_CREAT", func(m uint64) seccompData { return x86(unix.SYS_OPENAT, 3, 0x1000, wrCreat, m) }},
		{"openat O_CREAT|O_EXCL", func(m uint64) seccompData {
			return x86(unix.SYS_OPENAT, 3, 0x1000, unix.O_CREAT|unix.O_EXCL|unix.O_RDONLY, m)
		}},
		{"openat O_TMPFILE", func(m uint64) seccompData { return x86(unix.SYS_OPENAT, 3, 0x1000, tmpfile, m) }},
		{"creat", func(m uint64) seccompData { return x86(unix.SYS_CREAT, 0x1000, m) }},
		{"mknod S_IFREG", func(m uint64) seccompData { return x86(unix.SYS_MKNOD, 0x1000, unix.S_IFREG|m, 0) }},
		{"mknodat S_IFREG", func(m uint64) seccompData { return x86(unix.SYS_MKNODAT, 3, 0x1000, unix.S_IFREG|m, 0) }},
		{"mknodat mode 0 (a regular file)", func(m uint64) seccompData { return x86(unix.SYS_MKNODAT, 3, 0x1000, m, 0) }},
	}
	for _, p := range allSocketPolicies {
		for _, c := range calls {
			for _, bit := range []struct {
				name string
				mode uint64
			}{{"S_ISUID", suid | 0o755}, {"S_ISGID", sgid | 0o755}, {"both", suid | sgid | 0o755}, {"S_ISUID only in the low word", hi | suid}} {
				add(p, NotifyNone, c.name+" "+bit.name, c.args(bit.mode), eperm)
				add(p, NotifyWrites, c.name+" "+bit.name, c.args(bit.mode), retNotifyT)
				add(p, NotifyReads, c.name+" "+bit.name, c.args(bit.mode), retNotifyT)
			}
			add(p, NotifyNone, c.name+" 0755|S_ISVTX", c.args(0o1755), retAllowT)
			add(p, NotifyNone, c.name+" S_ISUID in the high word only", c.args(hi<<11), retAllowT)
		}
		// The mode of an open without O_CREAT or O_TMPFILE is ignored
		// by the kernel: whatever is in the register goes through.
		add(p, NotifyNone, "openat O_RDONLY with junk mode", x86(unix.SYS_OPENAT, 3, 0x1000, unix.O_RDONLY, suid|sgid), retAllowT)
		add(p, NotifyNone, "openat O_DIRECTORY (not O_TMPFILE) with junk mode", x86(unix.SYS_OPENAT, 3, 0x1000, unix.O_DIRECTORY, suid), retAllowT)
		add(p, NotifyNone, "open O_WRONLY|O_TRUNC with junk mode", x86(unix.SYS_OPEN, 0x1000, unix.O_WRONLY|unix.O_TRUNC, suid), retAllowT)
		add(p, NotifyWrites, "openat O_WRONLY with junk mode (a write, not a set-id)", x86(unix.SYS_OPENAT, 3, 0x1000, unix.O_WRONLY, suid), retNotifyT)
		add(p, NotifyReads, "openat O_RDONLY with junk mode (a read)", x86(unix.SYS_OPENAT, 3, 0x1000, unix.O_RDONLY, suid), retNotifyT)
		// mkdir ignores both bits (a directory inherits S_ISGID): not refused.
		add(p, NotifyNone, "mkdirat 02775", x86(unix.SYS_MKDIRAT, 3, 0x1000, sgid|0o775), retAllowT)
		add(p, NotifyNone, "mkdir 02775", x86(unix.SYS_MKDIR, 0x1000, sgid|0o775), retAllowT)
		for _, sup := range []NotifyScope{NotifyNone, NotifyWrites, NotifyReads} {
			add(p, sup, "openat2", x86(unix.SYS_OPENAT2, 3, 0x1000, 0x2000, 24), retErrno(unix.ENOSYS))
			add(p, sup, "openat2 no args", x86(unix.SYS_OPENAT2), retErrno(unix.ENOSYS))
			add(p, sup, "pidfd_getfd", x86(unix.SYS_PIDFD_GETFD, 3, 5, 0), eperm)
			add(p, sup, "kcmp", x86(unix.SYS_KCMP, 1, 2, 0, 5, 5), eperm)
			add(p, sup, "pidfd_open (signals its own children)", x86(unix.SYS_PIDFD_OPEN, 1, 0), retAllowT)
		}
	}
	return cases
}

// TestSetidForeignABI: a set-id chmod through the i386 ABI (int 0x80,
// where chmod is 15 and fchmodat 306) or with the x32 bit is never let
// through, whatever the filter's prologue does with a foreign ABI (it
// kills the process today; it may report first).
func TestSetidForeignABI(t *testing.T) {
	for _, id := range allSeccompTables {
		_, prog := compiledFor(t, id)
		for _, d := range []seccompData{
			{Nr: 15, Arch: unix.AUDIT_ARCH_I386, Args: [6]uint64{0x1000, 0o4755}},
			{Nr: 306, Arch: unix.AUDIT_ARCH_I386, Args: [6]uint64{3, 0x1000, 0o2755}},
			{Nr: 8, Arch: unix.AUDIT_ARCH_I386, Args: [6]uint64{0x1000, 0o4755}}, // creat
			x86(0x40000000|unix.SYS_FCHMODAT, 3, 0x1000, 0o4755),
			x86(0x40000000|unix.SYS_CHMOD, 0x1000, 0o4755),
		} {
			got, err := runFilter(prog, d)
			if err != nil {
				t.Fatal(err)
			}
			if got == retAllowT || got == retErrno(0) {
				t.Errorf("%s: nr %#x arch %#x mode %#o: %s", id, d.Nr, d.Arch, d.Args[1]|d.Args[2], describeRet(got))
			}
		}
	}
}
