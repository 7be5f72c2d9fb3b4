package host

import (
	"time"

	"github.com/sbx-sandbox/sbx/enforce"
	"github.com/sbx-sandbox/sbx/policy"
)

// Cmd is the command of a call, resolved to an executable.
type Cmd = enforce.Command

// Call is one sandboxed command.
type Call struct {
	Policy  policy.Policy
	Cmd     Cmd
	Require []string
	// Timeout kills the command's process group when it expires (0: none).
	Timeout time.Duration
	// ForwardSignals relays SIGINT, SIGTERM, SIGHUP and SIGQUIT received by
	// sbx to the command, as a person at a terminal expects.
	ForwardSignals bool
	// KillGrace is how long a command told to stop (SIGTERM or SIGHUP
	// relayed, or sbx's parent gone) has to exit before its tree is
	// killed; 0 means DefaultKillGrace.
	KillGrace time.Duration
	// Limits are the call's resource limits (memory, processes, CPU).
	Limits enforce.Limits
	// NoDenialReports runs without the denial supervisor: faster for
	// write-heavy commands, but nothing the sandbox blocks is reported.
	NoDenialReports bool
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

// backendPlan is what Explain and Describe show of every backend's Plan.
type backendPlan interface {
	String() string
	Enforcement() enforce.Enforcement
	Degraded() []enforce.Downgrade
}

// admit fills rep with what plan enforces and degrades, and refuses a call
// that requires a feature plan degraded.
func admit(rep *enforce.Report, plan backendPlan, c Call) error {
	rep.Enforcement = enforcement(plan, c)
	rep.Degraded = append(rep.Degraded, plan.Degraded()...)
	return enforce.CheckRequired(c.Require, plan.Degraded())
}

// enforcement is plan's Enforcement with what the policy itself decided
// and every backend carries out the same way.
func enforcement(plan backendPlan, c Call) enforce.Enforcement {
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
func Describe(c Call) (enforce.Enforcement, []enforce.Downgrade, error) {
	plan, err := compiled(c)
	if err != nil {
		return enforce.Enforcement{}, nil, err
	}
	return enforcement(plan, c), plan.Degraded(), nil
}

// Check is one line of `sbx doctor`.
type Check = enforce.Check
