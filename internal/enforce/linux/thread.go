//go:build linux

package linux

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"syscall"

	"github.com/sbx-sandbox/sbx/internal/enforce"
	supervise "github.com/sbx-sandbox/sbx/internal/enforce/linux/supervisor"
	"github.com/sbx-sandbox/sbx/internal/steptrace"
	"golang.org/x/sys/unix"
)

func procAttr(spec enforce.Command, extra ...uintptr) *syscall.ProcAttr {
	return &syscall.ProcAttr{
		Dir:   spec.Dir,
		Env:   spec.Env,
		Files: append([]uintptr{spec.Stdin.Fd(), spec.Stdout.Fd(), spec.Stderr.Fd()}, extra...),
		Sys: &syscall.SysProcAttr{
			Setsid: true,
			// TIOCSCTTY on fd 0 (Ctty): the pty slave becomes the
			// session's terminal and the command its foreground group.
			Setctty:   spec.Terminal,
			Pdeathsig: syscall.SIGKILL,
		},
	}
}

// startThread restricts a fresh locked OS thread and forks the command from
// it, so the command inherits exactly that thread's Landlock domain, seccomp
// filter, no_new_privs and namespaces without a second Go start.
//
// IMPORTANT: the goroutine never unlocks its thread: the runtime would hand a
// restricted thread to other goroutines. It returns while locked, which makes
// the runtime end the thread. It also outlives the command, because
// PR_SET_PDEATHSIG fires when the forking thread exits.
//
// pre, when not nil, is a prestarted launcher thread (see Prestart) to run
// on instead of a new one. placeholders returns once the plan's
// placeholders are made (see startPlaceholders).
func startThread(p *Plan, spec enforce.Command, sup *supervisor, cg *callCgroup, pre *prestarted, placeholders func() error) (*Process, error) {
	type started struct {
		pid, initPid int
		lifeline     *os.File
		lis          supervise.Listener
		proxy        *proxyServer
		err          error
	}
	startc := make(chan started, 1)
	// The launcher thread reaps the command itself and hands Wait the
	// result through done: it must outlive the command anyway (parent-death
	// signals), and a locked thread that blocked on a channel until Wait
	// released it paid two more hand-offs of its thread and a P per call
	// (stoplockedm, startlockedm: ~4 futex calls each) than one that waits
	// in wait4. done is read here, not through pr, as Wait reads it.
	done := newExitBox()
	pr := &Process{done: done}
	resident := pre == nil && residentDirect(p, cg)
	launch := func(pre nsDone) {
		st := started{lis: supervise.Listener{FD: -1}}
		if cg != nil {
			if err := cg.joinV1(); err != nil {
				st.err = err
				startc <- st
				return
			}
			// Once it has forked, the thread leaves the groups again; on an
			// error return it dies, which leaves them too.
		}
		if p.Launch == LaunchThread {
			if pre.flags&unix.CLONE_NEWPID != 0 && !initRunning(pre.initPid) {
				// A prestarted PID namespace without its init (its start
				// failed, or it was killed) takes no process: the kernel
				// refuses every fork into it with ENOMEM, and this thread
				// cannot make another. The call moves to a fresh thread.
				if pre.answers != nil {
					pre.answers.Close()
				}
				st.initPid, st.lifeline, st.err = pre.initPid, pre.lifeline, errPIDNSGone
				startc <- st
				return
			}
			err := enterNamespaces(&p.StageSpec, pre.flags)
			if err == nil && pre.flags&unix.CLONE_NEWNS == 0 {
				err = privateMounts(&p.StageSpec)
			}
			st.initPid, st.lifeline = pre.initPid, pre.lifeline
			answers := pre.answers
			if err == nil && p.NewPIDNS && st.initPid == 0 {
				// Before the restrictions: init is exec'd from a memfd.
				st.initPid, st.lifeline, answers, err = startInit(cg)
			}
			if err == nil && p.NewNetNS && !pre.loopback {
				// A prestarted thread brought it up already.
				err = loopbackUp()
			}
			steptrace.Mark("namespaces, init (made ahead when prestarted)")
			if err == nil {
				err = setupMounts(&p.StageSpec, mountHooks{
					proc:         func() error { return mountProcByInit(st.lifeline, answers) },
					placeholders: placeholders,
					procMounted:  pre.proc,
				})
			}
			if answers != nil {
				answers.Close()
			}
			if err == nil && p.Proxy {
				// In the call's network namespace, before Landlock's and
				// seccomp's network rules.
				st.proxy, spec.Env, err = startProxyHere(p, spec.Env)
			}
			steptrace.Mark("mounts")
			if err == nil {
				err = dropCapabilities(p.Capabilities, pre.bounding)
			}
			steptrace.Mark("capabilities")
			if err == nil {
				st.lis, err = restrictThread(&p.StageSpec)
			}
			if err != nil {
				st.err = err
				startc <- st
				return
			}
		}
		if sup != nil {
			// Supervise before the fork: should a call between fork and
			// exec ever be one the filter notifies, an unanswered
			// notification would hang the vfork child and this thread.
			// (The runtime starts the supervisor's threads from its
			// template thread, never from this restricted one.)
			sup.attach(st.lis)
			st.lis = supervise.Listener{FD: -1}
		}
		attr := procAttr(spec)
		if st.initPid > 0 {
			// Go's child would see getppid() == 0 across the PID namespace,
			// take its parent for dead and kill itself. Init's parent-death
			// signal covers the command: init's death kills the namespace.
			attr.Sys.Pdeathsig = 0
		}
		cg.setCgroupFD(attr.Sys)
		pid, err := syscall.ForkExec(spec.Path, spec.Argv, attr)
		steptrace.Mark("fork and exec")
		if err != nil && errors.Is(err, unix.ENOMEM) && st.initPid > 0 && !initRunning(st.initPid) {
			// Not memory: init died since it was checked (killed from
			// outside), and its namespace takes no process.
			err = fmt.Errorf("%w (the PID namespace's init has exited, so the kernel refuses new processes in it)", err)
		}
		if err != nil {
			st.err = fmt.Errorf("%w: %s: %w", ErrStart, spec.Argv[0], err)
			startc <- st
			return
		}
		st.pid = pid
		if cg != nil {
			cg.leaveV1()
		}
		startc <- st
		if resident {
			// The thread serves the next direct launch; any thread may
			// reap the command.
			go func() { done.put(wait(pid)) }()
			return
		}
		// Its exit ends the thread: init's parent-death signal then kills
		// the PID namespace, as Wait's stopInit does next in any case.
		done.put(wait(pid))
	}
	switch {
	case pre != nil:
		pre.jobs <- launch
	case resident:
		directLauncher() <- launch
	default:
		go func() {
			runtime.LockOSThread()
			launch(nsDone{})
		}()
	}
	s := <-startc
	if s.err == errPIDNSGone {
		// The prestarted thread has ended; reap its init, if it had one.
		(&Process{initPid: s.initPid, lifeline: s.lifeline}).stopInit()
		go func() {
			runtime.LockOSThread()
			launch(nsDone{})
		}()
		s = <-startc
	}
	pr.initPid, pr.lifeline, pr.proxy = s.initPid, s.lifeline, s.proxy
	if s.err != nil {
		pr.proxy.close()
		if s.lis.FD >= 0 {
			unix.Close(s.lis.FD)
		}
		pr.stopInit()
		return nil, s.err
	}
	if sup != nil {
		pr.sup = sup
	} else if s.lis.FD >= 0 {
		unix.Close(s.lis.FD)
	}
	pr.Pid = s.pid
	return pr, nil
}

// residentDirect reports whether a direct launch (danger-full-access) of
// a Resident process forks from the resident direct launcher thread
// instead of a fresh one: a server's floor call then neither makes nor ends
// a thread (~75 µs of CPU a call, #31). Only without v1 groups, which the
// forking thread joins for the fork: a thread that stays must never be
// left in one by a failed launch.
func residentDirect(p *Plan, cg *callCgroup) bool {
	return p.Launch == LaunchDirect && keepAhead.Load() && (cg == nil || len(cg.v1) == 0)
}

// directLauncher is the job queue of the resident direct launcher thread,
// started at its first job: a locked thread that never ends, so that the
// parent-death signal of every command it forks fires only when sbx does
// (it is tied to the forking thread). It is never restricted: a direct
// launch makes no namespace and applies no rule. It forks one command at a
// time; each command is reaped by a goroutine of its own.
var directLauncher = sync.OnceValue(func() chan<- func(nsDone) {
	jobs := make(chan func(nsDone))
	go func() {
		// IMPORTANT: locked for good: an unlocked thread could be taken
		// by a goroutine that locks it and ends, and its end would kill
		// every command forked from it.
		runtime.LockOSThread()
		for job := range jobs {
			job(nsDone{})
		}
	}()
	return jobs
})

// errPIDNSGone: a prestarted launcher thread's PID namespace has no init
// (startThread then launches on a fresh thread).
var errPIDNSGone = errors.New("the prestarted PID namespace has no init")

// initRunning reports whether pid, a child of this process (init of a PID
// namespace), has not exited; 0 (none started) is not running. It does not
// reap: waitid with WNOWAIT leaves that to stopInit.
func initRunning(pid int) bool {
	if pid <= 0 {
		return false
	}
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil); err != nil {
		return false
	}
	// Linux zeroes info when no child has exited.
	return info.Signo == 0
}

// startInit starts the PID namespace's init (see initCode): the first child
// of a thread that unshared CLONE_NEWPID becomes PID 1 there. Its stdin is
// the read end of a pipe whose write end (close-on-exec, so never the
// command's) is returned as the lifeline: closing it, or sbx's death, ends
// init and the namespace; a byte written to it asks init to mount the
// call's procfs, and init answers on its stdout, whose read end is
// answers. Its stderr is /dev/null, so it never holds the command's pipes
// open.
func startInit(cg *callCgroup) (pid int, lifeline, answers *os.File, err error) {
	path, err := initExecutable()
	if err != nil {
		return 0, nil, nil, err
	}
	if err := raiseLaunchAmbient(); err != nil {
		return 0, nil, nil, fmt.Errorf("pid namespace init: %w", err)
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("pid namespace init: %w", err)
	}
	defer null.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return 0, nil, nil, fmt.Errorf("pid namespace init: %w", err)
	}
	defer r.Close()
	ar, aw, err := os.Pipe()
	if err != nil {
		w.Close()
		return 0, nil, nil, fmt.Errorf("pid namespace init: %w", err)
	}
	defer aw.Close()
	sys := &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	cg.setCgroupFD(sys)
	pid, err = syscall.ForkExec(path, []string{"sbx-init"}, &syscall.ProcAttr{
		Dir: "/", Env: []string{}, Files: []uintptr{r.Fd(), aw.Fd(), null.Fd()}, Sys: sys,
	})
	if err != nil {
		w.Close()
		ar.Close()
		return 0, nil, nil, fmt.Errorf("pid namespace init: %w", err)
	}
	return pid, w, ar, nil
}

// mountProcByInit asks init to mount a procfs on /proc (see initCode) and
// waits for its answer: the mount's return value, 0 or -errno.
func mountProcByInit(lifeline, answers *os.File) error {
	if lifeline == nil || answers == nil {
		return errors.New("mount proc: no PID namespace init")
	}
	if _, err := lifeline.Write([]byte{1}); err != nil {
		return fmt.Errorf("mount proc: ask init: %w", err)
	}
	var b [8]byte
	if _, err := io.ReadFull(answers, b[:]); err != nil {
		return fmt.Errorf("mount proc: init's answer: %w", err)
	}
	if r := int64(binary.LittleEndian.Uint64(b[:])); r != 0 {
		return fmt.Errorf("mount proc: %w", syscall.Errno(-r))
	}
	return nil
}
