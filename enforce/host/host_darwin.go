//go:build darwin

package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sbx-sandbox/sbx/enforce"
	"github.com/sbx-sandbox/sbx/enforce/darwin"
)

// ErrStart marks a failure of the exec itself.
var ErrStart = darwin.ErrStart

// Compile returns the plan the call's policy gets on this system, without
// running anything.
func Compile(c Call) (*darwin.Plan, error) {
	plan, err := darwin.Compile(c.Policy, darwin.DefaultOptions())
	if err == nil && !c.Limits.IsZero() {
		plan.Downgrades = append(plan.Downgrades, enforce.Downgrade{Feature: "limits",
			Reason: "resource limits are not implemented on macOS: the limits are not enforced"})
	}
	return plan, err
}

// Run runs the call under sandbox-exec (or directly for danger-full-access)
// and reports its outcome. An error means the command did not run (the
// report is still filled with what is known).
//
// IMPORTANT: unverified on Apple hardware; see enforce/darwin.
func Run(ctx context.Context, c Call) (enforce.Report, error) {
	rep := enforce.NewReport(c.Policy.Mode.String())
	plan, err := Compile(c)
	if err != nil {
		return rep, err
	}
	if err := admit(&rep, plan, c); err != nil {
		return rep, err
	}
	var dlog *darwin.DenialLog
	if plan.Launch == darwin.LaunchSandboxExec {
		// Attached before the start, so the command's first denial is seen.
		if dlog, err = darwin.StartDenialLog(); err != nil {
			d := enforce.Downgrade{Feature: "denial-reports", Reason: err.Error() + ": operations the sandbox blocks are not reported"}
			rep.Degraded = append(rep.Degraded, d)
			if err := enforce.CheckRequired(c.Require, []enforce.Downgrade{d}); err != nil {
				return rep, err
			}
		}
	}
	sigs := subscribeSignals(c)
	defer sigs.stop()
	sigs.wait()
	start := time.Now()
	proc, err := darwin.Start(plan, c.Cmd)
	if err != nil {
		if dlog != nil {
			dlog.Finish(c.Policy)
		}
		if errors.Is(err, darwin.ErrStart) {
			rep.ExitCode = darwin.ExecFailureStatus(err)
		}
		return rep, err
	}
	if dlog != nil {
		if err := dlog.Track(proc.Pid); err != nil {
			// Too late to refuse: the command runs. Without the tree only
			// the first process's denials could be told apart, so none are
			// kept.
			rep.Degraded = append(rep.Degraded, enforce.Downgrade{Feature: "denial-reports",
				Reason: err.Error() + ": operations the sandbox blocks are not reported"})
		}
	}
	ws, ru, waitErr := waitCall(ctx, c, proc, sigs, &rep)
	// Darwin's ru_maxrss is in bytes.
	rep.Resources = enforce.Resources{Mechanism: "none", Limits: c.Limits, PeakMemoryBytes: ru.Maxrss,
		PeakMemorySource: "rusage", CPUTimeMS: (ru.Utime.Nano() + ru.Stime.Nano()) / 1e6}
	rep.DurationMS = time.Since(start).Milliseconds()
	if dlog != nil {
		ds, dropped := dlog.Finish(c.Policy)
		rep.Denials = append(rep.Denials, ds...)
		if dropped > 0 {
			rep.Degraded = append(rep.Degraded, enforce.Downgrade{Feature: "denial-reports",
				Reason: fmt.Sprintf("%d more denials were seen but not listed", dropped)})
		}
	}
	if waitErr != nil {
		return rep, waitErr
	}
	setExit(&rep, ws)
	return rep, nil
}

// Doctor probes what this Mac can enforce.
func Doctor() []Check { return darwin.Doctor() }
