//go:build linux

package linux

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/profiles"
)

// TestPrestartedInitGone: a prestarted launcher thread whose init has
// died (killed here; in the kernel matrix its start failed under load) is
// not used: every fork into its PID namespace would fail with ENOMEM, as
// the call did ("pid namespace init: cannot allocate memory"). The call
// runs on a fresh thread, in a PID namespace of its own.
func TestPrestartedInitGone(t *testing.T) {
	ws, plan := prestartPlan(t)
	Prestart(true, [3]*os.File{os.Stdin, os.Stdout, os.Stderr})
	waitInits(t, true)
	pid, _ := strconv.Atoi(childInits()[0])
	if err := unix.Kill(pid, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitInits(t, false) // a zombie, not reaped: its namespace is dead
	ownPIDNS(t, plan, ws)
	waitInits(t, false)
}

// TestPrestartedInitFailed: the kernel matrix's flake. A prestarted
// thread whose init's start failed once its process existed (its exec
// failed under load: the process, PID 1 of the namespace, died) left the
// namespace dead, and the call's second try at init met ENOMEM ("pid
// namespace init: cannot allocate memory"). The call now runs on a fresh
// thread.
func TestPrestartedInitFailed(t *testing.T) {
	ws, plan := prestartPlan(t)
	// prestartThread's steps, but its init dies at once (as one whose
	// exec failed does, reaped by ForkExec).
	pre := &prestarted{netns: true, jobs: make(chan func(nsDone), 1)}
	made := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		flags := unix.CLONE_NEWPID | unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWNET
		var done nsDone
		err := unix.Unshare(flags)
		if err == nil {
			done.flags = flags
			err = unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, "")
		}
		if err == nil {
			var pid int
			if pid, err = syscall.ForkExec("/bin/true", []string{"true"}, &syscall.ProcAttr{}); err == nil {
				_, err = syscall.Wait4(pid, nil, 0, nil)
			}
		}
		made <- err
		if job := <-pre.jobs; job != nil {
			job(done)
		}
	}()
	if err := <-made; err != nil {
		t.Fatal(err)
	}
	setPending(pre)
	ownPIDNS(t, plan, ws)
}

// prestartPlan is a workspace-write plan in a fresh workspace, the kind a
// prestarted launcher thread serves (with the network off).
func prestartPlan(t *testing.T) (string, *Plan) {
	t.Helper()
	if runtime.GOARCH != "amd64" || !hasCapSysAdmin() {
		t.Skip("SKIP: the prestart is for the privileged thread launch on amd64 (needs CAP_SYS_ADMIN)")
	}
	ws := t.TempDir()
	pol, err := policy.Build(policy.Request{Mode: profiles.WorkspaceWrite, Cwd: ws, ExcludeTmp: true, ExcludeTmpdir: true})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := Compile(pol, Probe(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return ws, plan
}

// ownPIDNS runs plan's command, which must start and run in a PID
// namespace that is not sbx's.
func ownPIDNS(t *testing.T, plan *Plan, ws string) {
	t.Helper()
	out := strings.TrimSpace(shellOutput(t, plan, ws, "readlink /proc/self/ns/pid"))
	if !strings.HasPrefix(out, "pid:[") || out == testProcessNS[1] {
		t.Errorf("the command printed %q (sbx's PID namespace %s): want one of its own", out, testProcessNS[1])
	}
}
