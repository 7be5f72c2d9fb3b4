package host

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/sbx-sandbox/sbx/internal/enforce"
	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/report"
	"github.com/sbx-sandbox/sbx/internal/steptrace"
)

// Call is one sandboxed command.
type Call struct {
	Policy  policy.Policy
	Cmd     enforce.Command
	Require []report.Feature
	// Timeout kills the command's process group when it expires (0: none).
	Timeout time.Duration
	// ForwardSignals relays SIGINT, SIGTERM, SIGHUP and SIGQUIT received by
	// sbx to the command, as a person at a terminal expects; it hears them
	// through the program's Notifier (SetNotifier), and without one relays
	// nothing.
	ForwardSignals bool
	// KillGrace is how long a command told to stop (SIGTERM or SIGHUP
	// relayed, or sbx's parent gone) has to exit before its tree is
	// killed; 0 means DefaultKillGrace.
	KillGrace time.Duration
	// Limits are the call's resource limits (memory, processes, CPU).
	Limits report.Limits
	// NoDenialReports runs without the denial supervisor: faster for
	// write-heavy commands, but nothing the sandbox blocks is reported.
	NoDenialReports bool
	// Cleanup, when set, counts the clean-up that Run may leave running
	// when it returns (Linux: removing the call's carve-out placeholders
	// and its control groups): the caller waits for it before it says the
	// call is over, and can do its own work meanwhile. Nil: Run returns
	// once everything is done.
	Cleanup *sync.WaitGroup
	// Started, when set, is called once the command runs under its final
	// plan (Linux: no launch without namespaces can follow), from the
	// goroutine that called Run. A caller that gave the command the write
	// ends of pipes closes its own copies there, so that its readers see
	// the end of the output as soon as the command's tree is gone, while
	// Run still ends the call. Not called when the command did not start.
	Started func()
	// BeforeStart, when set, is asked once the call's plan is compiled and
	// admitted, before anything is made for it (placeholders, supervisor,
	// cgroup, launch): an error is Run's, with nothing made or started. A
	// server waits there for its call/started record to be on disk, so that
	// the fsync overlaps the compile (#31).
	BeforeStart func() error
}

// DefaultKillGrace is the KillGrace of a call that sets none.
const DefaultKillGrace = 2 * time.Second

// killGrace is c's grace period, defaulted.
func (c Call) killGrace() time.Duration {
	if c.KillGrace > 0 {
		return c.KillGrace
	}
	return DefaultKillGrace
}

// backend is what one operating system contributes to a call: Run is the
// same steps on every OS (prepare, start and wait, the duration, finish,
// the exit status), and a backend, made for one call by newBackend (in
// host_<os>.go), fills each in.
type backend interface {
	// prepare compiles the call's plan, admits it into rep (see admit)
	// and subscribes to the signals the call relays. An error refuses the
	// call: nothing ran.
	prepare(rep *report.Report) error
	// run starts the command and waits for it, relaying signals and
	// enforcing the timeout and ctx, then fills rep with what the ended
	// call measured that counts in its duration. err means the command did
	// not run; waitErr that waiting for it failed.
	run(ctx context.Context, rep *report.Report) (waitErr, err error)
	// finish fills rep with what comes after the duration was taken.
	finish(rep *report.Report)
	// exit fills rep's exit status, once waiting for the command did not
	// fail.
	exit(rep *report.Report)
	// close releases what prepare took (the signal subscriptions), on
	// every path.
	close()
}

// Run runs the call and reports its outcome. An error means the command did
// not run, or waiting for it failed (the report is still filled with what is
// known). On a platform without a backend nothing runs: an
// UnsupportedFeatureError and an empty report.
func Run(ctx context.Context, c Call) (report.Report, error) {
	b, err := newBackend(c)
	if err != nil {
		return report.Report{}, err
	}
	return runOn(ctx, c, b)
}

// runOn is Run's steps on backend b.
func runOn(ctx context.Context, c Call, b backend) (report.Report, error) {
	defer b.close()
	rep := report.NewReport(c.Policy.Mode.String())
	if err := b.prepare(&rep); err != nil {
		return rep, err
	}
	steptrace.Mark("compile the plan (enforce), admit")
	if c.BeforeStart != nil {
		if err := c.BeforeStart(); err != nil {
			return rep, err
		}
	}
	start := time.Now()
	waitErr, err := b.run(ctx, &rep)
	if err != nil {
		if errors.Is(err, ErrStart) {
			rep.ExitCode = execFailureStatus(err)
		}
		return rep, err
	}
	rep.DurationMS = time.Since(start).Milliseconds()
	b.finish(&rep)
	if waitErr != nil {
		if errors.Is(waitErr, ErrStart) {
			// A Linux stage launch finds out only now that the exec failed.
			rep.ExitCode = execFailureStatus(waitErr)
		}
		return rep, waitErr
	}
	b.exit(&rep)
	return rep, nil
}

// backendPlan is what Explain and Describe show of every backend's Plan.
type backendPlan interface {
	String() string
	Enforcement() report.Enforcement
	Degraded() []report.Downgrade
}

// admit fills rep with what plan enforces and degrades, and refuses a call
// that requires a feature plan degraded.
func admit(rep *report.Report, plan backendPlan, c Call) error {
	rep.Enforcement = enforcement(plan, c)
	rep.Degraded = append(rep.Degraded, plan.Degraded()...)
	return report.CheckRequired(c.Require, plan.Degraded())
}

// enforcement is plan's Enforcement with what the policy itself decided
// and every backend carries out the same way.
func enforcement(plan backendPlan, c Call) report.Enforcement {
	e := plan.Enforcement()
	if !c.Policy.Unrestricted {
		e.ProtectedNames = c.Policy.ProtectedNames
	}
	return e
}

// Explain compiles the call's policy without running anything and returns
// the plan's stable text and its structured form.
func Explain(c Call) (string, any, error) {
	plan, err := compiled(c)
	if err != nil {
		return "", nil, err
	}
	return plan.String(), plan, nil
}

// Describe reports what the call would be enforced with, for a call that
// never starts (its command was not found), so its report has the same shape.
func Describe(c Call) (report.Enforcement, []report.Downgrade, error) {
	plan, err := compiled(c)
	if err != nil {
		return report.Enforcement{}, nil, err
	}
	return enforcement(plan, c), plan.Degraded(), nil
}
