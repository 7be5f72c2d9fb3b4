//go:build windows

package host

import (
	"context"
	"fmt"
	"os"

	"github.com/sbx-sandbox/sbx/internal/enforce/windows"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// ErrStart marks a failure of the process creation itself.
var ErrStart = windows.ErrStart

// Compile returns the plan the call's policy gets on this system, without
// running anything. Each compile draws a new call SID.
func Compile(c Call) (*windows.Plan, error) {
	opts, err := windows.DefaultOptions()
	if err != nil {
		return nil, err
	}
	opts.Limits = c.Limits
	return windows.Compile(c.Policy, opts)
}

// execFailureStatus is the exit status of a command whose process could
// not be created.
func execFailureStatus(err error) int { return windows.ExecFailureStatus(err) }

// windowsCall is the Windows backend of one call: in a job with a
// write-restricted token (or sbx's own token for danger-full-access).
//
// IMPORTANT: compiled but not yet run by this repository's CI; see
// docs/platforms.md for running the suite in the windows11 box.
type windowsCall struct {
	c    Call
	plan *windows.Plan
	sigc chan os.Signal
	stop func()
	proc *windows.Process
	code uint32
}

func newBackend(c Call) (backend, error) { return &windowsCall{c: c}, nil }

func (b *windowsCall) prepare(rep *report.Report) error {
	plan, err := Compile(b.c)
	if err != nil {
		return err
	}
	b.plan = plan
	if err := admit(rep, plan, b.c); err != nil {
		return err
	}
	b.sigc, b.stop = relayedSignals(b.c)
	return nil
}

func (b *windowsCall) run(ctx context.Context, rep *report.Report) (waitErr, err error) {
	b.proc, err = windows.Start(b.plan, b.c.Cmd)
	if err != nil {
		return nil, err
	}
	b.code, waitErr = waitCall(ctx, b.c, b.proc, b.sigc, rep)
	return waitErr, nil
}

func (b *windowsCall) finish(rep *report.Report) {
	rep.Resources = b.proc.Resources(b.c.Limits)
	// Closing revokes the call's ACEs. A failure leaves ACEs behind that
	// grant nothing (their SID dies with the call, see enforce/windows), so
	// the command's outcome stands and sbx warns instead of failing.
	if err := b.proc.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "*** SBX WARNING: %v: ACEs for %s are left on the writable roots (inert)\n", err, b.plan.CallSID)
	}
}

func (b *windowsCall) exit(rep *report.Report) { rep.ExitCode = int(b.code) }

func (b *windowsCall) close() {
	if b.stop != nil {
		b.stop()
	}
}

// Doctor probes what this system can enforce.
func Doctor() []report.Check { return windows.Doctor() }
