//go:build linux

package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// forgeMain is `probe forge-status exit|exec-failed|kill-init [FILE]`: the
// command of issue 27 §3 that tries to write its own report. Under an
// unprivileged launch PID 1 of the call is sbx's stage, which reports the
// command's wait status on a pipe. The probe copies every pipe of PID 1 it
// can reach, by /proc/1/fd/N and by pidfd_getfd, and writes a forged
// message into each: exit 0 (exit), or the stage's "exec failed" marker
// with ENOENT (exec-failed). kill-init sends PID 1 SIGTERM instead (a Go
// stage exits 2 on it). It prints its JSON line (ok: it wrote a forged
// message somewhere), creates FILE when given, and exits 3, then 0 for
// exec-failed, so that the report can be checked against what it did.
func forgeMain(args []string) int {
	if len(args) < 1 || len(args) > 2 {
		fmt.Fprintln(os.Stderr, "probe: forge-status exit|exec-failed|kill-init [FILE]")
		return 2
	}
	var msg []byte
	code := 3
	switch args[0] {
	case "exit":
		msg = binary.LittleEndian.AppendUint32(nil, 0) // "exited 0"
	case "exec-failed":
		msg = binary.LittleEndian.AppendUint32(nil, 0xFFFFFFFF)
		msg = binary.LittleEndian.AppendUint32(msg, uint32(unix.ENOENT))
		code = 0
	case "kill-init":
	default:
		fmt.Fprintf(os.Stderr, "probe: forge-status %q: want exit, exec-failed or kill-init\n", args[0])
		return 2
	}
	r := result{Op: "forge-status"}
	if msg == nil {
		err := unix.Kill(1, unix.SIGTERM)
		r.OK, r.Errno, r.Detail = err == nil, errName(err), "kill 1 SIGTERM"
		// Give a stage that dies of it time to take the namespace down.
		unix.Nanosleep(&unix.Timespec{Sec: 1}, nil)
	} else {
		r = forgeStatus(msg)
	}
	if len(args) == 2 {
		if err := os.WriteFile(args[1], []byte("ran\n"), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "probe: %v\n", err)
		}
	}
	enc := json.NewEncoder(os.Stdout)
	enc.Encode(r)
	return code
}

// forgeStatus writes msg into every pipe of PID 1 it can copy; ok when it
// wrote into at least one. Errno is the first refusal met (the listing of
// /proc/1/fd, then pidfd_getfd).
func forgeStatus(msg []byte) result {
	r := result{Op: "forge-status"}
	var wrote, refused []string
	refuse := func(what string, err error) {
		if r.Errno == "" {
			r.Errno = errName(err)
		}
		refused = append(refused, fmt.Sprintf("%s: %v", what, err))
	}
	write := func(what string, fd int) {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
			return
		}
		if _, err := unix.Write(fd, msg); err != nil {
			refuse("write "+what, err)
			return
		}
		wrote = append(wrote, what)
	}
	// By /proc/1/fd: a pipe's magic link opens the pipe itself, writable.
	ents, err := os.ReadDir("/proc/1/fd")
	if err != nil {
		refuse("/proc/1/fd", err)
	}
	for _, e := range ents {
		p := "/proc/1/fd/" + e.Name()
		if l, _ := os.Readlink(p); !strings.HasPrefix(l, "pipe:") {
			continue
		}
		fd, err := unix.Open(p, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			refuse("open "+p, err)
			continue
		}
		write(p, fd)
		unix.Close(fd)
	}
	// By pidfd_getfd (which the seccomp filter may refuse on its own).
	pidfd, err := unix.PidfdOpen(1, 0)
	if err != nil {
		refuse("pidfd_open 1", err)
	} else {
		for n := 3; n < 16; n++ {
			fd, err := unix.PidfdGetfd(pidfd, n, 0)
			if err == unix.EBADF {
				continue
			}
			if err != nil {
				refuse("pidfd_getfd "+strconv.Itoa(n), err)
				continue
			}
			write("pidfd_getfd "+strconv.Itoa(n), fd)
			unix.Close(fd)
		}
		unix.Close(pidfd)
	}
	r.OK = len(wrote) > 0
	r.Detail = fmt.Sprintf("wrote %q; refused %q", wrote, refused)
	return r
}

// errName is err's errno name, or its text when it has none.
func errName(err error) string {
	if err == nil {
		return ""
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return errnoName(int(e))
	}
	return err.Error()
}
