package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/run"
	"github.com/sbx-sandbox/sbx/internal/wire"
)

func init() {
	register("exec", command{summary: "run one JSON request from stdin, print one JSON result on stdout", run: execCmd})
}

// execRequest is the wire shape of `sbx exec` (wire.Request).
type execRequest = wire.Request

// execResult is the wire shape of the result (wire.Result).
type execResult = wire.Result

const execUsage = `Usage: sbx exec < request.json

Reads one JSON request on stdin and prints one JSON result on stdout.
See docs/json.md for the shapes.

APPROVAL: the default approval_policy of sbx exec is "never", not sbx run's
"on-request". A program calls sbx exec, with no person at a terminal to ask,
so an escalation that no grant covers is refused, exit 125 with
error_detail {"kind": "denied_by_policy", "outcome": "never"}. A denied call's
result has the two ways to retry it: retry.grant, the profile to add to the
request's grants.turn or grants.session once the runtime's user approved it;
or retry.request, the request asking for approval (fill in justification and
send it with "approval_policy": "on-request" and an "approver" program).

Cancellation: SIGTERM or SIGHUP to sbx is relayed to the command, and its
tree is killed kill_grace_ms later (default 2000); SIGINT is relayed too.
The result is still written, with killed_by "signal" and killed_by_signal.
sbx killed with SIGKILL writes no result (the command tree dies with it, but
on macOS: degraded parent-death-kill).
`

// maxExecRequest bounds the request read from stdin (wire.MaxRequest).
const maxExecRequest = wire.MaxRequest

// maxKillGrace bounds kill_grace_ms and --kill-grace.
const maxKillGrace = wire.MaxKillGrace

func execCmd(args []string, stdio Stdio) int {
	fs := newFlagSet("exec", execUsage, stdio)
	if code, ok := fs.parse(args); !ok {
		return code
	}
	// Read one byte past the limit, so that an oversized request is refused
	// without being held in memory whole.
	data, err := io.ReadAll(io.LimitReader(stdio.In, maxExecRequest+1))
	if err != nil {
		return execRefuse(stdio, internalError{fmt.Errorf("read request: %w", err)})
	}
	if len(data) > maxExecRequest {
		return execRefuse(stdio, fmt.Errorf("request: longer than %d bytes (16 MiB), the limit of sbx exec; give large inputs as files", maxExecRequest))
	}
	req, err := wire.Decode(data)
	if err != nil {
		return execRefuse(stdio, err)
	}
	r, in, err := req.Call(os.Environ())
	if err != nil {
		return execRefuse(stdio, err)
	}
	if len(req.Approver) > 0 {
		// The request's program, asked as the call would, but SIGINT or
		// SIGTERM to sbx settles its ask cancelled.
		r.Escalation.Approver = withInterrupt(escalate.CommandApprover{Argv: req.Approver})
	}
	resp, err := run.Exec(context.Background(), req, r, in, run.Options{
		Raw: data, Events: wire.LineSink(stdio.Out), Prestart: true, RelaySignals: true,
		Executable: func() (string, error) { return selfExecutable() },
	})
	if err != nil {
		return execRefuse(stdio, err)
	}
	if resp.FS != nil {
		return writeJSON(stdio.Out, resp.FS)
	}
	if req.Stream {
		return writeJSONLine(stdio.Out, streamResult{Event: "result", Result: *resp.Result})
	}
	return writeJSON(stdio.Out, resp.Result)
}

func execRefuse(stdio Stdio, err error) int {
	fmt.Fprintf(stdio.Err, "sbx exec: %v\n", err)
	writeJSON(stdio.Out, newRefusal(err))
	return ExitRefused
}

func writeJSON(w io.Writer, v any) int {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		fmt.Fprintf(os.Stderr, "sbx: encode result: %v\n", err)
		return ExitRefused
	}
	w.Write(append(b, '\n'))
	return 0
}
