//go:build windows

package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"sbx/enforce"
	"sbx/enforce/windows"
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
	rep.Enforcement = plan.Enforcement()
	rep.Degraded = append(rep.Degraded, plan.Downgrades...)
	if err := enforce.CheckRequired(c.Require, plan.Downgrades); err != nil {
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

// StageCommand is the hidden subcommand that runs StageMain.
const StageCommand = "__stage"

// StageMain has nothing to do on Windows: the token and the job are set up
// by sbx itself, no sbx stage runs inside the sandbox.
func StageMain() int { return 125 }

// Check is one line of `sbx doctor`.
type Check = windows.Check

// Doctor probes what this system can enforce.
func Doctor() []Check { return windows.Doctor() }

// compiled is Compile for Explain and Describe.
func compiled(c Call) (backendPlan, error) {
	plan, err := Compile(c)
	return plan, err
}
