package execjson

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"

	"github.com/sbx-sandbox/sbx/call"
	"github.com/sbx-sandbox/sbx/enforce/host"
	"github.com/sbx-sandbox/sbx/escalate"
	"github.com/sbx-sandbox/sbx/report"
)

// DefaultMaxOutput is the cap of each captured stream without
// max_output_bytes.
const DefaultMaxOutput = 1 << 20

// Options are what the caller of Exec decides beyond the request.
type Options struct {
	// Env is sbx's own environment; the command's is made from it.
	Env []string
	// Raw is the request as received: a retry hint repeats it.
	Raw []byte
	// Events receives the output of a "stream": true request (required
	// for one).
	Events EventSink
	// Prestart makes the call's namespaces while it is prepared
	// (host.Prestart). Prestart is one slot per process: only a process
	// that runs one call at a time (sbx exec) may set it.
	Prestart bool
	// RelaySignals relays SIGTERM, SIGHUP, SIGINT and SIGQUIT received by
	// this process to the command (sbx exec: a runtime cancels a call so).
	// A server running many calls leaves it off and cancels through ctx.
	RelaySignals bool
	// Approver, when set, is asked instead of the request's approver
	// program: an in-process answerer (sandbox.Options.Approver), or sbx
	// exec's program wrapped so that its signals cancel the ask.
	Approver escalate.Approver
	// Adjust, when set, changes the call before it is prepared: a server
	// adds what its session holds (the standing mode, stored grants, the
	// approver). Its error is a refusal.
	Adjust func(*call.Request) error
	// Dispatch, when set, is asked once the call is prepared and approved,
	// just before it starts; an error ends the call there, a refusal with
	// nothing started (a server checks for cancellation here).
	Dispatch func() error
	// Executable is the sbx binary whose FSStageCommand makes an fs
	// change (default os.Executable).
	Executable func() (string, error)
	// Cleanup, when set, counts the clean-up Exec may leave running when
	// it returns (host.Call.Cleanup): the caller waits for it before it
	// answers. Nil: Exec returns once everything is done.
	Cleanup *sync.WaitGroup
}

// Response is what one request came to: exactly one of Result (a
// command) and FS (a file-system change) is set.
type Response struct {
	Result *Result
	FS     *FSResult
}

// CallID is the call_id the response echoes.
func (r Response) CallID() string {
	if r.FS != nil {
		return r.FS.CallID
	}
	return r.Result.CallID
}

// ExitCode is the command's (or the fs change's) exit status.
func (r Response) ExitCode() int {
	if r.FS != nil {
		return r.FS.ExitCode
	}
	return r.Result.ExitCode
}

// Exec checks, prepares and runs one request, as `sbx exec` does. An
// error is a refusal (exit 125, written with NewRefusal): nothing ran.
// Cancelling ctx settles a pending approval cancelled and kills a running
// command's tree (its result then says killed_by "signal").
func Exec(ctx context.Context, req *Request, opt Options) (Response, error) {
	r, in, err := req.Call(opt.Env)
	if err != nil {
		return Response{}, err
	}
	if opt.Approver != nil {
		r.Escalation.Approver = opt.Approver
	}
	if opt.Adjust != nil {
		if err := opt.Adjust(&r); err != nil {
			return Response{}, err
		}
	}
	if req.FS != nil {
		return execFS(ctx, req, r, opt)
	}
	if req.Stream && opt.Events == nil {
		return Response{}, Internal(errors.New("stream: no event sink"))
	}
	if netns, ok := call.PrestartHint(r); ok && in.PTY == nil && opt.Prestart {
		// As in sbx run: namespaces (or the stage, on these pipes) are
		// made while the call is resolved.
		if in.pipes, err = newCallPipes(in.Stdin); err != nil {
			return Response{}, Internal(err)
		}
		defer in.pipes.close()
		host.Prestart(netns, [3]*os.File{in.pipes.stdin, in.pipes.outW, in.pipes.errW})
		defer host.DiscardPrestart()
	}
	p, err := call.Prepare(ctx, r)
	if err != nil && !errors.Is(err, call.ErrNotFound) {
		return Response{}, err
	}
	if err == nil && opt.Dispatch != nil {
		if err := opt.Dispatch(); err != nil {
			return Response{}, err
		}
	}
	res := Result{CallReport: PreparedReport(p)}
	c := p.Call
	c.ForwardSignals, c.Cleanup = opt.RelaySignals, opt.Cleanup
	if err == nil {
		var out Result
		if req.Stream {
			out, err = streamCall(ctx, c, req.MaxOutputBytes, in, opt.Events, req.CallID)
		} else {
			out, err = Capture(ctx, c, req.MaxOutputBytes, in)
		}
		out.Permissions, out.Env = p.Permissions, p.Env
		if len(out.Denials) > 0 {
			out.Retry = p.Retry(out.Denials, call.RetryForm{Request: opt.Raw})
		}
		res = out
	}
	if err != nil {
		var code int
		err, code = StartFailure(err, c.Cmd, res.ExitCode)
		if code == ExitRefused {
			// A required feature missing is still unsupported (ErrorFor
			// looks for it first); anything else is sbx's own failure.
			return Response{}, Internal(err)
		}
		res.ExitCode, res.Error = code, err.Error()
		res.ErrorDetail = ErrorFor(err, KindExecFailed)
	}
	res.CallID = req.CallID
	return Response{Result: &res}, nil
}

// execFS runs the "fs" request: the result is `sbx fs --json`'s, with the
// retry as an `sbx exec` request.
func execFS(ctx context.Context, req *Request, r call.Request, opt Options) (Response, error) {
	op, input, err := req.FS.Change()
	if err != nil {
		return Response{}, err
	}
	r.Escalation.Tool = "fs"
	exe := opt.Executable
	if exe == nil {
		exe = os.Executable
	}
	res, err := RunFS(ctx, r, op, input, FSOptions{Form: call.RetryForm{Request: opt.Raw}, Executable: exe, Dispatch: opt.Dispatch, RelaySignals: opt.RelaySignals})
	if err != nil {
		return Response{}, err
	}
	res.CallID = req.CallID
	return Response{FS: &res}, nil
}

// Capture runs call with its output captured in capped buffers of
// maxOutput bytes each (0: DefaultMaxOutput) and in as its input.
func Capture(ctx context.Context, call host.Call, maxOutput int, in Input) (Result, error) {
	if maxOutput == 0 {
		maxOutput = DefaultMaxOutput
	}
	stdout, stderr := host.NewCappedBuffer(maxOutput), host.NewCappedBuffer(maxOutput)
	rep, err := execCall(ctx, call, stdout, stderr, in)
	return Result{CallReport: CallReport{Report: rep}, Stdout: stdout.String(), Stderr: stderr.String(),
		StdoutTruncated: stdout.Truncated(), StderrTruncated: stderr.Truncated()}, err
}

// streamCall runs call with its output sent to sink as events, each with
// callID.
func streamCall(ctx context.Context, call host.Call, maxOutput int, in Input, sink EventSink, callID string) (Result, error) {
	var mu sync.Mutex
	stdout := &eventWriter{mu: &mu, sink: sink, stream: "stdout", callID: callID, limit: int64(maxOutput)}
	stderr := &eventWriter{mu: &mu, sink: sink, stream: "stderr", callID: callID, limit: int64(maxOutput)}
	rep, err := execCall(ctx, call, stdout, stderr, in)
	return Result{CallReport: CallReport{Report: rep}, StdoutTruncated: stdout.truncated, StderrTruncated: stderr.truncated}, err
}

// execCall runs call with its output copied to stdout and stderr and
// in.Stdin as its input, on pipes or on a pty (where stderr is merged
// into stdout).
func execCall(ctx context.Context, call host.Call, stdout, stderr io.Writer, in Input) (report.Report, error) {
	if in.PTY != nil {
		return execOnPTY(ctx, call, *in.PTY, in.Stdin, stdout)
	}
	p := in.pipes
	if p == nil {
		var err error
		if p, err = newCallPipes(in.Stdin); err != nil {
			return report.Report{}, err
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
	// Our copies of the write ends must go, or the readers never see EOF:
	// once the command runs (the readers then finish while Run ends the
	// call), else once Run returns.
	closeWrite := sync.OnceFunc(func() {
		p.outW.Close()
		p.errW.Close()
	})
	call.Started = closeWrite
	rep, err := host.Run(ctx, call)
	closeWrite()
	drained := make(chan struct{})
	go func() { wg.Wait(); close(drained) }()
	drain(drained, p.outR, p.errR)
	return rep, err
}

// execOnPTY runs call on a fresh pty of size, types stdin into it and
// copies what the terminal shows to stdout: stderr is merged there, and
// the terminal echoes the input and ends lines with "\r\n".
func execOnPTY(ctx context.Context, call host.Call, size PTYSize, stdin string, stdout io.Writer) (report.Report, error) {
	p, err := AttachPTY(&call, size)
	if err != nil {
		return report.Report{}, err
	}
	defer p.Close()
	// Blocks while the terminal's input queue is full; the Close ends it.
	go io.WriteString(p.Master, PTYInput(stdin))
	drained := CopyOut(p.Master, stdout)
	rep, err := host.Run(ctx, call)
	FinishPTY(p, drained)
	return rep, err
}
