package host

import (
	"context"
	"errors"
	"os"
	"syscall"

	"github.com/sbx-sandbox/sbx/internal/enforce/linux"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// ErrStart marks a failure of the exec itself (see linux.ExecFailureStatus).
var ErrStart = linux.ErrStart

// Compile returns the plan the call's policy gets on this system, without
// running anything. Unlike a call, it tries a user namespace first where
// the sysctls allow one (linux.TryUserNS), so that explain shows the plan
// the call will fall back to.
func Compile(c Call) (*linux.Plan, error) {
	sys := linux.Probe()
	if !sys.Privileged && sys.UserNS {
		if err := linux.TryUserNS(); err != nil {
			sys = sys.WithoutUserNS(err)
		}
	}
	return compileFor(c, sys)
}

func compileFor(c Call, sys linux.System) (*linux.Plan, error) {
	return linux.Compile(c.Policy, sys, linux.Options{Limits: c.Limits, NoDenialReports: c.NoDenialReports, Require: c.Require, Cwd: c.Cmd.Dir,
		Streams: [3]*os.File{c.Cmd.Stdin, c.Cmd.Stdout, c.Cmd.Stderr}})
}

// execFailureStatus is the exit status of a command that could not be
// executed.
func execFailureStatus(err error) int { return linux.ExecFailureStatus(err) }

// linuxCall is the Linux backend of one call.
type linuxCall struct {
	c    Call
	sigs *callSignals
	sys  linux.System
	plan *linux.Plan
	proc *linux.Process
	ws   syscall.WaitStatus
}

func newBackend(c Call) (backend, error) { return &linuxCall{c: c}, nil }

// prepare subscribes to the signals first, so that the subscription's round
// trips overlap the compile.
func (b *linuxCall) prepare(rep *report.Report) error {
	c := b.c
	b.sigs = subscribeSignals(c)
	b.sys = linux.Probe()
	plan, err := compileFor(c, b.sys)
	if err != nil {
		return err
	}
	b.plan = plan
	err = admit(rep, plan, c)
	rep.Enforcement.PTY = c.Cmd.Terminal
	if err != nil {
		return err
	}
	b.sigs.wait()
	return nil
}

func (b *linuxCall) run(ctx context.Context, rep *report.Report) (waitErr, err error) {
	c, plan, sys := b.c, b.plan, b.sys
	var ws syscall.WaitStatus
	var ru syscall.Rusage
	var proc *linux.Process
	for fellBack := false; ; fellBack = true {
		proc, err = linux.Start(plan, c.Cmd)
		if err == nil {
			proc.Cleanup = c.Cleanup
			if c.Started != nil && plan.Launch != linux.LaunchStage {
				// Only a stage finds out at Wait that its namespaces
				// could not be made, and is launched again.
				c.Started()
			}
			ws, ru, waitErr = waitCall(ctx, c, proc, b.sigs, rep)
		}
		// The sysctls allowed a user namespace, the kernel did not (a
		// container's seccomp profile, an outer sandbox: its uid map
		// write refused at the clone, or its mounts in the stage before
		// the command ran): fall back to Landlock and seccomp without
		// namespaces, as doctor says, with every lost layer in the
		// report and --require still refusing. Once only.
		nsErr := err
		if nsErr == nil {
			nsErr = waitErr
		}
		if fellBack || !errors.Is(nsErr, linux.ErrUserNS) {
			break
		}
		if err == nil {
			proc.EndSupervision()
		}
		if plan, err = compileFor(c, sys.WithoutUserNS(nsErr)); err != nil {
			return nil, err
		}
		*rep = report.NewReport(c.Policy.Mode.String())
		if err = admit(rep, plan, c); err != nil {
			return nil, err
		}
		rep.Enforcement.PTY = c.Cmd.Terminal
	}
	if err != nil {
		return nil, err
	}
	b.plan, b.proc, b.ws = plan, proc, ws
	rep.Resources = proc.Resources(ru)
	sv := proc.EndSupervision()
	rep.Denials = append(rep.Denials, sv.Denials...)
	rep.Denials = append(rep.Denials, proc.ProxyDenials()...)
	rep.DenialsDropped += sv.Dropped
	if len(sv.Downgrades) > 0 {
		// The supervisor could not be set up: what counted on it is as
		// without it.
		rep.Degraded = append(rep.Degraded[:0], plan.UnsupervisedDowngrades()...)
		rep.Degraded = append(rep.Degraded, sv.Downgrades...)
	}
	return waitErr, nil
}

func (b *linuxCall) finish(rep *report.Report) {}

func (b *linuxCall) exit(rep *report.Report) {
	setExit(rep, b.ws)
	rep.Denials = append(rep.Denials, linux.SigsysDenial(b.plan, b.ws)...)
	if rep.KilledBy == "" && b.ws.Signaled() && b.ws.Signal() == syscall.SIGKILL && rep.Resources.OOMKills > 0 {
		rep.KilledBy = "memory"
	}
}

func (b *linuxCall) close() {
	if b.sigs != nil {
		b.sigs.stop()
	}
}

// StageCommand is the hidden subcommand that runs StageMain.
const StageCommand = linux.StageCommand

// StageMain is the in-sandbox stage of a LaunchStage call.
func StageMain() int { return linux.StageMain() }

// Doctor probes what this system can enforce.
func Doctor() []report.Check { return linux.Doctor() }

// Prestart makes the namespaces of a sandboxed call without limits, a
// network namespace when netns, while the caller still prepares the call:
// on its launcher thread, or unprivileged in a stage whose stdio is the
// command's to be (see linux.Prestart). Run uses them if the plan (and, for
// a stage, the command's stdio) asks for exactly those.
func Prestart(netns bool, stdio [3]*os.File) { linux.Prestart(netns, stdio) }

// DiscardPrestart ends what Prestart started when no call used it.
func DiscardPrestart() { linux.DiscardPrestart() }

// Resident tells the launches that this process is a server that launches
// call after call: each prepares the next call's namespaces while its
// command runs (see linux.Resident).
func Resident() { linux.Resident() }
