//go:build linux

package linux

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/sbx-sandbox/sbx/enforce"
	"golang.org/x/sys/unix"
)

// startStage re-executes sbx as a hidden stage inside new user, PID and
// (as planned) network namespaces, and sends it the plan: see spawnStage
// and stageProc.run.
func startStage(p *Plan, spec enforce.Command, sup *supervisor, cg *callCgroup) (*Process, error) {
	st, err := spawnStage(stageNamespaces{net: p.NewNetNS, pid: p.NewPIDNS}, [3]*os.File{spec.Stdin, spec.Stdout, spec.Stderr}, cg)
	if err != nil {
		return nil, err
	}
	return st.run(p, spec, sup)
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
	st.pid, err = syscall.ForkExec(exe, []string{"sbx", StageCommand}, &syscall.ProcAttr{Dir: "/", Env: []string{}, Files: files, Sys: sys})
	if err != nil {
		st.close()
		return nil, fmt.Errorf("%w: stage: clone into new user namespace: %w", ErrUserNS, err)
	}
	return st, nil
}

// run sends the stage its plan and returns the running call.
func (st *stageProc) run(p *Plan, spec enforce.Command, sup *supervisor) (*Process, error) {
	defer st.close()
	pl := stagePayload{Plan: newStagePlan(p), Path: spec.Path, Argv: spec.Argv, Dir: spec.Dir, Env: spec.Env, Terminal: spec.Terminal}
	if sup != nil {
		pl.ListenerSocket = stageListenerFD
	}
	if p.Proxy {
		pl.ProxySocket = stageListenerFD
	}
	if st.ns.pid {
		pl.StatusFD = stageStatusFD
	}
	payload, err := json.Marshal(pl)
	if err != nil {
		st.kill()
		return nil, fmt.Errorf("stage payload: %w", err)
	}
	pr := &Process{Pid: st.pid, done: make(chan exitResult, 1), stageInit: st.ns.pid}
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
		pr.done <- res
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

// stageStatus reads what a stage that is PID 1 reports on its status pipe:
// the command's raw wait status, or stageExecFailed and the errno of the
// exec, which becomes res.err as a thread launch's ForkExec error would
// (wrapping ErrStart, so the exit status is 126 or 127 and the result has
// the errno).
func stageStatus(status *os.File, res *exitResult, argv0 string) {
	var b [8]byte
	if n, _ := io.ReadFull(status, b[:4]); n != 4 {
		return
	}
	v := binary.LittleEndian.Uint32(b[:4])
	if v != stageExecFailed && v != stageNoMounts {
		res.status = syscall.WaitStatus(v)
		return
	}
	if n, _ := io.ReadFull(status, b[4:]); n != 4 {
		return
	}
	errno := syscall.Errno(binary.LittleEndian.Uint32(b[4:]))
	if v == stageNoMounts {
		res.err = fmt.Errorf("%w: the stage's mount namespace refuses mounts (a sandbox around sbx?): mount --make-rslave /: %w", ErrUserNS, errno)
		return
	}
	res.err = fmt.Errorf("%w: %s: %w", ErrStart, argv0, errno)
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
