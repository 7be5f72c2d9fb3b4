//go:build linux

package linux

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"

	"github.com/sbx-sandbox/sbx/internal/enforce"
	"golang.org/x/sys/unix"
)

// startStage re-executes sbx as a hidden stage inside new user, PID and
// (as planned) network namespaces, and sends it the plan: see spawnStage
// and stageProc.run.
func startStage(p *Plan, spec enforce.Command, sup *supervisor, cg *callCgroup) (*Process, error) {
	st, err := spawnStageLocked(stageNamespaces{net: p.NewNetNS, pid: p.NewPIDNS}, [3]*os.File{spec.Stdin, spec.Stdout, spec.Stderr}, cg)
	if err != nil {
		return nil, err
	}
	return st.run(p, spec, sup)
}

// spawnStageLocked is spawnStage from a thread of its own, locked until the
// stage is reaped. The stage's parent-death signal (SIGKILL) fires when the
// thread that forked it ends, and a thread ends when a goroutine that
// locked it returns, as every thread launch's launcher does: a stage forked
// by a call's goroutine from a thread that a concurrent thread launch
// (a server's danger-full-access call) then took and ended was killed,
// its call ending in SIGKILL with no cause.
func spawnStageLocked(ns stageNamespaces, stdio [3]*os.File, cg *callCgroup) (*stageProc, error) {
	type spawned struct {
		st  *stageProc
		err error
	}
	c := make(chan spawned, 1)
	go func() {
		runtime.LockOSThread()
		st, err := spawnStage(ns, stdio, cg)
		c <- spawned{st, err}
		if err != nil {
			runtime.UnlockOSThread() // no child: the thread may serve on
			return
		}
		<-st.reaped // then the thread ends with this goroutine
	}()
	r := <-c
	return r.st, r.err
}

// stageProc is a started stage waiting for its plan on its fd 3.
type stageProc struct {
	pid          int
	ns           stageNamespaces
	stdio        [3]*os.File
	plan         *os.File // fd 3's write end: the plan, then the stage's lifeline
	status       *os.File // the command's wait status (ns.pid), or nil
	listenerSock int      // where the stage's fd 4 sends the seccomp listener
	// reaped is closed once the stage is reaped: until then the thread
	// that forked it must not end, or its parent-death signal fires.
	reaped chan struct{}
}

// stageNamespaces are the namespaces a stage is cloned into besides its
// user, UTS and IPC ones.
type stageNamespaces struct{ net, pid bool }

// spawnStage re-executes sbx as a hidden stage, with stdio as its fds 0-2,
// in new user, UTS and IPC namespaces and those of ns. The parent,
// unrestricted, writes the uid/gid maps. The stage then waits for its plan
// (stageProc.run); a mount namespace, when the plan needs one, it makes
// itself.
func spawnStage(ns stageNamespaces, stdio [3]*os.File, cg *callCgroup) (*stageProc, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("stage pipe: %w", err)
	}
	defer r.Close()
	// The stage names its seccomp listener on a socketpair (sbx takes it
	// with pidfd_getfd): its fd 4, close-on-exec there before the command
	// runs.
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("stage: listener socketpair: %w", err)
	}
	defer unix.Close(pair[1])
	st := &stageProc{ns: ns, stdio: stdio, plan: w, listenerSock: pair[0], reaped: make(chan struct{})}
	files := []uintptr{stdio[0].Fd(), stdio[1].Fd(), stdio[2].Fd(), r.Fd(), uintptr(pair[1])}
	// A stage that is PID 1 reports the command's raw wait status on a pipe:
	// as init it cannot die of the command's signal itself.
	if ns.pid {
		sr, sw, err := os.Pipe()
		if err != nil {
			st.close()
			return nil, fmt.Errorf("stage status pipe: %w", err)
		}
		defer sw.Close()
		st.status = sr
		files = append(files, sw.Fd())
	}
	flags := uintptr(unix.CLONE_NEWUSER | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC)
	if ns.net {
		flags |= unix.CLONE_NEWNET
	}
	if ns.pid {
		flags |= unix.CLONE_NEWPID
	}
	uid, gid := os.Getuid(), os.Getgid()
	sys := &syscall.SysProcAttr{
		Setsid: true, Pdeathsig: syscall.SIGKILL, Cloneflags: flags,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		// The stage keeps the caller's uid inside the namespace (so files
		// keep their owner and git its safe.directory view), so exec would
		// drop the capabilities it needs for loopback and mounts; carry
		// just those across as ambient capabilities, and CAP_SETPCAP to
		// empty the bounding set and lock the securebits. The stage drops
		// them all before the command's exec (dropCapabilities).
		AmbientCaps: []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP},
	}
	cg.setCgroupFD(sys)
	exe, err := os.Executable()
	if err != nil {
		st.close()
		return nil, fmt.Errorf("stage: locate sbx: %w", err)
	}
	argv := []string{"sbx", StageCommand}
	if ns.net {
		argv = append(argv, stageNetnsArg)
	}
	st.pid, err = syscall.ForkExec(exe, argv, &syscall.ProcAttr{Dir: "/", Env: []string{}, Files: files, Sys: sys})
	if err != nil {
		st.close()
		return nil, fmt.Errorf("%w: stage: clone into new user namespace: %w", ErrUserNS, err)
	}
	return st, nil
}

// run sends the stage its plan and returns the running call.
func (st *stageProc) run(p *Plan, spec enforce.Command, sup *supervisor) (*Process, error) {
	defer st.close()
	pl := stagePayload{Plan: &p.StageSpec, Path: spec.Path, Argv: spec.Argv, Dir: spec.Dir, Env: spec.Env, Terminal: spec.Terminal}
	if sup != nil {
		pl.ListenerSocket = stageListenerFD
	}
	if p.Proxy {
		pl.ProxySocket = stageListenerFD
	}
	if st.ns.pid {
		pl.StatusFD = stageStatusFD
	}
	payload, err := json.Marshal(pl.compact())
	if err != nil {
		st.kill()
		return nil, fmt.Errorf("stage payload: %w", err)
	}
	pr := &Process{Pid: st.pid, done: newExitBox(), stageInit: st.ns.pid}
	if st.ns.pid {
		// Keep the plan pipe open as the stage's lifeline (see StageMain).
		dup, err := unix.FcntlInt(st.plan.Fd(), unix.F_DUPFD_CLOEXEC, 3)
		if err != nil {
			st.kill()
			return nil, fmt.Errorf("stage: lifeline: %w", err)
		}
		pr.lifeline = os.NewFile(uintptr(dup), "stage-lifeline")
	}
	pid, status, reaped, argv0 := st.pid, st.status, st.reaped, spec.Argv[0]
	st.status = nil
	go func() {
		res := wait(pid)
		close(reaped)
		if status != nil {
			stageStatus(status, &res, argv0)
			status.Close()
		}
		pr.done.put(res)
	}()
	if _, err := st.plan.Write(payload); err != nil {
		return nil, fmt.Errorf("stage: send plan: %w", err)
	}
	if p.Proxy {
		if err := pr.takeProxy(p, st); err != nil {
			return nil, err
		}
	}
	if sup != nil {
		sup.receive(st.listenerSock, st.pid)
		st.listenerSock = -1
		pr.sup = sup
	}
	return pr, nil
}

// stageStatus reads what a stage that is PID 1 reports on its status pipe
// once sbx has reaped it (res is the stage's own exit): the command's raw
// wait status, or stageExecFailed and the errno of the exec, which becomes
// res.err as a thread launch's ForkExec error would (wrapping ErrStart, so
// the exit status is 126 or 127 and the result has the errno).
//
// The command must not write its own report (DESIGN.md invariant 8). The
// stage is not dumpable while the command runs, so the kernel keeps the
// pipe out of the command's reach (/proc/1/fd, pidfd_getfd); and the
// message must agree with the stage's exit code, which sbx reaps from the
// kernel and which the stage derives from the same status (stageExitCode).
// A message that does not, a second message, or a stage that exited
// without one after the fork (the command made it crash, say with a
// signal its Go runtime handles by exiting 2), is errStageStatus, sbx's
// error: never the command's result.
//
// IMPORTANT: were the pipe reachable after all, a message agreeing with
// the exit code could still swap an exit for a signal of the same code
// (exit 130, SIGINT) or exit 126/127 for an exec failure: the exit code is
// 8 bits, the messages it stands for are more.
func stageStatus(status *os.File, res *exitResult, argv0 string) {
	if res.err != nil || !res.status.Exited() {
		// Killed from outside its namespace (as PID 1 nothing inside can
		// kill it): sbx's SIGKILL (Signal, a timeout) or the host's. That
		// death is the call's result, whatever the pipe holds.
		return
	}
	code := res.status.ExitStatus()
	msg, err := drainPipe(status, 16)
	if err != nil {
		res.err = fmt.Errorf("%w: read: %w", errStageStatus, err)
		return
	}
	switch len(msg) {
	case 0:
		if code != 125 {
			res.err = fmt.Errorf("%w: the stage exited %d without reporting the command's status", errStageStatus, code)
		}
		// 125: a step of the stage failed before the fork, and said
		// which on stderr.
		return
	case 4:
		v := binary.LittleEndian.Uint32(msg)
		if !validWaitStatus(v) || stageExitCode(v, 0) != code {
			res.err = fmt.Errorf("%w: status %#x does not match the stage's exit %d", errStageStatus, v, code)
			return
		}
		res.status = syscall.WaitStatus(v)
		return
	case 8:
	default:
		res.err = fmt.Errorf("%w: %d bytes on the status pipe, want one message", errStageStatus, len(msg))
		return
	}
	v := binary.LittleEndian.Uint32(msg[:4])
	errno := syscall.Errno(binary.LittleEndian.Uint32(msg[4:]))
	if (v != stageExecFailed && v != stageNoMounts) || stageExitCode(v, errno) != code {
		res.err = fmt.Errorf("%w: marker %#x (errno %d) does not match the stage's exit %d", errStageStatus, v, errno, code)
		return
	}
	if v == stageNoMounts {
		res.err = fmt.Errorf("%w: the stage's mount namespace refuses mounts (a sandbox around sbx?): mount --make-rslave /: %w", ErrUserNS, errno)
		return
	}
	res.err = fmt.Errorf("%w: %s: %w", ErrStart, argv0, errno)
}

// errStageStatus: what a stage reported of the command contradicts what
// sbx reaped, or is missing; the call's result is unknown.
var errStageStatus = errors.New("stage: the command's status is not trustworthy")

// drainPipe reads what is in the pipe f now, at most max bytes, without
// waiting: a writer that outlived the stage (a copy of the fd passed out of
// the sandbox) must not hold the call open. More than max is an error.
func drainPipe(f *os.File, max int) ([]byte, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, max+1)
	n := 0
	var rerr error
	err = rc.Read(func(fd uintptr) bool {
		if rerr = unix.SetNonblock(int(fd), true); rerr != nil {
			return true
		}
		for n < len(buf) {
			m, err := unix.Read(int(fd), buf[n:])
			if err == unix.EINTR {
				continue
			}
			if err == unix.EAGAIN || m == 0 {
				return true
			}
			if err != nil {
				rerr = err
				return true
			}
			n += m
		}
		return true
	})
	if err == nil {
		err = rerr
	}
	if err == nil && n > max {
		err = fmt.Errorf("more than %d bytes", max)
	}
	return buf[:n], err
}

// kill ends a stage that will not run a command, and reaps it in the
// background.
func (st *stageProc) kill() {
	unix.Kill(st.pid, unix.SIGKILL)
	st.close()
	go func() {
		wait(st.pid)
		close(st.reaped)
	}()
}

// close releases the parent's ends of the stage's pipes.
func (st *stageProc) close() {
	for _, f := range []*os.File{st.plan, st.status} {
		if f != nil {
			f.Close()
		}
	}
	st.plan, st.status = nil, nil
	if st.listenerSock >= 0 {
		unix.Close(st.listenerSock)
		st.listenerSock = -1
	}
}
