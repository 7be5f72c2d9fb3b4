//go:build windows

package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/sbx-sandbox/sbx/enforce"
	"github.com/sbx-sandbox/sbx/enforce/windows"
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

// Run runs the call in a job with a write-restricted token (or sbx's own
// token for danger-full-access) and reports its outcome. An error means the
// command did not run (the report is still filled with what is known).
//
// IMPORTANT: compiled but not yet run by this repository's CI; see
// docs/platforms.md for running the suite in the windows11 box.
func Run(ctx context.Context, c Call) (enforce.Report, error) {
	rep := enforce.NewReport(c.Policy.Mode.String())
	plan, err := Compile(c)
	if err != nil {
		return rep, err
	}
	if err := admit(&rep, plan, c); err != nil {
		return rep, err
	}
	sigc, stop := relayedSignals(c)
	defer stop()
	start := time.Now()
	proc, err := windows.Start(plan, c.Cmd)
	if err != nil {
		if errors.Is(err, windows.ErrStart) {
			rep.ExitCode = windows.ExecFailureStatus(err)
		}
		return rep, err
	}
	code, waitErr := waitCall(ctx, c, proc, sigc, &rep)
	rep.DurationMS = time.Since(start).Milliseconds()
	rep.Resources = proc.Resources(c.Limits)
	// Closing revokes the call's ACEs. A failure leaves ACEs behind that
	// grant nothing (their SID dies with the call, see enforce/windows), so
	// the command's outcome stands and sbx warns instead of failing.
	if err := proc.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "*** SBX WARNING: %v: ACEs for %s are left on the writable roots (inert)\n", err, plan.CallSID)
	}
	if waitErr != nil {
		return rep, waitErr
	}
	rep.ExitCode = int(code)
	return rep, nil
}

// Doctor probes what this system can enforce.
func Doctor() []Check { return windows.Doctor() }
