//go:build linux

package linux

import (
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/sbx-sandbox/sbx/internal/enforce"
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
	// initPid, lifeline and answers are the PID namespace's init (see
	// startInit), started outside any call cgroup.
	initPid           int
	lifeline, answers *os.File
	// proc: init mounted the call's procfs on /proc and procReadOnly is
	// bound over it (see prestartThread).
	proc bool
	// bounding: the thread's bounding set is empty (dropBoundingSet), for
	// a plan that keeps no capability.
	bounding bool
}

// prestarted is a launcher thread waiting for its job (a nil job ends
// it), or, unprivileged, a stage being spawned (its result comes on stage).
type prestarted struct {
	netns bool // it made a network namespace
	proc  bool // it mounts the call's procfs too
	// bounding: it empties its bounding set too (for a plan that keeps
	// no capability).
	bounding bool
	jobs     chan func(nsDone)
	stage    chan *stageProc // nil when not spawned or not spawning one
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
//
// Unprivileged, where user namespaces are allowed, it spawns the stage of a
// stage launch instead (see spawnStage) with stdio as the command's: the
// fork into new namespaces and the stage's own Go start then overlap the
// call's resolution as well.
func Prestart(netns bool, stdio [3]*os.File) {
	if !hasCapSysAdmin() {
		prestartStage(netns, stdio)
		return
	}
	if runtime.GOARCH != "amd64" {
		return
	}
	// The call's procfs and the emptied bounding set are made ahead too,
	// as a server's next call has them (prestartAhead): they were ~0.2 ms
	// of `sbx run`'s path (mounts, 40 prctl). The guess is the usual plan:
	// root in the initial user namespace gets a procfs of its own
	// (compileProc), and keeps no capability. A plan that keeps one
	// (--cap-add), or gets no procfs, does not use the thread (forThread)
	// and launches on a fresh one, as without a prestart.
	setPending(prestartThread(netns, inInitUserNS(), true))
}

// prestartThread starts a launcher thread that makes a thread launch's
// namespaces (a network namespace when netns), loopback and init, and when
// proc the call's procfs (mounted by init, procReadOnly bound over it: a
// PID namespace's procfs depends on nothing the plan says), and when
// bounding empties its bounding set (once init is started: init's exec
// needs capabilities the set then no longer holds), then waits for its
// job. The procfs was ~0.15 ms of a call's mounts, the bounding set 40
// system calls.
func prestartThread(netns, proc, bounding bool) *prestarted {
	flags := unix.CLONE_NEWPID | unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC
	if netns {
		flags |= unix.CLONE_NEWNET
	}
	t := &prestarted{netns: netns, proc: proc, bounding: bounding, jobs: make(chan func(nsDone), 1)}
	go func() {
		// IMPORTANT: locked for good, as in startThread: the thread leaves
		// sbx's namespaces and is ended, not reused, when this returns.
		runtime.LockOSThread()
		var done nsDone
		// A failure here is found again, and reported, by the job; but
		// a PID namespace whose init is not running takes no process
		// (ENOMEM), so the job then moves to a fresh thread (startThread).
		if unix.Unshare(flags) == nil {
			done.flags = flags
			// The mount namespace counts as made once it is private (see
			// privateMounts); if it could not be made so, the job makes
			// one of its own (a copy of this) and tries again, reporting
			// the failure. The call's own mounts come with the plan.
			if unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, "") != nil {
				done.flags &^= unix.CLONE_NEWNS
			}
			done.loopback = netns && loopbackUp() == nil
			if pid, lifeline, answers, err := startInit(nil); err == nil {
				done.initPid, done.lifeline, done.answers = pid, lifeline, answers
				// Failed, the job mounts another over what was made.
				done.proc = proc && done.flags&unix.CLONE_NEWNS != 0 &&
					mountProcByInit(lifeline, answers) == nil && protectProc() == nil
				done.bounding = bounding && dropBoundingSet([2]uint32{}) == nil
			}
		}
		if job := <-t.jobs; job != nil {
			job(done)
			return
		}
		// Unused: end init. (The thread's exit would kill it too, through
		// its parent-death signal, but not reap it.)
		if done.answers != nil {
			done.answers.Close()
		}
		(&Process{initPid: done.initPid, lifeline: done.lifeline}).stopInit()
	}()
	return t
}

// keepAhead: see Resident.
var keepAhead atomic.Bool

// Resident tells the launches that this process is a server that launches
// call after call (sbx serve): every thread launch that a prestarted
// launcher thread could have served starts the next one of its kind (with
// a network namespace, or without) once its command is forked, if none of
// that kind is waiting. A next call of the same kind then finds its
// namespaces and init made, made while this one's command ran (on the
// other core); calls of both kinds, interleaved, each find theirs. The
// threads waiting when the server exits die with it, and their inits with
// them (parent-death signal). A server calls it once, before its first
// call.
//
// (Keeping a carve-out placeholder past its last call, for the next one,
// was measured too and not kept: the next call, or the user, would find an
// empty .git or .codex that was not there, where none may be left.)
func Resident() { keepAhead.Store(true) }

// ahead are the launcher threads a Resident process keeps ready, one per
// kind: [0] without a network namespace, [1] with one. (pending is the
// one-call Prestart's.)
var ahead [2]*prestarted

// aheadKind is p's index in ahead; ok is false when this process keeps
// no launcher thread for a call like p (not Resident, or p is no thread
// launch a prestarted thread can serve).
func aheadKind(p *Plan) (k int, ok bool) {
	if !keepAhead.Load() || !threadPrestartable(p) {
		return 0, false
	}
	if p.NewNetNS {
		return 1, true
	}
	return 0, true
}

// prestartAhead starts the launcher thread of a call like p (see
// Resident), unless one is waiting.
func prestartAhead(p *Plan) {
	k, ok := aheadKind(p)
	if !ok {
		return
	}
	prestartMu.Lock()
	defer prestartMu.Unlock()
	if ahead[k] == nil {
		ahead[k] = prestartThread(p.NewNetNS, p.PrivateProc, len(p.Capabilities) == 0)
	}
}

// takeAhead returns the launcher thread kept ready for a call like p, if
// there is one and p can use it.
func takeAhead(p *Plan) *prestarted {
	k, ok := aheadKind(p)
	if !ok {
		return nil
	}
	prestartMu.Lock()
	t := ahead[k]
	ahead[k] = nil
	prestartMu.Unlock()
	return t.forThread(p)
}

// threadPrestartable: a prestarted launcher thread has made everything p
// needs made before its mounts, but perhaps the network namespace.
func threadPrestartable(p *Plan) bool {
	return p.Launch == LaunchThread && p.NewPIDNS && p.Cgroup == nil && p.needsMountNS() && p.NewUTSNS && p.NewIPCNS
}

func prestartStage(netns bool, stdio [3]*os.File) {
	t := &prestarted{netns: netns, stage: make(chan *stageProc, 1)}
	setPending(t)
	go func() {
		var st *stageProc
		if ok, _ := userNSAllowed(); ok {
			// An error here is met again, and reported, by the call's own
			// spawn.
			st, _ = spawnStageLocked(stageNamespaces{net: netns, pid: true}, stdio, nil)
		}
		t.stage <- st
	}()
}

func setPending(t *prestarted) {
	prestartMu.Lock()
	old := pending
	pending = t
	prestartMu.Unlock()
	old.end()
}

func takePending() *prestarted {
	prestartMu.Lock()
	defer prestartMu.Unlock()
	t := pending
	pending = nil
	return t
}

// forThread returns the prestarted launcher thread if p can use it, and
// ends anything else.
func (t *prestarted) forThread(p *Plan) *prestarted {
	if t == nil || t.jobs == nil || !threadPrestartable(p) || p.NewNetNS != t.netns || t.proc && !p.PrivateProc || t.bounding && len(p.Capabilities) > 0 {
		t.end()
		return nil
	}
	return t
}

// forStage returns the prestarted stage if p and spec can use it, and ends
// anything else. The stage's stdio is fixed at its spawn, so spec's must be
// the same files.
func (t *prestarted) forStage(p *Plan, spec enforce.Command) *stageProc {
	if t == nil || t.stage == nil {
		t.end()
		return nil
	}
	st := <-t.stage
	t.stage = nil
	if st == nil {
		return nil
	}
	if p.Launch != LaunchStage || !p.NewPIDNS || p.NewNetNS != st.ns.net || p.Cgroup != nil ||
		st.stdio != [3]*os.File{spec.Stdin, spec.Stdout, spec.Stderr} {
		st.kill()
		return nil
	}
	return st
}

// DiscardPrestart ends what Prestart started when no call took it.
func DiscardPrestart() { takePending().end() }

func (t *prestarted) end() {
	switch {
	case t == nil:
	case t.jobs != nil:
		t.jobs <- nil
	case t.stage != nil:
		if st := <-t.stage; st != nil {
			st.kill()
		}
	}
}
