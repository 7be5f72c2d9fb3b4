//go:build linux

package seccomp

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// LoadSeccomp installs prog on the calling thread with
// seccomp(SECCOMP_SET_MODE_FILTER, 0, prog).
//
// It deliberately passes no SECCOMP_FILTER_FLAG_TSYNC: only the launcher
// thread that is about to execve the command is filtered, not the rest of
// the Go runtime. The caller must hold runtime.LockOSThread for the rest of
// that thread's life and must have set no_new_privs on it; without
// no_new_privs LoadSeccomp refuses rather than relying on CAP_SYS_ADMIN.
// Errors are prefixed "seccomp: "; the kernel's errno is wrapped (EINVAL if
// the kernel lacks CONFIG_SECCOMP_FILTER or rejects the program).
func LoadSeccomp(prog []unix.SockFilter) error {
	if err := checkLoadable(prog); err != nil {
		return err
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if errno != 0 {
		return fmt.Errorf("seccomp: %w", errno)
	}
	return nil
}

// checkLoadable refuses a program the kernel would reject for its length,
// and a thread without no_new_privs.
func checkLoadable(prog []unix.SockFilter) error {
	if len(prog) == 0 || len(prog) > bpfMaxInsns {
		return fmt.Errorf("seccomp: program length %d out of range 1..%d", len(prog), bpfMaxInsns)
	}
	nnp, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
	if err != nil {
		return fmt.Errorf("seccomp: prctl(PR_GET_NO_NEW_PRIVS): %w", err)
	}
	if nnp != 1 {
		return errors.New("seccomp: no_new_privs is not set on the calling thread")
	}
	return nil
}

// LoadSeccompListener is LoadSeccomp with SECCOMP_FILTER_FLAG_NEW_LISTENER:
// it returns the close-on-exec listener fd of the new filter. It asks for
// SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV too (Linux 5.19), so a caller that
// the supervisor is already answering is not interrupted by every signal
// (Go programs get SIGURG often), and drops it on kernels without it.
// Errors are prefixed "seccomp: "; EBUSY means a filter of the calling
// thread already has a listener (sbx inside sbx), EINVAL a kernel without
// user notification (before 5.0).
func LoadSeccompListener(prog []unix.SockFilter) (int, error) {
	if err := checkLoadable(prog); err != nil {
		return -1, err
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	flags := uintptr(unix.SECCOMP_FILTER_FLAG_NEW_LISTENER | unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV)
	fd, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
	if errno == unix.EINVAL {
		fd, _, errno = unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, uintptr(unsafe.Pointer(&fprog)))
	}
	runtime.KeepAlive(prog)
	if errno != 0 {
		return -1, fmt.Errorf("seccomp: new listener: %w", errno)
	}
	// The kernel makes the listener O_CLOEXEC; make sure, because this fd
	// must never reach the command.
	if _, err := unix.FcntlInt(fd, unix.F_SETFD, unix.FD_CLOEXEC); err != nil {
		unix.Close(int(fd))
		return -1, fmt.Errorf("seccomp: listener: set close-on-exec: %w", err)
	}
	return int(fd), nil
}
