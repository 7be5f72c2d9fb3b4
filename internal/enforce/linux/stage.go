//go:build linux

package linux

import (
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/policy"
)

// stagePayload is what the parent sends the stage on fd 3.
type stagePayload struct {
	// StatusFD is the stage's fd for the command's wait status when the
	// stage is PID 1 of a new PID namespace (0: exec the command instead).
	StatusFD int
	Plan     *stagePlan
	Path     string
	Argv     []string
	Dir      string
	Env      []string
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
}

// stagePlan is the part of a Plan the stage applies, all the payload
// carries: decoding a whole Plan (the policy, every downgrade's text) cost
// a stage ~0.7 ms before its first step, mostly building JSON decoders for
// types it never uses.
type stagePlan struct {
	NewPIDNS       bool          `json:",omitempty"`
	NewNetNS       bool          `json:",omitempty"`
	NewUTSNS       bool          `json:",omitempty"`
	NewIPCNS       bool          `json:",omitempty"`
	PrivateProc    bool          `json:",omitempty"`
	Capabilities   []int         `json:",omitempty"`
	Placeholders   []string      `json:",omitempty"`
	ReadOnlyRoot   bool          `json:",omitempty"`
	ReadOnlyMounts []string      `json:",omitempty"`
	MaskedMounts   []string      `json:",omitempty"`
	WriteRoots     []string      `json:",omitempty"`
	Landlock       *LandlockPlan `json:",omitempty"`
	Supervise      Supervise
	SeccompProg    BPFProgram
	SeccompPlain   BPFProgram `json:",omitempty"`
	Rlimits        []Rlimit   `json:",omitempty"`
}

func newStagePlan(p *Plan) *stagePlan {
	return &stagePlan{NewPIDNS: p.NewPIDNS, NewNetNS: p.NewNetNS, NewUTSNS: p.NewUTSNS, NewIPCNS: p.NewIPCNS,
		PrivateProc: p.PrivateProc, Capabilities: p.Capabilities, Placeholders: p.Placeholders, ReadOnlyRoot: p.ReadOnlyRoot,
		ReadOnlyMounts: p.ReadOnlyMounts, MaskedMounts: p.MaskedMounts, WriteRoots: p.Policy.WriteRoots,
		Landlock: p.Landlock, Supervise: p.Supervise, SeccompProg: p.SeccompProg, SeccompPlain: p.SeccompPlainProg,
		Rlimits: p.Rlimits}
}

// plan is the Plan the stage's steps take: sp's fields, nothing else.
func (sp *stagePlan) plan() *Plan {
	return &Plan{NewPIDNS: sp.NewPIDNS, NewNetNS: sp.NewNetNS, NewUTSNS: sp.NewUTSNS, NewIPCNS: sp.NewIPCNS,
		PrivateProc: sp.PrivateProc, Capabilities: sp.Capabilities, Placeholders: sp.Placeholders, ReadOnlyRoot: sp.ReadOnlyRoot,
		ReadOnlyMounts: sp.ReadOnlyMounts, MaskedMounts: sp.MaskedMounts, Policy: policy.Policy{WriteRoots: sp.WriteRoots},
		Landlock: sp.Landlock, Supervise: sp.Supervise, SeccompProg: sp.SeccompProg, SeccompPlainProg: sp.SeccompPlain,
		Rlimits: sp.Rlimits}
}

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
