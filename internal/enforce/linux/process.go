//go:build linux

package linux

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	supervise "github.com/sbx-sandbox/sbx/internal/enforce/linux/supervisor"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// Process is a started command.
type Process struct {
	Pid     int
	initPid int // PID namespace init of a thread launch, 0 if none
	// lifeline keeps the namespace's init (thread launch) or the stage
	// (stage launch) alive; closing it ends them.
	lifeline *os.File
	// done delivers the command's exit: the stage launch's stage reaps
	// it, a thread launch's launcher thread (which must outlive the
	// command: parent-death signals fire when the forking thread exits).
	done *exitBox
	// stageInit: the command is the child of a stage that is PID 1 of the
	// call's PID namespace (Pid is the stage's).
	stageInit bool
	// sup is the seccomp supervisor, nil when the plan has none.
	sup *supervisor
	// cg is the call's control groups, nil when the plan has none; usage is
	// what they measured, read when the call ends.
	cg    *callCgroup
	plan  *Plan
	usage cgroupUsage
	// placeholders are the carve-out placeholders this call made, removed
	// by Wait.
	placeholders []string
	// Cleanup, when set before Wait, lets Wait leave the removal of the
	// placeholders, and of the call's groups, to goroutines counted in it:
	// the caller waits for it before it tells anyone the call is over, and
	// meanwhile does its own work (a server writes the call's last
	// record). A placeholder's removal is hundreds of microseconds: the
	// call's mount namespace, where the placeholder is bound, is still
	// there, and the kernel detaches it.
	Cleanup *sync.WaitGroup
	// watches are the plan's watched carve-outs (sweep.go), checked by
	// Wait once the command's tree is dead; swept is what that found,
	// for EndSupervision.
	watches []watch
	swept   []report.Denial
	// proxy serves network by domain (proxy.go), nil without; Wait ends it.
	proxy *proxyServer
}

// exitBox carries the command's exit from whoever reaps it to Wait, and
// says it is there (Ended) without taking it.
type exitBox struct {
	ready chan struct{}
	r     exitResult
}

func newExitBox() *exitBox { return &exitBox{ready: make(chan struct{})} }

// put is called once, by the reaper.
func (b *exitBox) put(r exitResult) {
	b.r = r
	close(b.ready)
}

func (b *exitBox) take() exitResult {
	<-b.ready
	return b.r
}

// Ended is ready once the command has exited: Wait then blocks no longer
// than it takes to end what is left of the tree. A caller that waits on
// signals and timers too selects on it and calls Wait after, instead of
// spending a goroutine, and a wake-up, on Wait itself. Nil (never ready)
// when the command's exit is not known that way.
func (pr *Process) Ended() <-chan struct{} {
	if pr.done == nil {
		return nil
	}
	return pr.done.ready
}

type exitResult struct {
	status syscall.WaitStatus
	rusage syscall.Rusage
	err    error
}

// EndSupervision stops the seccomp supervisor, once the command has ended,
// and returns what it saw. Without a supervisor it returns nothing.
// The watched carve-outs that appeared (sweep) are among its denials, with
// or without a supervisor.
func (pr *Process) EndSupervision() supervise.Result {
	swept := pr.swept
	pr.swept = nil
	if pr.sup == nil {
		return supervise.Result{Denials: swept}
	}
	res := pr.sup.finish()
	pr.sup = nil
	res.Denials = append(res.Denials, swept...)
	return res
}

// Wait waits for the command to end, then ends every process it left in
// its PID namespace and control groups, and removes the groups.
func (pr *Process) Wait() (syscall.WaitStatus, syscall.Rusage, error) {
	var r exitResult
	if pr.done != nil {
		r = pr.done.take()
	} else {
		r = wait(pr.Pid)
	}
	if pr.sup != nil && (pr.initPid > 0 || pr.stageInit || pr.cg != nil) {
		// What is left of the tree dies next: the supervisor need not
		// wait for EndSupervision to start ending.
		pr.sup.ask()
	}
	pr.stopInit()
	pr.proxy.close()
	if made := pr.placeholders; pr.Cleanup != nil && len(made) > 0 {
		pr.Cleanup.Go(func() { removePlaceholders(made) })
	} else {
		removePlaceholders(made)
	}
	pr.placeholders = nil
	if cg := pr.cg; cg != nil {
		cg.kill()
		pr.usage = cg.usage()
		// The tree is dead; the groups' removal (an rmdir the kernel takes
		// ~50 µs over, per group) can overlap the caller's own work.
		if pr.Cleanup != nil {
			pr.Cleanup.Go(cg.remove)
		} else {
			cg.remove()
		}
		pr.cg = nil
	}
	if len(pr.watches) > 0 {
		// The tree is dead: its PID namespace's init is reaped, or was
		// alone (stopInit); a stage launch's stage was its init; and no
		// watched plan lacks a PID namespace (compile).
		pr.swept = sweep(pr.plan.Policy, pr.watches)
		pr.watches = nil
	}
	return r.status, r.rusage, r.err
}

// stopInit kills the PID namespace's init, which kills every process in the
// namespace, and reaps it: Wait returns once they are all gone. It must not
// run on the restricted launcher thread: Landlock's signal scope forbids
// signalling init, which was started before the restrictions. (The thread's
// exit would also kill init through its parent-death signal, but without
// waiting for it.)
func (pr *Process) stopInit() {
	if pr.lifeline != nil {
		pr.lifeline.Close()
		pr.lifeline = nil
	}
	if pr.initPid <= 0 {
		return
	}
	pid := pr.initPid
	pr.initPid = 0
	// With nothing else in the namespace, reaping init can happen off the
	// call's path (~0.1 ms here, a wake-up of each side); but not when it
	// is in the call's cgroups, which cannot be removed before it is gone.
	alone := pr.cg == nil && initAlone(pid)
	unix.Kill(pid, unix.SIGKILL)
	if alone {
		go wait(pid)
		return
	}
	wait(pid)
}

// initAlone reports whether init is the last process in its namespace once
// the command has been reaped: every process left there is then init's
// child (orphans are re-parented to it) or a descendant of one. When the
// kernel does not list children (no CONFIG_PROC_CHILDREN), it says no.
func initAlone(pid int) bool {
	c, err := children(pid)
	return err == nil && len(c) == 0
}

// children lists the pids of pid's children (of its main thread: the
// stage's and init's only forking thread).
func children(pid int) ([]string, error) {
	p := strconv.Itoa(pid)
	b, err := os.ReadFile("/proc/" + p + "/task/" + p + "/children")
	return strings.Fields(string(b)), err
}

// Signal sends sig to the command's process group (it leads a new session).
// Under a stage that is its namespace's init, the command is the stage's
// child, found by its pid in sbx's namespace; SIGKILL goes to the stage,
// whose death ends the whole namespace, and so does any signal sent before
// the command exists (the stage takes its default action).
func (pr *Process) Signal(sig syscall.Signal) error {
	pid := pr.Pid
	if pr.stageInit && sig != syscall.SIGKILL {
		if c := firstChild(pr.Pid); c > 0 {
			pid = c
		}
	}
	return syscall.Kill(-pid, sig)
}

// firstChild returns the first child of pid, 0 if it has none.
func firstChild(pid int) int {
	c, _ := children(pid)
	if len(c) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(c[0])
	return n
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
