//go:build linux

package linux

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	supervise "github.com/sbx-sandbox/sbx/internal/enforce/linux/supervisor"
)

// stageFailure is the stage's side of stageStatus for a failure: marker
// (stageExecFailed, stageNoMounts), then errno.
func stageFailure(status *os.File, marker uint32, errno syscall.Errno) {
	var b [8]byte
	binary.LittleEndian.PutUint32(b[:4], marker)
	binary.LittleEndian.PutUint32(b[4:], uint32(errno))
	status.Write(b[:])
}

// StageCommand is the hidden subcommand that runs StageMain.
const StageCommand = "__stage"

// StageMain is the stage side of startStage. It returns only on failure,
// with the exit status to use (125 for sandbox setup, 126/127 for exec).
func StageMain() int {
	if len(os.Args) > 2 && os.Args[2] == limitedExecArg {
		return limitedExec(os.Args[3:])
	}
	// A stage cloned into a new network namespace brings its loopback up
	// while the plan is still being compiled (a plan for this stage has
	// the namespace: forStage): ~0.1-0.2 ms of kernel work, off the path.
	var loopback error
	netns := len(os.Args) > 2 && os.Args[2] == stageNetnsArg
	if netns {
		loopback = loopbackUp()
	}
	// Main thread is locked by the sbx binary's init; the restrictions
	// below apply to it and to the program it execs.
	f := os.NewFile(stagePlanFD, "stage-plan")
	var pl stagePayload
	err := json.NewDecoder(f).Decode(&pl)
	if err != nil || pl.StatusFD == 0 {
		f.Close()
	} else {
		// The plan pipe is also the stage's lifeline: sbx keeps its end open
		// while the call runs, and its death (even of SIGKILL) closes it.
		go func() {
			io.Copy(io.Discard, f)
			os.Exit(137)
		}()
	}
	if err == nil && pl.Plan == nil {
		err = errors.New("no plan")
	}
	if err == nil {
		err = pl.expand()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "sbx stage: read plan: %v\n", err)
		return 125
	}
	spec := pl.Plan
	// The PID and network namespaces came with the stage's clone; a mount
	// namespace it makes itself, so that a stage can be spawned before
	// the plan says whether one is needed (see Prestart).
	err = enterNamespaces(spec, stageCloneFlags)
	if err == nil {
		err = privateMounts(spec)
		if errors.Is(err, unix.EPERM) && pl.StatusFD > 0 {
			// The namespaces were made, but no mount can be: a sandbox
			// around sbx refuses mount (sbx in sbx on a kernel without
			// Landlock, where the uid map write went through). Nothing
			// has run: sbx falls back to a launch without namespaces.
			stageFailure(os.NewFile(uintptr(pl.StatusFD), "stage-status"), stageNoMounts, unix.EPERM)
			return 125
		}
	}
	switch {
	case err != nil:
	case spec.NewNetNS != netns:
		err = fmt.Errorf("the plan's network namespace (%t) is not the stage's (%t)", spec.NewNetNS, netns)
	case netns:
		err = loopback
	}
	if err == nil {
		err = setupMounts(spec, mountHooks{proc: mountProcHere})
	}
	if err == nil && pl.ProxySocket > 0 {
		var addr string
		if addr, err = sendProxy(pl.ProxySocket); err == nil {
			pl.Env = withProxyEnv(pl.Env, addr)
		}
	}
	if err == nil {
		err = dropCapabilities(spec.Capabilities, false)
	}
	if err == nil {
		var lis supervise.Listener
		lis, err = restrictThread(spec)
		if err == nil && pl.ListenerSocket > 0 {
			// Before exec, so the parent is supervising by the time the
			// command makes its first supervised call (which would wait for
			// it anyway). Neither fd reaches the command.
			err = supervise.SendListener(pl.ListenerSocket, lis)
			unix.Close(pl.ListenerSocket)
		}
		if lis.FD >= 0 {
			unix.Close(lis.FD)
		}
	}
	if err == nil {
		err = markInheritedCloexec()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "sbx stage: %v\n", err)
		return 125
	}
	if err := unix.Chdir(pl.Dir); err != nil {
		fmt.Fprintf(os.Stderr, "sbx: chdir %s: %v\n", pl.Dir, err)
		return 125
	}
	if pl.StatusFD > 0 {
		return stageInit(pl)
	}
	if err := setRlimits(spec.Rlimits); err != nil {
		fmt.Fprintf(os.Stderr, "sbx stage: %v\n", err)
		return 125
	}
	err = unix.Exec(pl.Path, pl.Argv, pl.Env)
	fmt.Fprintf(os.Stderr, "sbx: %s: %v\n", pl.Argv[0], err)
	return ExecFailureStatus(err)
}

// stageInit runs the command as a child of the stage, which is PID 1 of the
// call's PID namespace: it reaps orphans and reports the command's wait
// status on StatusFD. sbx signals the command directly (Process.Signal), so
// the stage subscribes to none: that would cost its start a round trip to
// the runtime's signal thread per signal. When it returns, the kernel kills
// whatever is left in the namespace, and if sbx dies first, the stage's
// parent-death signal does.
func stageInit(pl stagePayload) int {
	// The mark of a call's PID namespace init, which sbx servers refuse
	// (supervisor/callpeer.go): set before the command exists, by the stage itself
	// (only a task names itself), on this main thread, whose name is the
	// process's.
	if err := supervise.NameCallInit(); err != nil {
		fmt.Fprintf(os.Stderr, "sbx stage: %v\n", err)
		return 125
	}
	status := os.NewFile(uintptr(pl.StatusFD), "stage-status")
	// The command will run as the stage's uid, without capabilities, in
	// the stage's PID namespace: while the stage is dumpable, the command
	// may open /proc/1/fd/N or pidfd_getfd the status pipe and write its
	// own wait status (issue 27). A process that is not dumpable lets
	// only holders of CAP_SYS_PTRACE in its user namespace at its fds,
	// memory and environment, which sbx has (it made that namespace) and
	// the command has not. Everything that needed the stage dumpable is
	// done by now: sbx wrote the uid map before the stage's exec, and took
	// the seccomp listener (supervise.SendListener waits for its ack). The fork
	// below keeps the flag only until the command's exec resets it.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "sbx stage: prctl(PR_SET_DUMPABLE): %v\n", err)
		return 125
	}
	// The fork runs on this (restricted, locked) main thread, so the command
	// inherits its restrictions.
	path, argv, err := limitedArgv(pl)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sbx stage: %v\n", err)
		return 125
	}
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{Env: pl.Env,
		Files: []uintptr{0, 1, 2}, Sys: &syscall.SysProcAttr{Setsid: true, Setctty: pl.Terminal}})
	if err != nil {
		// sbx reports it, as it reports a thread launch's: the errno
		// after the marker (see stageStatus).
		var errno syscall.Errno
		if !errors.As(err, &errno) {
			errno = syscall.EINVAL
		}
		stageFailure(status, stageExecFailed, errno)
		return stageExitCode(stageExecFailed, errno)
	}
	for {
		var ws syscall.WaitStatus
		wpid, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "sbx stage: wait: %v\n", err)
			return 125
		}
		if wpid == pid {
			var b [4]byte
			binary.LittleEndian.PutUint32(b[:], uint32(ws))
			status.Write(b[:])
			// sbx checks the message against this exit code, which it
			// reaps from the kernel (see stageStatus).
			return stageExitCode(uint32(ws), 0)
		}
	}
}

// ExecFailureStatus maps an exec error to the shell convention: 127 when the
// command does not exist, 126 when it cannot be executed, and 125 (sbx
// refused the call) for E2BIG: arguments and environment too large for the
// kernel are bad input, not a file that is not executable.
func ExecFailureStatus(err error) int {
	switch {
	case errors.Is(err, unix.ENOENT):
		return 127
	case errors.Is(err, unix.E2BIG):
		return 125
	}
	return 126
}
