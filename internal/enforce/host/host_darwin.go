//go:build darwin

package host

import (
	"context"
	"fmt"
	"syscall"

	"github.com/sbx-sandbox/sbx/internal/enforce/darwin"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// ErrStart marks a failure of the exec itself.
var ErrStart = darwin.ErrStart

// Compile returns the plan the call's policy gets on this system, without
// running anything.
func Compile(c Call) (*darwin.Plan, error) {
	plan, err := darwin.Compile(c.Policy, darwin.DefaultOptions())
	if err == nil && !c.Limits.IsZero() {
		plan.Downgrades = append(plan.Downgrades, report.Downgrade{Feature: report.FeatureLimits,
			Reason: "resource limits are not implemented on macOS: the limits are not enforced"})
	}
	return plan, err
}

// execFailureStatus is the exit status of a command that could not be
// executed.
func execFailureStatus(err error) int { return darwin.ExecFailureStatus(err) }

// darwinCall is the macOS backend of one call: under sandbox-exec (or
// directly for danger-full-access).
//
// IMPORTANT: unverified on Apple hardware; see enforce/darwin.
type darwinCall struct {
	c    Call
	plan *darwin.Plan
	dlog *darwin.DenialLog
	sigs *callSignals
	ws   syscall.WaitStatus
}

func newBackend(c Call) (backend, error) { return &darwinCall{c: c}, nil }

func (b *darwinCall) prepare(rep *report.Report) error {
	c := b.c
	plan, err := Compile(c)
	if err != nil {
		return err
	}
	b.plan = plan
	if err := admit(rep, plan, c); err != nil {
		return err
	}
	if plan.Launch == darwin.LaunchSandboxExec {
		// Attached before the start, so the command's first denial is seen.
		if b.dlog, err = darwin.StartDenialLog(); err != nil {
			d := report.Downgrade{Feature: report.FeatureDenialReports, Reason: err.Error() + ": operations the sandbox blocks are not reported"}
			rep.Degraded = append(rep.Degraded, d)
			if err := report.CheckRequired(c.Require, []report.Downgrade{d}); err != nil {
				return err
			}
		}
	}
	b.sigs = subscribeSignals(c)
	b.sigs.wait()
	return nil
}

func (b *darwinCall) run(ctx context.Context, rep *report.Report) (waitErr, err error) {
	c := b.c
	proc, err := darwin.Start(b.plan, c.Cmd)
	if err != nil {
		if b.dlog != nil {
			b.dlog.Finish(c.Policy)
		}
		return nil, err
	}
	if b.dlog != nil {
		if err := b.dlog.Track(proc.Pid); err != nil {
			// Too late to refuse: the command runs. Without the tree only
			// the first process's denials could be told apart, so none are
			// kept.
			rep.Degraded = append(rep.Degraded, report.Downgrade{Feature: report.FeatureDenialReports,
				Reason: err.Error() + ": operations the sandbox blocks are not reported"})
		}
	}
	ws, ru, waitErr := waitCall(ctx, c, proc, b.sigs, rep)
	b.ws = ws
	// Darwin's ru_maxrss is in bytes.
	rep.Resources = report.Resources{Mechanism: "none", Limits: c.Limits, PeakMemoryBytes: ru.Maxrss,
		PeakMemorySource: "rusage", CPUTimeMS: (ru.Utime.Nano() + ru.Stime.Nano()) / 1e6}
	return waitErr, nil
}

func (b *darwinCall) finish(rep *report.Report) {
	if b.dlog != nil {
		ds, dropped := b.dlog.Finish(b.c.Policy)
		rep.Denials = append(rep.Denials, ds...)
		if dropped > 0 {
			rep.Degraded = append(rep.Degraded, report.Downgrade{Feature: report.FeatureDenialReports,
				Reason: fmt.Sprintf("%d more denials were seen but not listed", dropped)})
		}
	}
}

func (b *darwinCall) exit(rep *report.Report) { setExit(rep, b.ws) }

func (b *darwinCall) close() {
	if b.sigs != nil {
		b.sigs.stop()
	}
}

// Doctor probes what this Mac can enforce.
func Doctor() []report.Check { return darwin.Doctor() }
