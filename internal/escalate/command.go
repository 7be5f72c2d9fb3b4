package escalate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// DefaultApproverTimeout bounds a CommandApprover without a Timeout. A person
// may be behind the program, so it is generous, but never unbounded: a hung
// approver must end in a denial.
const DefaultApproverTimeout = 2 * time.Minute

// maxAnswer caps what is read from an approver's stdout; a real answer is a
// few dozen bytes.
const maxAnswer = 64 << 10

// CommandApprover asks an external program (`--approver CMD`). It writes the
// ApprovalRequest as JSON on the program's stdin and reads one JSON answer,
// {"outcome": "allowed-once"}, from its stdout. The answer is strict: unknown
// fields, trailing data or a missing outcome are malformed.
//
// Denied: a program that cannot start, exits non-zero, dies of a signal,
// outlives Timeout (it is killed), or prints garbage.
//
// IMPORTANT: on timeout only the program itself is killed; a grandchild that
// keeps its stdout open is abandoned after a short wait, not killed.
type CommandApprover struct {
	// Argv is the program and its arguments; no shell is involved.
	Argv []string
	// Timeout bounds the whole exchange; zero means DefaultApproverTimeout.
	Timeout time.Duration
}

// commandAnswer is the approver program's stdout.
type commandAnswer struct {
	Outcome *string `json:"outcome"`
}

// Approve runs the program once. Its errors all match ErrDenied.
func (a CommandApprover) Approve(ctx context.Context, req ApprovalRequest) (Outcome, error) {
	if len(a.Argv) == 0 || a.Argv[0] == "" {
		return "", fmt.Errorf("%w: approver command is empty", ErrNoApprover)
	}
	input, err := json.Marshal(req)
	if err != nil {
		return "", fmt.Errorf("%w: encode request: %v", ErrApproverFailed, err)
	}
	timeout := a.Timeout
	if timeout <= 0 {
		timeout = DefaultApproverTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, a.Argv[0], a.Argv[1:]...)
	cmd.Stdin = bytes.NewReader(input)
	var stdout, stderr capped
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Without WaitDelay, a killed shell's child holding stdout would keep
	// Wait blocked past the timeout.
	cmd.WaitDelay = 200 * time.Millisecond
	runErr := cmd.Run()
	if ctx.Err() != nil {
		// Killed by the deadline (ErrTimeout) or by the caller (ErrCancelled).
		return "", fmt.Errorf("%w: %s (timeout %s)", contextDenial(ctx), a.Argv[0], timeout)
	}
	if runErr != nil {
		return "", fmt.Errorf("%w: %s: %v%s", ErrApproverFailed, a.Argv[0], runErr, firstLine(stderr.String()))
	}
	return parseAnswer(stdout.Bytes())
}

func parseAnswer(out []byte) (Outcome, error) {
	var ans commandAnswer
	if err := strictjson.Decode(out, &ans); err != nil {
		return "", fmt.Errorf("%w: %v", ErrMalformedAnswer, err)
	}
	if ans.Outcome == nil {
		return "", fmt.Errorf("%w: outcome: missing", ErrMalformedAnswer)
	}
	return Outcome(*ans.Outcome), nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if s == "" {
		return ""
	}
	return " (stderr: " + s + ")"
}

// capped is a buffer that keeps the first maxAnswer bytes and discards the
// rest, so a runaway approver cannot exhaust memory. It reports full writes
// so that the program is not killed by a broken pipe.
type capped struct{ bytes.Buffer }

func (c *capped) Write(p []byte) (int, error) {
	if room := maxAnswer - c.Len(); room > 0 {
		if len(p) > room {
			c.Buffer.Write(p[:room])
		} else {
			c.Buffer.Write(p)
		}
	}
	return len(p), nil
}
