//go:build linux

package linux

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/enforce/linux/seccomp"
)

// stagePayload is what the parent sends the stage on fd 3.
type stagePayload struct {
	// StatusFD is the stage's fd for the command's wait status when the
	// stage is PID 1 of a new PID namespace (0: exec the command instead).
	StatusFD int
	// Plan is all of the plan the stage applies (see StageSpec). Every
	// step of the stage (enterNamespaces, privateMounts, setupMounts,
	// dropCapabilities, restrictThread and its loadFilter, setRlimits)
	// takes the StageSpec itself, never a Plan, so that a step reading a
	// field outside the spec does not compile, rather than finding it
	// zero in the stage alone and applying less than a thread launch.
	Plan *StageSpec
	Path string
	Argv []string
	Dir  string
	Env  []string
	// ListenerSocket is the fd of the unix socket the stage sends its
	// seccomp listener on (SCM_RIGHTS), 0 when the plan is unsupervised.
	ListenerSocket int `json:",omitempty"`
	// Terminal: fds 0-2 are a pty slave that becomes the command's
	// controlling terminal (see enforce.Command.Terminal).
	Terminal bool `json:",omitempty"`
	// ProxySocket is the fd of the socket the stage sends the proxy's
	// listening sockets on (sendProxy), before the seccomp listener; 0
	// without network by domain.
	ProxySocket int `json:",omitempty"`
	// SeccompProg and SeccompPlainProg name the plan's programs when they
	// are ones built into sbx (seccomp.Ref), which the stage, the same
	// binary, takes from there: Plan then carries none (see compact).
	SeccompProg      *seccomp.Ref `json:",omitempty"`
	SeccompPlainProg *seccomp.Ref `json:",omitempty"`
}

// compact is pl with the plan's seccomp programs that sbx has built in
// named instead of carried: they were ~5 KB of the payload's ~7.5, whose
// decode was a third of the stage's CPU. The plan pl points to is not
// changed.
func (pl stagePayload) compact() stagePayload {
	spec := *pl.Plan
	if r, ok := seccomp.RefOf(spec.SeccompProg); ok {
		pl.SeccompProg, spec.SeccompProg = &r, nil
	}
	if r, ok := seccomp.RefOf(spec.SeccompPlainProg); ok {
		pl.SeccompPlainProg, spec.SeccompPlainProg = &r, nil
	}
	pl.Plan = &spec
	return pl
}

// expand puts back in pl.Plan the programs compact named.
func (pl *stagePayload) expand() error {
	for _, f := range []struct {
		ref  *seccomp.Ref
		prog *seccomp.BPFProgram
	}{{pl.SeccompProg, &pl.Plan.SeccompProg}, {pl.SeccompPlainProg, &pl.Plan.SeccompPlainProg}} {
		if f.ref == nil {
			continue
		}
		p, ok := f.ref.Program()
		if !ok || len(*f.prog) > 0 {
			return fmt.Errorf("seccomp program %+v: none built into sbx, or a program beside it", *f.ref)
		}
		*f.prog = p
	}
	return nil
}

// stageNetnsArg, after StageCommand, tells the stage it was cloned into a
// new network namespace.
const stageNetnsArg = "netns"

// The stage's fds past stdio (see stagePayload).
const (
	stagePlanFD     = 3
	stageListenerFD = 4
	stageStatusFD   = 5
)

// stageCloneFlags are the namespaces a stage may be cloned into (the plan
// says which it was); the mount namespace it makes itself.
const stageCloneFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC

// stageExecFailed on the status pipe says the stage could not execute the
// command, stageNoMounts that it could not make its mounts (before anything
// ran); the errno follows. Neither is a wait status: those fit in 16 bits.
const (
	stageExecFailed = 0xFFFFFFFF
	stageNoMounts   = 0xFFFFFFFE
)

// stageExitCode is the exit code of a stage that is PID 1 once it wrote msg
// (a wait status, or a marker and its errno) on its status pipe: the
// command's exit code, 128+signal for a signal (the shell's convention),
// what a thread launch would exit with for a marker. sbx reaps the stage
// from the kernel and checks the message against it (stageStatus): the
// stage's exit is out of the command's reach, the pipe perhaps not.
func stageExitCode(msg uint32, errno syscall.Errno) int {
	switch msg {
	case stageExecFailed:
		return ExecFailureStatus(errno)
	case stageNoMounts:
		return 125
	}
	ws := syscall.WaitStatus(msg)
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// validWaitStatus: v is what wait4 gives for a child that exited or was
// killed (no flags asked for stopped or continued children): an exit code
// in bits 8-15 and nothing below, or a signal (1-126) in bits 0-6, the
// core-dump flag in bit 7 and nothing above.
func validWaitStatus(v uint32) bool {
	if v > 0xFFFF {
		return false
	}
	sig := v & 0x7F
	return sig == 0 || (sig != 0x7F && v>>8 == 0)
}
