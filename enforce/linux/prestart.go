//go:build linux

package linux

import (
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// Most of a thread launch's kernel time is the network namespace: making
// one runs every per-network-namespace init (~0.6 ms here); then comes the
// PID namespace's init, exec'd. The call's Go-side work (flags, paths,
// grants, the plan) takes about as long. Neither needs the other, and
// there are two cores, so Prestart makes the namespaces (loopback up) and
// init on the launcher thread while the caller is still resolving the
// call. Start checks the plan asks for exactly those namespaces before it
// uses the thread, and otherwise ends it (its namespaces go with it) and
// launches as usual.

// nsDone is what a launcher thread has already done to itself.
type nsDone struct {
	flags    int  // CLONE_NEW* flags unshared
	loopback bool // loopback is up in the new network namespace
	// initPid and lifeline are the PID namespace's init (see startInit),
	// started outside any call cgroup.
	initPid  int
	lifeline *os.File
}

// prestarted is a launcher thread waiting for its job; a nil job ends it.
type prestarted struct {
	netns bool // it made a network namespace
	jobs  chan func(nsDone)
}

var (
	prestartMu sync.Mutex
	pending    *prestarted
)

// Prestart starts the launcher thread of a call expected to run under a
// thread launch without limits: privileged, on amd64 (where Compile plans
// a PID namespace), without a call cgroup (init is started in none), and
// with a network namespace when netns (the network off). A wrong guess
// costs the namespaces, not correctness.
func Prestart(netns bool) {
	if runtime.GOARCH != "amd64" || !hasCapSysAdmin() {
		return
	}
	flags := unix.CLONE_NEWPID
	if netns {
		flags |= unix.CLONE_NEWNET
	}
	t := &prestarted{netns: netns, jobs: make(chan func(nsDone), 1)}
	prestartMu.Lock()
	old := pending
	pending = t
	prestartMu.Unlock()
	old.end()
	go func() {
		// IMPORTANT: locked for good, as in startThread: the thread leaves
		// sbx's namespaces and is ended, not reused, when this returns.
		runtime.LockOSThread()
		var done nsDone
		// A failure here is found again, and reported, by the job.
		if unix.Unshare(flags) == nil {
			done.flags = flags
			done.loopback = netns && loopbackUp() == nil
			if pid, lifeline, err := startInit(nil); err == nil {
				done.initPid, done.lifeline = pid, lifeline
			}
		}
		if job := <-t.jobs; job != nil {
			job(done)
			return
		}
		// Unused: end init as Process.stopInit would. (The thread's exit
		// would kill it too, through its parent-death signal.)
		if done.initPid > 0 {
			done.lifeline.Close()
			unix.Kill(done.initPid, unix.SIGKILL)
			wait(done.initPid)
		}
	}()
}

// takePrestarted returns the prestarted launcher thread if p can use it,
// and ends any other.
func takePrestarted(p *Plan) *prestarted {
	prestartMu.Lock()
	t := pending
	pending = nil
	prestartMu.Unlock()
	if t == nil {
		return nil
	}
	if p.Launch != LaunchThread || !p.NewPIDNS || p.NewNetNS != t.netns || p.Cgroup != nil {
		t.end()
		return nil
	}
	return t
}

// DiscardPrestart ends a prestarted launcher thread no call took.
func DiscardPrestart() {
	prestartMu.Lock()
	t := pending
	pending = nil
	prestartMu.Unlock()
	t.end()
}

func (t *prestarted) end() {
	if t != nil {
		t.jobs <- nil
	}
}
