//go:build darwin

package darwin

import (
	"github.com/sbx-sandbox/sbx/internal/enforce"

	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrStart wraps errors of the exec itself (sandbox-exec or, for
// LaunchDirect, the command missing or not executable), as opposed to
// failures to set up the sandbox.
var ErrStart = errors.New("start")

// Process is a started command.
type Process struct {
	Pid  int
	done chan exitResult
}

type exitResult struct {
	status syscall.WaitStatus
	rusage syscall.Rusage
	err    error
}

// Start launches spec under p: /usr/bin/sandbox-exec with the profile and
// its parameters, which applies the profile and then execs the command (same
// pid), or the command itself for LaunchDirect. The command leads a new
// session, so Signal reaches its whole process group. sandbox-exec gives the
// command its absolute path as argv[0] (see Plan.Command).
//
// IMPORTANT: unverified on Apple hardware. sandbox-exec reports its own
// failures (a profile it cannot compile, a command it cannot exec) on stderr
// and with its own exit status, which the report cannot tell apart from the
// command's.
func Start(p *Plan, spec enforce.Command) (*Process, error) {
	if len(spec.Argv) == 0 {
		return nil, fmt.Errorf("%w: empty argv", ErrStart)
	}
	if err := markInheritedCloexec(); err != nil {
		return nil, err
	}
	path, argv := p.Command(spec.Path, spec.Argv)
	attr := &syscall.ProcAttr{
		Dir:   spec.Dir,
		Env:   spec.Env,
		Files: []uintptr{spec.Stdin.Fd(), spec.Stdout.Fd(), spec.Stderr.Fd()},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	}
	pid, err := syscall.ForkExec(path, argv, attr)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrStart, path, err)
	}
	pr := &Process{Pid: pid, done: make(chan exitResult, 1)}
	go func() { pr.done <- wait(pid) }()
	return pr, nil
}

// Wait waits for the command to end.
func (pr *Process) Wait() (syscall.WaitStatus, syscall.Rusage, error) {
	r := <-pr.done
	return r.status, r.rusage, r.err
}

// Signal sends sig to the command's process group (it leads a new session).
func (pr *Process) Signal(sig syscall.Signal) error {
	return syscall.Kill(-pr.Pid, sig)
}

func wait(pid int) exitResult {
	var r exitResult
	for {
		_, err := syscall.Wait4(pid, &r.status, 0, &r.rusage)
		if err != syscall.EINTR {
			r.err = err
			return r
		}
	}
}

// ExecFailureStatus maps an exec error to the shell convention: 127 when the
// program does not exist, 126 when it cannot be executed.
func ExecFailureStatus(err error) int {
	if errors.Is(err, unix.ENOENT) {
		return 127
	}
	return 126
}

// markInheritedCloexec sets close-on-exec on every fd above 2, so fds sbx
// inherited from its own parent do not reach the command (Go opens its own
// with O_CLOEXEC already). macOS has no close_range; /dev/fd lists the
// process's open fds.
func markInheritedCloexec() error {
	entries, err := os.ReadDir("/dev/fd")
	if err != nil {
		return fmt.Errorf("list open fds: %w", err)
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
	return nil
}
