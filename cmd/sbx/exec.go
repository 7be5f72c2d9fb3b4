package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/sbx-sandbox/sbx/call"
	"github.com/sbx-sandbox/sbx/enforce"
	"github.com/sbx-sandbox/sbx/enforce/host"
	"github.com/sbx-sandbox/sbx/escalate"
	"github.com/sbx-sandbox/sbx/profiles"
	"github.com/sbx-sandbox/sbx/shells"
)

func init() {
	register("exec", command{summary: "run one JSON request from stdin, print one JSON result on stdout", run: execCmd})
}

// execRequest is the wire shape of `sbx exec` (docs/schema/exec-request.schema.json).
type execRequest struct {
	Command               []string          `json:"command"`
	Cwd                   string            `json:"cwd"`
	SandboxMode           *profiles.Mode    `json:"sandbox_mode"`
	WritableRoots         []string          `json:"writable_roots"`
	ExcludeTmp            bool              `json:"exclude_tmp"`
	ExcludeTmpdir         bool              `json:"exclude_tmpdir"`
	ReadOnly              []string          `json:"read_only"`
	NetworkAccess         bool              `json:"network_access"`
	AdditionalPermissions *profiles.Profile `json:"additional_permissions"`
	// Preauthorized marks additional_permissions as the caller's own
	// under use_default (otherwise they are refused there).
	Preauthorized bool                `json:"preauthorized"`
	Env           map[string]string   `json:"env"`
	EnvPolicy     *profiles.EnvPolicy `json:"env_policy"`
	Shell         *shells.Spec        `json:"shell"`
	TimeoutMS     int64               `json:"timeout_ms"`
	// Limits are validated as sbx run's limit flags are (0 is refused).
	Limits         *enforce.LimitsRequest `json:"limits"`
	MaxOutputBytes int                    `json:"max_output_bytes"`
	// Stream prints the output as NDJSON events while the command runs.
	Stream             bool                         `json:"stream"`
	Require            []string                     `json:"require"`
	CallID             string                       `json:"call_id"`
	EnvironmentID      string                       `json:"environment_id"`
	Grants             *profiles.Grants             `json:"grants"`
	SandboxPermissions *profiles.SandboxPermissions `json:"sandbox_permissions"`
	Justification      string                       `json:"justification"`
	// EscalateTo is the target mode of a require_escalated call.
	EscalateTo     *profiles.Mode           `json:"escalate_to"`
	ApprovalPolicy *profiles.ApprovalPolicy `json:"approval_policy"`
	// Approver is the argv of an approver program.
	Approver []string `json:"approver"`
	Guard    string   `json:"guard"`
	// PTY, when present, runs the command on a fresh pseudo-terminal.
	PTY *execPTY `json:"pty"`
	// Stdin is text the command reads, then end-of-file (absent: none).
	Stdin *string `json:"stdin"`
	// FS, instead of command or shell, makes one file-system change as
	// `sbx fs` does.
	FS *execFSRequest `json:"fs"`
	// KillGraceMS is the time between a relayed SIGTERM and the kill of
	// the tree (0 or absent: host.DefaultKillGrace).
	KillGraceMS int64 `json:"kill_grace_ms"`
	// CapAdd are Linux capabilities the command keeps (root only), as
	// sbx run --cap-add.
	CapAdd []string `json:"cap_add"`
}

// execPTY is the "pty" object; absent sizes are the default 24x80.
type execPTY struct {
	Rows *int `json:"rows"`
	Cols *int `json:"cols"`
}

// size validates the object and fills in the defaults.
func (p execPTY) size() (ptySize, error) {
	s := defaultPTYSize
	if p.Rows != nil {
		s.Rows = *p.Rows
	}
	if p.Cols != nil {
		s.Cols = *p.Cols
	}
	return s, s.check("pty.")
}

// execInput is what the command reads and where it writes.
type execInput struct {
	pty   *ptySize // nil: pipes
	stdin string
	// pipes, when not nil, are the pipes to use, made ahead (see
	// newCallPipes); otherwise execCall makes them.
	pipes *callPipes
}

// callPipes are a call's stdin (fed from text) and its stdout and stderr
// pipes. Made before the call is resolved, they can be a prestarted
// stage's stdio (host.Prestart).
type callPipes struct {
	stdin, outR, outW, errR, errW *os.File
	stopStdin                     func()
}

func newCallPipes(text string) (*callPipes, error) {
	stdin, stop, err := stdinText(text)
	if err != nil {
		return nil, err
	}
	p := &callPipes{stdin: stdin, stopStdin: stop}
	if p.outR, p.outW, err = os.Pipe(); err == nil {
		if p.errR, p.errW, err = os.Pipe(); err != nil {
			p.outR.Close()
			p.outW.Close()
		}
	}
	if err != nil {
		stop()
		return nil, err
	}
	return p, nil
}

// close releases whatever of the pipes the call has not.
func (p *callPipes) close() {
	p.stopStdin()
	for _, f := range []*os.File{p.outR, p.outW, p.errR, p.errW} {
		f.Close()
	}
}

// execResult is the wire shape of the result (docs/schema/exec-result.schema.json).
type execResult struct {
	callReport
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	StdoutTruncated bool   `json:"stdout_truncated"`
	StderrTruncated bool   `json:"stderr_truncated"`
	// Error is why the command did not start (126, 127), for people;
	// ErrorDetail is the same as an error object (kind exec_failed).
	Error       string       `json:"error,omitempty"`
	ErrorDetail *errorObject `json:"error_detail,omitempty"`
}

const defaultMaxOutput = 1 << 20

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

// maxExecRequest bounds the request read from stdin. A request is a few
// kilobytes; the largest fields are "stdin" (at most maxStdinBytes, up to
// six times that once escaped) and an fs change's content.
const maxExecRequest = 16 << 20

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
	var req execRequest
	if err := profiles.DecodeStrict(data, &req); err != nil {
		return execRefuse(stdio, err)
	}
	if err := req.checkFS(); err != nil {
		return execRefuse(stdio, err)
	}
	if req.TimeoutMS < 0 {
		return execRefuse(stdio, &profiles.FieldError{Field: "timeout_ms", Err: errors.New("must not be negative")})
	}
	if req.TimeoutMS > enforce.MaxTimeout.Milliseconds() {
		return execRefuse(stdio, &profiles.FieldError{Field: "timeout_ms", Err: enforce.ErrTimeoutRange})
	}
	if req.MaxOutputBytes < 0 {
		return execRefuse(stdio, &profiles.FieldError{Field: "max_output_bytes", Err: errors.New("must not be negative")})
	}
	killGrace, err := req.killGrace()
	if err != nil {
		return execRefuse(stdio, err)
	}
	var in execInput
	if req.Stdin != nil {
		if len(*req.Stdin) > maxStdinBytes {
			return execRefuse(stdio, &profiles.FieldError{Field: "stdin", Err: fmt.Errorf("%d bytes is more than the %d allowed; give the command a file instead", len(*req.Stdin), maxStdinBytes)})
		}
		in.stdin = *req.Stdin
	}
	if req.PTY != nil {
		size, err := req.PTY.size()
		if err != nil {
			return execRefuse(stdio, err)
		}
		in.pty = &size
	}
	r := call.Request{
		Command: req.Command, Cwd: req.Cwd, WritableRoots: req.WritableRoots, ExcludeTmp: req.ExcludeTmp,
		ExcludeTmpdir: req.ExcludeTmpdir, ReadOnly: req.ReadOnly, Network: req.NetworkAccess,
		Env: os.Environ(), Timeout: time.Duration(req.TimeoutMS) * time.Millisecond, Require: req.Require, CapAdd: req.CapAdd, CapAddField: "cap_add",
		KillGrace: killGrace,
	}
	if req.SandboxMode != nil {
		r.Mode = *req.SandboxMode
	}
	if req.Limits != nil {
		if r.Limits, err = req.Limits.Limits(enforce.JSONLimitNames); err != nil {
			return execRefuse(stdio, err)
		}
	}
	if req.AdditionalPermissions != nil {
		r.Additional = *req.AdditionalPermissions
	}
	r.Preauthorized = req.Preauthorized
	if req.EnvPolicy != nil {
		r.EnvPolicy = *req.EnvPolicy
		if len(r.EnvPolicy.Set) > 0 {
			return execRefuse(stdio, &profiles.FieldError{Field: "env_policy.set", Err: errors.New(`use the top-level "env" object`)})
		}
	}
	r.EnvPolicy.Set = req.Env
	r.Shell = req.Shell
	e, err := req.escalation()
	if err != nil {
		return execRefuse(stdio, err)
	}
	r.Escalation = e
	if req.Cwd == "" {
		return execRefuse(stdio, &profiles.FieldError{Field: "cwd", Err: errors.New("required")})
	}
	if req.FS != nil {
		return execFS(stdio, req, r, data)
	}
	if netns, ok := call.PrestartHint(r); ok && in.pty == nil {
		// As in sbx run: namespaces (or the stage, on these pipes) are
		// made while the call is resolved.
		if in.pipes, err = newCallPipes(in.stdin); err != nil {
			return execRefuse(stdio, internalError{err})
		}
		defer in.pipes.close()
		host.Prestart(netns, [3]*os.File{in.pipes.stdin, in.pipes.outW, in.pipes.errW})
		defer host.DiscardPrestart()
	}
	p, err := call.Prepare(context.Background(), r)
	if err != nil && !errors.Is(err, call.ErrNotFound) {
		return execRefuse(stdio, err)
	}
	res := execResult{callReport: preparedReport(p)}
	c := p.Call
	if err == nil {
		var out execResult
		if req.Stream {
			out, err = streamCall(c, req.MaxOutputBytes, in, stdio.Out, req.CallID)
		} else {
			out, err = captureCall(c, req.MaxOutputBytes, in)
		}
		out.Permissions, out.Env = p.Permissions, p.Env
		if len(out.Denials) > 0 {
			out.Retry = p.Retry(out.Denials, call.RetryForm{Request: data})
		}
		res = out
	}
	if err != nil {
		var code int
		err, code = startFailure(err, c.Cmd, res.ExitCode)
		if code == ExitRefused {
			// A required feature missing is still unsupported (errorFor
			// looks for it first); anything else is sbx's own failure.
			return execRefuse(stdio, internalError{err})
		}
		res.ExitCode, res.Error = code, err.Error()
		res.ErrorDetail = errorFor(err, errExecFailed)
	}
	res.CallID = req.CallID
	if req.Stream {
		return writeJSONLine(stdio.Out, streamResult{Event: "result", execResult: res})
	}
	return writeJSON(stdio.Out, res)
}

// captureCall runs call with its output captured in capped buffers.
func captureCall(call host.Call, maxOutput int, in execInput) (execResult, error) {
	if maxOutput == 0 {
		maxOutput = defaultMaxOutput
	}
	stdout, stderr := host.NewCappedBuffer(maxOutput), host.NewCappedBuffer(maxOutput)
	rep, err := execCall(call, stdout, stderr, in)
	return execResult{callReport: callReport{Report: rep}, Stdout: stdout.String(), Stderr: stderr.String(),
		StdoutTruncated: stdout.Truncated(), StderrTruncated: stderr.Truncated()}, err
}

// execCall runs call with its output copied to stdout and stderr and
// in.stdin as its input, on pipes or on a pty (where stderr is merged
// into stdout).
func execCall(call host.Call, stdout, stderr io.Writer, in execInput) (enforce.Report, error) {
	// A runtime cancels a call with SIGTERM: relayed, then the tree killed
	// after the grace period, with the result still written.
	call.ForwardSignals = true
	if in.pty != nil {
		return execOnPTY(call, *in.pty, in.stdin, stdout)
	}
	p := in.pipes
	if p == nil {
		var err error
		if p, err = newCallPipes(in.stdin); err != nil {
			return enforce.Report{}, err
		}
	}
	defer p.stopStdin()
	var wg sync.WaitGroup
	for _, s := range []struct {
		r *os.File
		w io.Writer
	}{{p.outR, stdout}, {p.errR, stderr}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			io.Copy(s.w, s.r)
			s.r.Close()
		}()
	}
	call.Cmd.Stdin, call.Cmd.Stdout, call.Cmd.Stderr = p.stdin, p.outW, p.errW
	rep, err := host.Run(context.Background(), call)
	// Our copies of the write ends must go, or the readers never see EOF.
	p.outW.Close()
	p.errW.Close()
	drained := make(chan struct{})
	go func() { wg.Wait(); close(drained) }()
	drain(drained, p.outR, p.errR)
	return rep, err
}

// execOnPTY runs call on a fresh pty of size, types stdin into it and
// copies what the terminal shows to stdout: stderr is merged there, and
// the terminal echoes the input and ends lines with "\r\n".
func execOnPTY(call host.Call, size ptySize, stdin string, stdout io.Writer) (enforce.Report, error) {
	p, err := attachPTY(&call, size)
	if err != nil {
		return enforce.Report{}, err
	}
	defer p.Close()
	// Blocks while the terminal's input queue is full; the Close ends it.
	go io.WriteString(p.Master, ptyInput(stdin))
	drained := copyOut(p.Master, stdout)
	rep, err := host.Run(context.Background(), call)
	finishPTY(p, drained)
	return rep, err
}

// drain waits for the output readers to be done (done closes), or, should
// a process that escaped the group still hold the write ends, gives them a
// moment and then closes the read ends under them.
func drain(done chan struct{}, readEnds ...*os.File) {
	select {
	case <-done:
	case <-time.After(500 * time.Millisecond):
		for _, f := range readEnds {
			f.Close()
		}
		<-done
	}
}

// escalation maps the request's permission fields. Without
// approval_policy an exec call never asks anyone: agent runtimes decide
// approval themselves and pass the answer as grants or an approver.
func (req execRequest) escalation() (call.Escalation, error) {
	e := call.Escalation{CallID: req.CallID, EnvironmentID: req.EnvironmentID, Justification: req.Justification, GuardPath: req.Guard}
	if req.Grants != nil {
		e.Grants = *req.Grants
	}
	if req.SandboxPermissions != nil {
		e.SandboxPermissions = *req.SandboxPermissions
	}
	if req.ApprovalPolicy != nil {
		e.ApprovalPolicy = *req.ApprovalPolicy
	}
	if req.EscalateTo != nil {
		if e.SandboxPermissions != profiles.RequireEscalated {
			return e, &profiles.FieldError{Field: "escalate_to", Err: errors.New(`only valid with sandbox_permissions "require_escalated"`)}
		}
		e.Target = *req.EscalateTo
	} else if e.SandboxPermissions == profiles.RequireEscalated {
		return e, &profiles.FieldError{Field: "escalate_to", Err: errors.New(`required with sandbox_permissions "require_escalated"`)}
	}
	if len(req.Approver) > 0 {
		e.Approver = escalate.CommandApprover{Argv: req.Approver}
	}
	return e, nil
}

func execRefuse(stdio Stdio, err error) int {
	fmt.Fprintf(stdio.Err, "sbx exec: %v\n", err)
	writeJSON(stdio.Out, newRefusal(err))
	return ExitRefused
}

// maxKillGrace bounds kill_grace_ms: a longer wait is no grace period, and
// the bound keeps the duration from overflowing.
const maxKillGrace = time.Hour

// killGrace checks kill_grace_ms.
func (req execRequest) killGrace() (time.Duration, error) {
	if req.KillGraceMS < 0 || req.KillGraceMS > maxKillGrace.Milliseconds() {
		return 0, &profiles.FieldError{Field: "kill_grace_ms", Err: fmt.Errorf("must be between 0 and %d (0: the default %d)", maxKillGrace.Milliseconds(), host.DefaultKillGrace.Milliseconds())}
	}
	return time.Duration(req.KillGraceMS) * time.Millisecond, nil
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
