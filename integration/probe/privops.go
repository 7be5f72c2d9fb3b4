//go:build linux

package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// privOp runs one of the actions a command that kept root's capabilities
// could take against the host (issue #13 §1). Each is the raw system call,
// so the errno is the kernel's own.
func privOp(op string, args []string) (result, error) {
	arg := func() (string, error) {
		if len(args) != 1 {
			return "", fmt.Errorf("%s takes 1 argument, got %d", op, len(args))
		}
		return args[0], nil
	}
	switch op {
	case "setxattr-cap", "setxattr-acl", "chattr", "scan-environ":
		a, err := arg()
		if err != nil {
			return result{}, err
		}
		switch op {
		case "setxattr-cap":
			return setxattr(op, a, "security.capability", fileCapSetuid()), nil
		case "setxattr-acl":
			return setxattr(op, a, "system.posix_acl_access", aclOtherRWX()), nil
		case "chattr":
			return chattrAppend(a), nil
		default:
			return scanEnviron(a), nil
		}
	case "sethostname", "setdomainname", "clock-settime", "syslog", "capeff":
		if len(args) != 0 {
			return result{}, fmt.Errorf("%s takes no argument", op)
		}
		return map[string]func() result{"sethostname": sameHostname, "setdomainname": sameDomainname,
			"clock-settime": clockSetNow, "syslog": syslogReadAll, "capeff": capEff}[op](), nil
	}
	return result{}, fmt.Errorf("unknown action %q", op)
}

// fileCapSetuid is a vfs_cap_data (revision 2) granting cap_setuid=ep: a
// file capability that makes any later runner of the file root-capable.
func fileCapSetuid() []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, []uint32{
		0x02000000 | 1,          // VFS_CAP_REVISION_2 | VFS_CAP_FLAGS_EFFECTIVE
		1 << unix.CAP_SETUID, 0, // permitted, inheritable (caps 0-31)
		0, 0, // caps 32-63
	})
	return b.Bytes()
}

// aclOtherRWX is a minimal POSIX access ACL (user::rwx group::rwx
// other::rwx): a chmod 0777 spelled as an extended attribute.
func aclOtherRWX() []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, uint32(2)) // POSIX_ACL_XATTR_VERSION
	for _, tag := range []uint16{0x01, 0x04, 0x20} { // ACL_USER_OBJ, ACL_GROUP_OBJ, ACL_OTHER
		binary.Write(&b, binary.LittleEndian, tag)
		binary.Write(&b, binary.LittleEndian, uint16(7))
		binary.Write(&b, binary.LittleEndian, uint32(0xFFFFFFFF))
	}
	return b.Bytes()
}

func setxattr(op, path, name string, value []byte) result {
	if err := unix.Setxattr(path, name, value, 0); err != nil {
		return failErr(op, err, "setxattr "+name+" "+path)
	}
	return result{Op: op, OK: true, Detail: "setxattr " + name + " " + path}
}

// fsAppendFL is FS_APPEND_FL of linux/fs.h (chattr +a).
const fsAppendFL = 0x20

// chattrAppend sets the append-only inode flag (chattr +a) through a
// read-only fd: needs CAP_LINUX_IMMUTABLE, and a writable mount.
func chattrAppend(path string) result {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return failErr("chattr", err, "open "+path)
	}
	defer unix.Close(fd)
	flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	if err != nil {
		return failErr("chattr", err, "FS_IOC_GETFLAGS")
	}
	flags |= fsAppendFL
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.FS_IOC_SETFLAGS, uintptr(unsafe.Pointer(&flags))); e != 0 {
		return failErr("chattr", e, "FS_IOC_SETFLAGS +a")
	}
	// Undo it, so the test's cleanup can remove the file.
	flags &^= fsAppendFL
	unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.FS_IOC_SETFLAGS, uintptr(unsafe.Pointer(&flags)))
	return result{Op: "chattr", OK: true, Detail: "FS_IOC_SETFLAGS +a " + path}
}

// sameHostname sets the hostname to what it is: the permission check is
// the same as for a change, and nothing changes should it succeed.
func sameHostname() result {
	var u unix.Utsname
	unix.Uname(&u)
	name := unix.ByteSliceToString(u.Nodename[:])
	if err := unix.Sethostname([]byte(name)); err != nil {
		return failErr("sethostname", err, "sethostname "+name)
	}
	return result{Op: "sethostname", OK: true, Detail: "sethostname " + name}
}

func sameDomainname() result {
	var u unix.Utsname
	unix.Uname(&u)
	name := unix.ByteSliceToString(u.Domainname[:])
	if err := unix.Setdomainname([]byte(name)); err != nil {
		return failErr("setdomainname", err, "setdomainname "+name)
	}
	return result{Op: "setdomainname", OK: true, Detail: "setdomainname " + name}
}

// clockSetNow sets CLOCK_REALTIME to the time it reads (a jump of
// microseconds should it succeed).
func clockSetNow() result {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_REALTIME, &ts)
	if err := unix.ClockSettime(unix.CLOCK_REALTIME, &ts); err != nil {
		return failErr("clock-settime", err, "clock_settime(CLOCK_REALTIME)")
	}
	return result{Op: "clock-settime", OK: true, Detail: "clock_settime(CLOCK_REALTIME)"}
}

// syslogReadAll reads the kernel log buffer (dmesg): with
// kernel.dmesg_restrict=1 only CAP_SYSLOG may.
func syslogReadAll() result {
	buf := make([]byte, 4096)
	n, err := unix.Klogctl(unix.SYSLOG_ACTION_READ_ALL, buf)
	if err != nil {
		return failErr("syslog", err, "syslog(SYSLOG_ACTION_READ_ALL)")
	}
	return result{Op: "syslog", OK: true, Detail: fmt.Sprintf("syslog(SYSLOG_ACTION_READ_ALL) read %d bytes", n)}
}

// capEff reports the effective, permitted and bounding sets as
// /proc/self/status shows them.
func capEff() result {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return failErr("capeff", err, "read /proc/self/status")
	}
	var sets []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "Cap") {
			sets = append(sets, strings.Join(strings.Fields(line), " "))
		}
	}
	return result{Op: "capeff", OK: true, Detail: strings.Join(sets, ", ")}
}

// scanEnviron reads the environment of every process /proc shows and says
// whether any holds needle: sbx's own environment, with the secrets it
// strips from the command's, must be out of the command's reach.
func scanEnviron(needle string) result {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	read := 0
	for _, d := range dirs {
		b, err := os.ReadFile(d + "/environ")
		if err != nil {
			continue
		}
		read++
		if bytes.Contains(b, []byte(needle)) {
			return result{Op: "scan-environ", OK: true, Detail: "found in " + d + "/environ"}
		}
	}
	return fail("scan-environ", "ENOENT", fmt.Sprintf("not in the environment of any of %d processes (%d readable)", len(dirs), read))
}
