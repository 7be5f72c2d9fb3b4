//go:build linux

package main

// Actions that hide from the seccomp supervisor what a call reaches: a path
// in memory it cannot read, a file with no name, a root that no longer
// exists. Each is refused by the kernel's filter or by a supervisor that
// fails closed; the probe reports the errno of the call that matters.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// pathAt calls fchmodat (op "chmod", mode) or mkdirat (op "mkdir") on
// AT_FDCWD with the path at p, a pointer into memory the probe arranged.
func pathAt(op string, p unsafe.Pointer, mode uint32) syscall.Errno {
	nr := uintptr(unix.SYS_FCHMODAT)
	if op == "mkdir" {
		nr = unix.SYS_MKDIRAT
	}
	cwd := unix.AT_FDCWD // a variable: -100 as a constant does not convert to uintptr
	_, _, e := unix.Syscall(nr, uintptr(cwd), uintptr(p), uintptr(mode))
	return e
}

// hiddenPath runs op (chmod PATH MODE, or mkdir PATH) with the path placed
// where the supervisor cannot read it: "secret" memory of memfd_secret(2),
// which process_vm_readv cannot read, or an "unreadable" PROT_NONE page,
// which nobody can (the kernel itself then says EFAULT). The result is the
// errno of the first step that fails, named in detail.
func hiddenPath(where, op, path string, mode uint32) result {
	name := where + "-" + op
	page := unix.Getpagesize()
	var mem []byte
	switch where {
	case "secret":
		fd, _, e := unix.Syscall(unix.SYS_MEMFD_SECRET, unix.O_CLOEXEC, 0, 0)
		if e != 0 {
			return fail(name, errnoName(int(e)), "memfd_secret")
		}
		defer unix.Close(int(fd))
		if err := unix.Ftruncate(int(fd), int64(page)); err != nil {
			return failErr(name, err, "ftruncate memfd_secret")
		}
		m, err := unix.Mmap(int(fd), 0, page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			return failErr(name, err, "mmap memfd_secret")
		}
		mem = m
	case "unreadable":
		m, err := unix.Mmap(-1, 0, page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return failErr(name, err, "mmap")
		}
		mem = m
	default:
		return fail(name, "", "unknown memory "+where)
	}
	defer unix.Munmap(mem)
	copy(mem, path)
	mem[len(path)] = 0
	if where == "unreadable" {
		if err := unix.Mprotect(mem, unix.PROT_NONE); err != nil {
			return failErr(name, err, "mprotect")
		}
	}
	step := fmt.Sprintf("%s %s (path in %s memory)", op, path, where)
	if e := pathAt(op, unsafe.Pointer(&mem[0]), mode); e != 0 {
		return fail(name, errnoName(int(e)), step)
	}
	return result{Op: name, OK: true, Detail: step}
}

// chmodOp is chmod(2) with an ordinary path: the neighbour of hiddenPath.
func chmodOp(path string, mode uint32) result {
	if err := unix.Fchmodat(unix.AT_FDCWD, path, mode, 0); err != nil {
		return failErr("chmod", err, "chmod "+path)
	}
	return result{Op: "chmod", OK: true, Detail: "chmod " + path}
}

// tmpfileLink creates an unnamed file in dir (O_TMPFILE) and gives it the
// name newName: by linkat(fd, "", AT_FDCWD, new, AT_EMPTY_PATH) ("empty";
// Linux 6.10 lets the opener do it, before that it needs
// CAP_DAC_READ_SEARCH) or by linkat(AT_FDCWD, "/proc/self/fd/N", AT_FDCWD,
// new, AT_SYMLINK_FOLLOW) ("proc", what open(2) documents). /proc/PID/fd/N
// of such a file reads "/dir/#N (deleted)".
func tmpfileLink(form, dir, newName string) result {
	op := "tmpfile-link-" + form
	if form == "empty-nocaps" {
		// As a sandboxed command does it: without CAP_DAC_READ_SEARCH,
		// which linkat AT_EMPTY_PATH needs before Linux 6.10 (from 6.10
		// the opener's own credentials suffice, so they change first).
		// Capabilities are per thread: the open and the linkat must run
		// on the thread that dropped them (the probe exits after).
		runtime.LockOSThread()
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			return failErr(op, err, "capget")
		}
		data[0].Effective, data[1].Effective = 0, 0
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			return failErr(op, err, "capset")
		}
	}
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return failErr(op, err, "open O_TMPFILE "+dir)
	}
	defer unix.Close(fd)
	if _, err := unix.Write(fd, []byte("gitdir: /somewhere/else\n")); err != nil {
		return failErr(op, err, "write")
	}
	step := "linkat " + newName
	switch form {
	case "empty", "empty-nocaps":
		err = unix.Linkat(fd, "", unix.AT_FDCWD, newName, unix.AT_EMPTY_PATH)
	case "proc":
		err = unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+itoa(fd), unix.AT_FDCWD, newName, unix.AT_SYMLINK_FOLLOW)
	default:
		return fail(op, "", "unknown form "+form)
	}
	if err != nil {
		return failErr(op, err, step)
	}
	return result{Op: op, OK: true, Detail: step}
}

// chrootThen opens dir, makes jail, optionally unshares a user and a mount
// namespace (ns "userns": the probe runs itself again in them, because a
// multithreaded process cannot unshare a user namespace), chroots into
// jail, removes it (so /proc/PID/root reads "(deleted)"), and then does op
// on name through the dir fd opened before: chmod 0777, chown -1 -1, or
// mkdir. errno is op's; detail lists every step's outcome.
func chrootThen(ns, op, dir, name, jail string) result {
	rop := "chroot-then-" + op
	if ns == "userns" {
		return inUserNS(rop, op, dir, name, jail)
	}
	var steps []string
	note := func(step string, err error) {
		if err == nil {
			steps = append(steps, step+"=ok")
			return
		}
		steps = append(steps, step+"="+failErr("", err, "").Errno)
	}
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return failErr(rop, err, "open "+dir)
	}
	defer unix.Close(dfd)
	pfd, err := unix.Open(filepath.Dir(jail), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return failErr(rop, err, "open "+filepath.Dir(jail))
	}
	defer unix.Close(pfd)
	if err := unix.Mkdir(jail, 0o755); err != nil {
		return failErr(rop, err, "mkdir "+jail)
	}
	err = unix.Chroot(jail)
	note("chroot", err)
	if err == nil {
		note("chdir", unix.Chdir("/"))
		note("rmdir", unix.Unlinkat(pfd, filepath.Base(jail), unix.AT_REMOVEDIR))
	}
	switch op {
	case "chmod":
		err = unix.Fchmodat(dfd, name, 0o777, 0)
	case "chown":
		err = unix.Fchownat(dfd, name, -1, -1, 0)
	case "mkdir":
		err = unix.Mkdirat(dfd, name, 0o755)
	default:
		return fail(rop, "", "unknown op "+op)
	}
	detail := strings.Join(append(steps, op+" "+name), " ")
	if err != nil {
		return failErr(rop, err, detail)
	}
	return result{Op: rop, OK: true, Detail: detail}
}

// inUserNS runs "chroot-then plain ..." in a new user and mount namespace
// (no id maps: the probe's ids show as the overflow id there, its
// credentials are unchanged; an unprivileged command could not write maps
// in the sandbox anyway) and passes its result on, with the step.
func inUserNS(rop, op, dir, name, jail string) result {
	self, err := os.Executable()
	if err != nil {
		return failErr(rop, err, "executable")
	}
	cmd := exec.Command(self, "chroot-then", "plain", op, dir, name, jail)
	// Capabilities in a user namespace whose ids are unmapped are lost at
	// execve, unless ambient: keep CAP_SYS_CHROOT, which the new namespace
	// gives, across the exec of the probe.
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWUSER | unix.CLONE_NEWNS,
		AmbientCaps: []uintptr{unix.CAP_SYS_CHROOT}}
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return failErr(rop, err, "unshare(CLONE_NEWUSER|CLONE_NEWNS) and run")
	}
	r, err := parseResult(out)
	if err != nil {
		return fail(rop, "", "child: "+err.Error())
	}
	r.Detail = "unshare=ok " + r.Detail
	return r
}

func parseResult(b []byte) (result, error) {
	var r result
	s := strings.TrimSpace(string(b))
	if err := json.Unmarshal([]byte(s), &r); err != nil || r.Op == "" {
		return result{}, fmt.Errorf("no result in %q", s)
	}
	return r, nil
}

func parseMode(s string) (uint32, error) {
	m, err := strconv.ParseUint(s, 8, 32)
	if err != nil {
		return 0, fmt.Errorf("bad mode %q", s)
	}
	return uint32(m), nil
}
