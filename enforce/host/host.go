package host

import (
	"os"
	"time"

	"sbx/policy"
)

// Cmd is the command of a call, resolved to an executable.
type Cmd struct {
	Path string
	Argv []string
	Dir  string
	Env  []string
	// Stdin, Stdout, Stderr are the command's fds 0-2.
	Stdin, Stdout, Stderr *os.File
}

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
	// NoDenialReports runs without the denial supervisor: faster for
	// write-heavy commands, but nothing the sandbox blocks is reported.
	NoDenialReports bool
}
