//go:build linux

package supervisor

import (
	"golang.org/x/sys/unix"
)

// atFDCWDArg is AT_FDCWD (-100) as a syscall argument.
const atFDCWDArg = uint64(^uint32(99))

// atForm maps a notified call to its *at form, keeping the name the caller
// used. ok is false for a call the supervisor does not handle.
func atForm(nr uint32, a [6]uint64) (call, bool) {
	at := func(name string, atNr uint32, args ...uint64) (call, bool) {
		c := call{name: name, nr: atNr}
		copy(c.args[:], args)
		return c, true
	}
	switch nr {
	case unix.SYS_OPEN:
		return at("open", unix.SYS_OPENAT, atFDCWDArg, a[0], a[1], a[2])
	case unix.SYS_CREAT:
		return at("creat", unix.SYS_OPENAT, atFDCWDArg, a[0], unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC, a[1])
	case unix.SYS_MKDIR:
		return at("mkdir", unix.SYS_MKDIRAT, atFDCWDArg, a[0], a[1])
	case unix.SYS_MKNOD:
		return at("mknod", unix.SYS_MKNODAT, atFDCWDArg, a[0], a[1], a[2])
	case unix.SYS_UNLINK:
		return at("unlink", unix.SYS_UNLINKAT, atFDCWDArg, a[0], 0)
	case unix.SYS_RMDIR:
		return at("rmdir", unix.SYS_UNLINKAT, atFDCWDArg, a[0], unix.AT_REMOVEDIR)
	case unix.SYS_RENAME:
		return at("rename", unix.SYS_RENAMEAT, atFDCWDArg, a[0], atFDCWDArg, a[1])
	case unix.SYS_LINK:
		return at("link", unix.SYS_LINKAT, atFDCWDArg, a[0], atFDCWDArg, a[1], 0)
	case unix.SYS_SYMLINK:
		return at("symlink", unix.SYS_SYMLINKAT, a[0], atFDCWDArg, a[1])
	case unix.SYS_CHMOD:
		return at("chmod", unix.SYS_FCHMODAT, atFDCWDArg, a[0], a[1])
	case unix.SYS_CHOWN:
		return at("chown", unix.SYS_FCHOWNAT, atFDCWDArg, a[0], a[1], a[2], 0)
	case unix.SYS_LCHOWN:
		return at("lchown", unix.SYS_FCHOWNAT, atFDCWDArg, a[0], a[1], a[2], unix.AT_SYMLINK_NOFOLLOW)
	}
	return atFormNative(nr, a)
}
