package host

import (
	"time"

	"sbx/enforce"
	"sbx/policy"
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
	// Limits are the call's resource limits (memory, processes, CPU).
	Limits enforce.Limits
	// NoDenialReports runs without the denial supervisor: faster for
	// write-heavy commands, but nothing the sandbox blocks is reported.
	NoDenialReports bool
}
