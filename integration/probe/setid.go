//go:build linux

package main

import (
	"fmt"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Set-id files and other processes' file tables (issue 27 §2, §3): the
// actions the VM matrix's busybox guests run too, each through the raw
// system call so that the errno is the filter's or the kernel's.

const setidUsage = `  setid chmod|fchmod|fchmodat2|openat|tmpfile|mknodat PATH MODE   (MODE octal; tmpfile: in PATH's directory, linked as PATH)
  pidfd-getfd | kcmp | openat2 PATH | statfs-nosuid PATH | euid`

// setidAction runs the actions of this file; need checks the number of
// arguments.
func setidAction(op string, args []string, need func(int) error) (result, error) {
	n := map[string]int{"setid": 3, "openat2": 1, "statfs-nosuid": 1}[op]
	if err := need(n); err != nil {
		return result{}, err
	}
	switch op {
	case "setid":
		mode, err := parseMode(args[2])
		if err != nil {
			return result{}, err
		}
		return setidOp(args[0], args[1], mode), nil
	case "openat2":
		return openat2Op(args[0]), nil
	case "statfs-nosuid":
		return statfsNosuid(args[0]), nil
	}
	return otherProcOp(op), nil
}

// setidOp is "setid CALL PATH MODE".
func setidOp(call, path string, mode uint32) result {
	op := "setid-" + call
	p, err := unix.BytePtrFromString(path)
	if err != nil {
		return failErr(op, err, path)
	}
	step := fmt.Sprintf("%s %s %#o", call, path, mode)
	sys := func(nr uintptr, a ...uintptr) result {
		var args [6]uintptr
		copy(args[:], a)
		r, _, e := unix.Syscall6(nr, args[0], args[1], args[2], args[3], args[4], args[5])
		if e != 0 {
			return fail(op, errnoName(int(e)), step)
		}
		if nr == unix.SYS_OPENAT {
			unix.Close(int(r))
		}
		return result{Op: op, OK: true, Detail: step}
	}
	atFDCWD := unix.AT_FDCWD
	cwd := uintptr(atFDCWD)
	ptr, m := uintptr(unsafe.Pointer(p)), uintptr(mode)
	switch call {
	case "chmod":
		return sys(unix.SYS_FCHMODAT, cwd, ptr, m)
	case "fchmodat2":
		return sys(unix.SYS_FCHMODAT2, cwd, ptr, m, 0)
	case "fchmod":
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return failErr(op, err, "open "+path)
		}
		defer unix.Close(fd)
		return sys(unix.SYS_FCHMOD, uintptr(fd), m)
	case "openat":
		return sys(unix.SYS_OPENAT, cwd, ptr, unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC, m)
	case "mknodat":
		return sys(unix.SYS_MKNODAT, cwd, ptr, unix.S_IFREG|m, 0)
	case "tmpfile":
		dir := path
		for len(dir) > 1 && dir[len(dir)-1] != '/' {
			dir = dir[:len(dir)-1]
		}
		fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, mode)
		if err != nil {
			return failErr(op, err, "O_TMPFILE in "+dir)
		}
		defer unix.Close(fd)
		if err := unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), unix.AT_FDCWD, path, unix.AT_SYMLINK_FOLLOW); err != nil {
			return failErr(op, err, "linkat "+path)
		}
		return result{Op: op, OK: true, Detail: step}
	}
	return fail(op, "", "unknown call "+call)
}

// otherProcOp tries what reaches into a process's file table: pidfd_getfd
// and kcmp, on the probe itself (its parent may be outside its PID
// namespace; the filter refuses the call whatever the target).
func otherProcOp(op string) result {
	switch op {
	case "pidfd-getfd":
		pidfd, err := unix.PidfdOpen(unix.Getpid(), 0)
		if err != nil {
			return failErr(op, err, "pidfd_open")
		}
		defer unix.Close(pidfd)
		fd, err := unix.PidfdGetfd(pidfd, 0, 0)
		if err != nil {
			return failErr(op, err, "pidfd_getfd")
		}
		unix.Close(fd)
		return result{Op: op, OK: true, Detail: "pidfd_getfd of its own fd 0"}
	case "kcmp":
		const kcmpFile = 0
		_, _, e := unix.Syscall6(unix.SYS_KCMP, uintptr(unix.Getpid()), uintptr(unix.Getpid()), kcmpFile, 0, 0, 0)
		if e != 0 {
			return fail(op, errnoName(int(e)), "kcmp")
		}
		return result{Op: op, OK: true, Detail: "kcmp"}
	case "euid":
		return result{Op: op, OK: true, Detail: strconv.Itoa(unix.Geteuid())}
	}
	return fail(op, "", "unknown")
}

// openat2Op creates path with openat2.
func openat2Op(path string) result {
	fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{Flags: unix.O_WRONLY | unix.O_CREAT | unix.O_CLOEXEC, Mode: 0o644})
	if err != nil {
		return failErr("openat2", err, "openat2 "+path)
	}
	unix.Close(fd)
	return result{Op: "openat2", OK: true, Detail: "openat2 " + path}
}

// statfsNosuid says whether path's mount is nosuid: detail "nosuid" or
// "suid".
func statfsNosuid(path string) result {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return failErr("statfs-nosuid", err, "statfs "+path)
	}
	if st.Flags&unix.ST_NOSUID != 0 {
		return result{Op: "statfs-nosuid", OK: true, Detail: "nosuid"}
	}
	return result{Op: "statfs-nosuid", OK: true, Detail: "suid"}
}
