//go:build linux

package linux

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/enforce"
	"github.com/sbx-sandbox/sbx/internal/enforce/linux/seccomp"
	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// TestPrestart: a plan that asks for the prestarted namespaces runs its
// command in them (with the network off: a new network namespace; on:
// sbx's); a plan that does not runs it in the namespaces it asks for, and
// the prestarted thread's init goes away, as it does when no call takes
// the thread.
func TestPrestart(t *testing.T) {
	if runtime.GOARCH != "amd64" || !hasCapSysAdmin() {
		t.Skip("SKIP: the prestart is for the privileged thread launch on amd64 (needs CAP_SYS_ADMIN)")
	}
	own := testProcessNS
	if own[0] == "" {
		t.Fatal("the test process's namespaces were not read at start")
	}
	run := func(t *testing.T, prestartNetns, network bool) (net, pid, prestartedPid string) {
		ws := t.TempDir()
		pol, err := policy.Build(policy.Request{Mode: profiles.WorkspaceWrite, Cwd: ws, ExcludeTmp: true, ExcludeTmpdir: true})
		if err != nil {
			t.Fatal(err)
		}
		if network {
			pol.Network = policy.NetworkFull
		}
		plan, err := Compile(pol, Probe(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		Prestart(prestartNetns, [3]*os.File{os.Stdin, os.Stdout, os.Stderr})
		// Once its init runs, the thread has made its namespaces: the
		// plan decides whether they are used, not a race.
		waitInits(t, true)
		prestartedPid = nsLinks(t, childInits()[0])[1]
		out := shellOutput(t, plan, ws, "readlink /proc/self/ns/net /proc/self/ns/pid")
		if pending != nil {
			t.Error("Start left the prestarted thread pending")
		}
		f := strings.Fields(out)
		if len(f) != 2 {
			t.Fatalf("command printed %q", out)
		}
		return f[0], f[1], prestartedPid
	}
	for _, tt := range []struct {
		name                         string
		prestartNetns, network, used bool
	}{
		{"used", true, false, true},
		{"used-network-on", false, true, true},
		{"not-used-network-on", true, true, false},
		{"not-used-network-off", false, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			net, pid, prestarted := run(t, tt.prestartNetns, tt.network)
			if (pid == prestarted) != tt.used {
				t.Errorf("command in PID namespace %s, the prestarted init in %s: want used %t", pid, prestarted, tt.used)
			}
			if pid == own[1] {
				t.Errorf("the command shares sbx's PID namespace %s", pid)
			}
			if newNet := net != own[0]; newNet == tt.network {
				t.Errorf("network on %t: the command runs in network namespace %s (sbx's: %s)", tt.network, net, own[0])
			}
			waitInits(t, false)
		})
	}
	t.Run("discarded", func(t *testing.T) {
		Prestart(true, [3]*os.File{os.Stdin, os.Stdout, os.Stderr})
		waitInits(t, true)
		DiscardPrestart()
		waitInits(t, false)
	})
}

// TestResidentPrestarts: in a Resident process, a thread launch leaves
// the launcher thread of the next call of its kind made (with a network
// namespace, or without); calls of both kinds, interleaved, each run their
// command in the thread of their kind, in namespaces no other call had,
// and each leaves another; a call nothing prestarted could serve leaves
// none.
func TestResidentPrestarts(t *testing.T) {
	if runtime.GOARCH != "amd64" || !hasCapSysAdmin() {
		t.Skip("SKIP: the prestart is for the privileged thread launch on amd64 (needs CAP_SYS_ADMIN)")
	}
	own := testProcessNS
	DiscardPrestart()
	keepAhead.Store(true)
	t.Cleanup(func() {
		keepAhead.Store(false)
		endAhead()
		waitInits(t, false)
	})
	ws := t.TempDir()
	plan := func(network bool, limits report.Limits) *Plan {
		pol, err := policy.Build(policy.Request{Mode: profiles.WorkspaceWrite, Cwd: ws, ExcludeTmp: true, ExcludeTmpdir: true})
		if err != nil {
			t.Fatal(err)
		}
		if network {
			pol.Network = policy.NetworkFull
		}
		p, err := Compile(pol, Probe(), Options{Limits: limits})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	// call runs one command under p and returns its PID namespace.
	call := func(p *Plan) string {
		return strings.TrimSpace(shellOutput(t, p, ws, "readlink /proc/self/ns/pid"))
	}
	// waiting waits for the inits left running once the calls are over,
	// the prestarted threads', and returns their PID namespaces by kind:
	// [0] in sbx's network namespace, [1] in one of their own.
	waiting := func(want int) (out [2]string) {
		t.Helper()
		for _, pid := range stableInits(t, want) {
			ns := nsLinks(t, pid)
			k := 1
			if ns[0] == own[0] {
				k = 0
			}
			if out[k] != "" {
				t.Fatalf("two prestarted threads of kind %d", k)
			}
			out[k] = ns[1]
		}
		return out
	}
	off, on := plan(false, report.Limits{}), plan(true, report.Limits{})
	first := call(off)
	if ahead[1] == nil || !ahead[1].netns || ahead[0] != nil {
		t.Fatalf("after a call with the network off: ready %+v, want one launcher thread, with a network namespace", ahead)
	}
	if w := waiting(1); w[1] == first {
		t.Fatalf("the prestarted thread's PID namespace %s is the first call's", first)
	}
	call(on)
	ready := waiting(2)
	for round := range 2 {
		if got := call(off); got != ready[1] {
			t.Errorf("round %d: the network-off call ran in PID namespace %s, its prestarted thread's is %s", round, got, ready[1])
		}
		if got := call(on); got != ready[0] {
			t.Errorf("round %d: the network-on call ran in PID namespace %s, its prestarted thread's is %s", round, got, ready[0])
		}
		next := waiting(2)
		if next[0] == ready[0] || next[1] == ready[1] {
			t.Errorf("round %d: a next prestarted thread is in a used PID namespace: %v, used %v", round, next, ready)
		}
		ready = next
	}
	// A call with limits has a cgroup: nothing prestarted serves it,
	// none is left for the next.
	endAhead()
	waitInits(t, false)
	limited := plan(false, report.Limits{Pids: 64})
	if limited.Cgroup == nil {
		t.Skip("SKIP: no call cgroup here (limits fall back to rlimits), the rest needs one")
	}
	call(limited)
	if ahead != [2]*prestarted{} {
		t.Errorf("a call with limits left a prestarted thread: %+v", ahead)
	}
}

// endAhead ends the launcher threads a Resident process keeps ready.
func endAhead() {
	prestartMu.Lock()
	defer prestartMu.Unlock()
	for k, th := range ahead {
		th.end()
		ahead[k] = nil
	}
}

// shellOutput runs sh -c script under plan in dir and returns what it
// printed (stdout and stderr), once it has ended.
func shellOutput(t *testing.T, plan *Plan, dir, script string) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	proc, err := Start(plan, enforce.Command{Path: "/bin/sh", Argv: []string{"sh", "-c", script},
		Dir: dir, Env: []string{"PATH=/usr/bin:/bin"}, Stdin: os.Stdin, Stdout: w, Stderr: w})
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	out.ReadFrom(r)
	proc.Wait()
	proc.EndSupervision()
	return out.String()
}

// testProcessNS are the network and PID namespaces the test process
// started in, read before any test runs: /proc/self names the main
// thread, and a test whose locked, unshared goroutine ran on it and ended
// leaves it wedged in that goroutine's namespaces (the runtime cannot end
// the main thread), so reading it later can name another namespace.
var testProcessNS = func() (out [2]string) {
	for i, ns := range []string{"net", "pid"} {
		out[i], _ = os.Readlink(filepath.Join("/proc/self/ns", ns))
	}
	return out
}()

func nsLinks(t *testing.T, pid string) [2]string {
	t.Helper()
	var out [2]string
	for i, ns := range []string{"net", "pid"} {
		l, err := os.Readlink(filepath.Join("/proc", pid, "ns", ns))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = l
	}
	return out
}

// waitInits waits until some child of this process is a PID namespace
// init (running), or none is.
func waitInits(t *testing.T, running bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		inits := childInits()
		if (len(inits) > 0) == running {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("init processes: %v, want running %t", inits, running)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stableInits waits until this process has want PID namespace inits, the
// same ones twice 50 ms apart, and returns them: those of the prepared
// launcher threads. A call's own init, killed by its Wait and reaped off
// the call's path (stopInit), can outlive Wait a little, and a PID
// namespace's inode number can be reused by the next one, so only their
// going tells them apart.
func stableInits(t *testing.T, want int) []string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	var last []string
	for {
		inits := childInits()
		slices.Sort(inits)
		if len(inits) == want && slices.Equal(inits, last) {
			return inits
		}
		last = inits
		if time.Now().After(deadline) {
			t.Fatalf("init processes %v, want the %d prestarted ones only", inits, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func childInits() []string {
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	var out []string
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, pid := range strings.Fields(string(b)) {
			cmd, _ := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
			if bytes.HasPrefix(cmd, []byte("sbx-init\x00")) {
				out = append(out, pid)
			}
		}
	}
	return out
}

// TestPrestartStage: a stage spawned ahead of the plan runs the command
// when the plan is a stage launch with the same network namespace choice
// and the command has the stage's stdio; otherwise it is killed and the
// call spawns its own.
func TestPrestartStage(t *testing.T) {
	if ok, why := userNSAllowed(); !ok {
		t.Skipf("SKIP: no user namespaces: %s", why)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	stdio := [3]*os.File{os.Stdin, w, w}
	for _, tt := range []struct {
		name                   string
		prestartNetns, network bool
		stdout                 *os.File
		used                   bool
	}{
		{"used", true, false, w, true},
		{"used-network-on", false, true, w, true},
		{"not-used-network-on", true, true, w, false},
		{"not-used-other-stdout", true, false, os.Stderr, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			pol, err := policy.Build(policy.Request{Mode: profiles.WorkspaceWrite, Cwd: ws, ExcludeTmp: true, ExcludeTmpdir: true})
			if err != nil {
				t.Fatal(err)
			}
			if tt.network {
				pol.Network = policy.NetworkFull
			}
			sys := asUnprivileged(Probe())
			plan, err := Compile(pol, sys, Options{})
			if err != nil {
				t.Fatal(err)
			}
			prestartStage(tt.prestartNetns, stdio)
			// The spawned stage, put back for Start to take.
			st := <-pending.stage
			pending.stage <- st
			if st == nil {
				t.Fatal("the stage was not spawned")
			}
			proc, err := Start(plan, enforce.Command{Path: "/bin/true", Argv: []string{"true"}, Dir: ws,
				Env: []string{"PATH=/usr/bin:/bin"}, Stdin: os.Stdin, Stdout: tt.stdout, Stderr: w})
			if err != nil {
				t.Fatal(err)
			}
			if ws, _, err := proc.Wait(); err != nil || ws.ExitStatus() != 0 {
				t.Errorf("command: %v, exit %d", err, ws.ExitStatus())
			}
			proc.EndSupervision()
			if used := proc.Pid == st.pid; used != tt.used {
				t.Errorf("the call ran in stage %d, the prestarted one is %d: want used %t", proc.Pid, st.pid, tt.used)
			}
			if !tt.used {
				deadline := time.Now().Add(5 * time.Second)
				for notReaped(st.pid) {
					if time.Now().After(deadline) {
						t.Fatalf("the unused stage %d is still there", st.pid)
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
		})
	}
}

// TestStageOutlivesCallerThread: a stage's parent-death signal (SIGKILL)
// fires when the thread that forked it ends, so a call whose goroutine sat
// on a thread that then ended (a locked thread's goroutine returning, as a
// concurrent thread launch's does) must not lose its command: the stage is
// forked from a thread of its own (spawnStageLocked). Before that fix the
// command here died of SIGKILL.
func TestStageOutlivesCallerThread(t *testing.T) {
	if ok, why := userNSAllowed(); !ok {
		t.Skipf("SKIP: no user namespaces: %s", why)
	}
	DiscardPrestart() // the call spawns its own stage
	ws := t.TempDir()
	pol, err := policy.Build(policy.Request{Mode: profiles.WorkspaceWrite, Cwd: ws, ExcludeTmp: true, ExcludeTmpdir: true})
	if err != nil {
		t.Fatal(err)
	}
	sys := asUnprivileged(Probe())
	plan, err := Compile(pol, sys, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Launch != LaunchStage {
		t.Fatalf("launch %v, want the stage", plan.Launch)
	}
	started := make(chan *Process, 1)
	onEndingThread(func() {
		proc, err := Start(plan, enforce.Command{Path: "/bin/sh", Argv: []string{"sh", "-c", "sleep 0.3; exit 7"}, Dir: ws,
			Env: []string{"PATH=/usr/bin:/bin"}, Stdin: os.Stdin, Stdout: os.Stderr, Stderr: os.Stderr})
		if err != nil {
			t.Error(err)
		}
		started <- proc
	})
	proc := <-started
	if proc == nil {
		return
	}
	ws2, _, err := proc.Wait()
	proc.EndSupervision()
	if err != nil || !ws2.Exited() || ws2.ExitStatus() != 7 {
		t.Fatalf("command: %v, status %#x (signaled %t, %v); want exit 7", err, ws2, ws2.Signaled(), ws2.Signal())
	}
}

// onEndingThread runs f on a locked thread that ends once f returns (its
// goroutine returns locked), never on the main thread, which Go keeps.
func onEndingThread(f func()) {
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			onEndingThread(f) // hold the main thread meanwhile
			runtime.UnlockOSThread()
			close(done)
			return
		}
		f()
		close(done)
	}()
	<-done
}

// notReaped reports whether pid still exists, as a zombie or not.
func notReaped(pid int) bool {
	_, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid)))
	return err == nil
}

// TestStagePlan: what the stage applies survives the payload's JSON.
func TestStagePlan(t *testing.T) {
	ws := t.TempDir()
	os.Mkdir(filepath.Join(ws, ".git"), 0o755)
	os.Mkdir(filepath.Join(ws, "secret"), 0o755)
	pol, err := policy.Build(policy.Request{Mode: profiles.WorkspaceWrite, Cwd: ws})
	if err != nil {
		t.Fatal(err)
	}
	pol.Masked = []string{filepath.Join(ws, "secret")}
	sys := System{LandlockABI: 6, UserNS: true, UserNotif: true}
	p, err := Compile(pol, sys, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p.Rlimits = []Rlimit{{Resource: unix.RLIMIT_NPROC, Name: "nproc", Value: 7}}
	sent := stagePayload{Plan: &p.StageSpec}.compact()
	if runtime.GOARCH == "amd64" && (sent.SeccompProg == nil || sent.SeccompPlainProg == nil || sent.Plan.SeccompProg != nil || sent.Plan.SeccompPlainProg != nil) {
		t.Errorf("the built-in programs are carried, not named: %+v %+v", sent.SeccompProg, sent.SeccompPlainProg)
	}
	if len(p.SeccompProg) == 0 {
		t.Fatal("compact emptied the plan's own program")
	}
	b, err := json.Marshal(sent)
	if err != nil {
		t.Fatal(err)
	}
	var pl stagePayload
	if err := json.Unmarshal(b, &pl); err != nil {
		t.Fatal(err)
	}
	if err := pl.expand(); err != nil {
		t.Fatal(err)
	}
	got := pl.Plan
	if got.NewPIDNS != p.NewPIDNS || got.NewNetNS != p.NewNetNS || got.needsMountNS() != p.needsMountNS() ||
		!slices.Equal(got.ReadOnlyMounts, p.ReadOnlyMounts) || !slices.Equal(got.MaskedMounts, p.MaskedMounts) ||
		!slices.Equal(got.WriteRoots, p.Policy.WriteRoots) || got.Supervise != p.Supervise ||
		!reflect.DeepEqual(got.Landlock, p.Landlock) || !slices.Equal(got.SeccompProg, p.SeccompProg) ||
		!slices.Equal(got.SeccompPlainProg, p.SeccompPlainProg) || !slices.Equal(got.Rlimits, p.Rlimits) {
		t.Errorf("stage plan changed on the way:\n got %+v\nwant %+v", got, p)
	}
	// A name sbx has no program for, or one beside a carried program, is
	// refused: the stage then runs nothing.
	for _, bad := range []stagePayload{
		{Plan: &StageSpec{}, SeccompProg: &seccomp.Ref{Sockets: 9}},
		{Plan: &StageSpec{SeccompProg: p.SeccompProg}, SeccompProg: &seccomp.Ref{}},
	} {
		if err := bad.expand(); err == nil {
			t.Errorf("expand took %+v", bad.SeccompProg)
		}
	}
	if len(p.ReadOnlyMounts) == 0 || len(p.MaskedMounts) == 0 || p.Landlock == nil || len(p.SeccompPlainProg) == 0 {
		t.Errorf("the plan lacks a part to carry: read-only mounts %v, masks %v, Landlock %v, plain program %d",
			p.ReadOnlyMounts, p.MaskedMounts, p.Landlock, len(p.SeccompPlainProg))
	}
}

// TestPrestartedProc: a Resident process's launcher thread, prepared for a
// plan with the call's own procfs, has it mounted (by its init) before the
// call comes; the call that takes it sees that procfs, its own PID
// namespace's, with the same mounts and flags under /proc as a call
// launched without a prepared thread (the read-only root, made after,
// keeps them), and an empty bounding set, which the thread emptied ahead.
// A plan without a procfs of its own, or that keeps a capability, is not
// served by such a thread. Both ways of making the read-only root run:
// the remount walk (kernels before 5.12) must read the thread's mounts
// where the call's procfs has no thread-self.
func TestPrestartedProc(t *testing.T) {
	if runtime.GOARCH != "amd64" || !hasCapSysAdmin() {
		t.Skip("SKIP: the prestart is for the privileged thread launch on amd64 (needs CAP_SYS_ADMIN)")
	}
	bothReadOnlyRoots(t, testPrestartedProc)
}

func testPrestartedProc(t *testing.T) {
	DiscardPrestart()
	t.Cleanup(func() {
		keepAhead.Store(false)
		endAhead()
		waitInits(t, false)
	})
	ws := t.TempDir()
	pol, err := policy.Build(policy.Request{Mode: profiles.WorkspaceWrite, Cwd: ws, ExcludeTmp: true, ExcludeTmpdir: true})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := Compile(pol, Probe(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !plan.PrivateProc {
		t.Skip("SKIP: no procfs of the call's own here (the host's /proc has hidden parts)")
	}
	// The PID namespace, the number of processes /proc lists, the
	// bounding set, and the top mount at each mount point under /proc
	// with its options.
	const script = `readlink /proc/self/ns/pid
ls /proc | grep -c '^[0-9]'
grep CapBnd /proc/self/status
awk '$5 ~ /^\/proc/ {m[$5] = $6} END {for (k in m) print k, m[k]}' /proc/self/mountinfo | sort`
	fresh := strings.SplitN(shellOutput(t, plan, ws, script), "\n", 4)

	keepAhead.Store(true)
	shellOutput(t, plan, ws, "true")
	inits := stableInits(t, 1)
	if len(inits) != 1 || ahead[1] == nil || !ahead[1].proc || !ahead[1].bounding {
		t.Fatalf("after one call: inits %v, ready %+v, want one launcher thread that mounts the procfs and empties its bounding set", inits, ahead)
	}
	// Its init mounts the procfs before any plan comes: its mount
	// namespace has two at /proc (the host's, and the call's on top).
	deadline := time.Now().Add(5 * time.Second)
	for {
		mi, err := os.ReadFile(filepath.Join("/proc", inits[0], "mountinfo"))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Count(mi, []byte(" /proc ")) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the prepared thread's mount namespace has no procfs of its own:\n%s", mi)
		}
		time.Sleep(10 * time.Millisecond)
	}
	ready := nsLinks(t, inits[0])[1]
	got := strings.SplitN(shellOutput(t, plan, ws, script), "\n", 4)
	if len(got) != 4 || len(fresh) != 4 {
		t.Fatalf("the calls printed %q and %q", got, fresh)
	}
	if got[0] != ready {
		t.Errorf("the call ran in PID namespace %s, the prepared thread's is %s", got[0], ready)
	}
	if n, _ := strconv.Atoi(got[1]); n < 1 || n > 4 {
		t.Errorf("the call's /proc lists %s processes: not its own PID namespace's", got[1])
	}
	if got[2] != "CapBnd:\t0000000000000000" || fresh[2] != got[2] {
		t.Errorf("bounding set on the prepared thread %q, without one %q", got[2], fresh[2])
	}
	if got[3] != fresh[3] || !strings.Contains(got[3], "/proc rw,") || !strings.Contains(got[3], "/proc/sys ro,") {
		t.Errorf("the mounts under /proc on the prepared thread:\n%s\nwithout one:\n%s", got[3], fresh[3])
	}
	// A plan without a procfs of its own: the waiting thread, which has
	// one, is not used.
	ready = nsLinks(t, stableInits(t, 1)[0])[1]
	hostProc := *plan
	hostProc.PrivateProc = false
	if got := strings.TrimSpace(shellOutput(t, &hostProc, ws, "readlink /proc/self/ns/pid")); got == ready {
		t.Errorf("a plan without a procfs of its own ran on the thread prepared with one (PID namespace %s)", got)
	}
	// A plan that keeps CAP_NET_BIND_SERVICE (10): not on the emptied
	// thread, and its command has it in its bounding set.
	// The hostProc call's own init, reaped off its path, can still be
	// listed a moment: wait for the one prepared thread's, stable.
	ready = nsLinks(t, stableInits(t, 1)[0])[1]
	withCap := *plan
	withCap.Capabilities = []int{unix.CAP_NET_BIND_SERVICE}
	out := strings.Fields(shellOutput(t, &withCap, ws, "readlink /proc/self/ns/pid; grep CapBnd /proc/self/status"))
	if len(out) != 3 || out[0] == ready || out[2] != "0000000000000400" {
		t.Errorf("a plan keeping CAP_NET_BIND_SERVICE printed %q (the prepared thread's PID namespace is %s)", out, ready)
	}
}

// TestResidentDirectLaunch: a Resident process forks its direct launches
// (danger-full-access) from one resident thread: calls in turn and at once
// each get their own command and exit status, and a command outlives the
// thread of the goroutine that started it (its parent-death signal is tied
// to the forking thread, which must be the resident one).
func TestResidentDirectLaunch(t *testing.T) {
	keepAhead.Store(true)
	t.Cleanup(func() { keepAhead.Store(false) })
	plan, err := Compile(policy.Policy{Mode: profiles.DangerFullAccess, Unrestricted: true}, Probe(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Launch != LaunchDirect {
		t.Fatalf("launch %v, want direct", plan.Launch)
	}
	start := func(script string) *Process {
		proc, err := Start(plan, enforce.Command{Path: "/bin/sh", Argv: []string{"sh", "-c", script}, Dir: t.TempDir(),
			Env: []string{"PATH=/usr/bin:/bin"}, Stdin: os.Stdin, Stdout: os.Stderr, Stderr: os.Stderr})
		if err != nil {
			t.Fatal(err)
		}
		return proc
	}
	check := func(proc *Process, want int) {
		ws, _, err := proc.Wait()
		if err != nil || !ws.Exited() || ws.ExitStatus() != want {
			t.Errorf("command: %v, status %v, want exit %d", err, ws, want)
		}
	}
	for i := range 3 {
		check(start(fmt.Sprintf("exit %d", i+3)), i+3)
	}
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			check(start(fmt.Sprintf("sleep 0.0%d; exit %d", i, 10+i)), 10+i)
		}()
	}
	wg.Wait()
	started := make(chan *Process, 1)
	onEndingThread(func() { started <- start("sleep 0.3; exit 7") })
	check(<-started, 7)
}
