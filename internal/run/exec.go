package run

import (
	"context"
	"errors"
	"os"
	"sync"

	"github.com/sbx-sandbox/sbx/internal/call"
	"github.com/sbx-sandbox/sbx/internal/steptrace"
	"github.com/sbx-sandbox/sbx/internal/wire"
)

// Options are what the caller of Exec decides beyond the call.
type Options struct {
	// Raw is the request as received: a retry hint repeats it.
	Raw []byte
	// Events receives the output of a "stream": true request (required
	// for one).
	Events wire.EventSink
	// Prestart makes the call's namespaces while it is prepared (see
	// Prestart): only a process that runs one call at a time (sbx exec)
	// may set it.
	Prestart bool
	// RelaySignals relays SIGTERM, SIGHUP, SIGINT and SIGQUIT received by
	// this process to the command (sbx exec: a runtime cancels a call so).
	// A server running many calls leaves it off and cancels through ctx.
	RelaySignals bool
	// Dispatch, when set, is asked once the call is prepared and approved
	// and its plan compiled and admitted, just before anything is made for
	// it (host.Call.BeforeStart); an error ends the call there, a refusal
	// with nothing started, and is Exec's own (a server waits there for its
	// call/started record to be durable, and checks for cancellation). It
	// changes nothing in the call.
	Dispatch func() error
	// Executable is the sbx binary whose FSStageCommand makes an fs
	// change (default os.Executable).
	Executable func() (string, error)
	// Cleanup, when set, counts the clean-up Exec may leave running when
	// it returns (host.Call.Cleanup): the caller waits for it before it
	// answers. Nil: Exec returns once everything is done.
	Cleanup *sync.WaitGroup
}

// Exec prepares and runs the call r that req made (req.Call, plus what
// the caller adds to it, such as a server's session mode, grants and
// approver) with in as its input, and maps the outcome to the wire
// result. An error is a refusal (exit 125, written with
// wire.NewRefusal): nothing ran. Cancelling ctx settles a pending
// approval cancelled and kills a running command's tree (its result then
// says killed_by "signal").
func Exec(ctx context.Context, req *wire.Request, r call.Request, in wire.Input, opt Options) (wire.Response, error) {
	if req.FS != nil {
		return execFS(ctx, req, r, opt)
	}
	if req.Stream && opt.Events == nil {
		return wire.Response{}, wire.Internal(errors.New("stream: no event sink"))
	}
	stdio := IO{Stdin: in.Stdin, PTY: in.PTY}
	if opt.Prestart {
		// As in sbx run: namespaces (or the stage, on these pipes) are
		// made while the call is resolved.
		release, err := Prestart(r, &stdio)
		if err != nil {
			return wire.Response{}, wire.Internal(err)
		}
		defer release()
	}
	p, err := call.Prepare(ctx, r)
	if err != nil && !errors.Is(err, call.ErrNotFound) {
		return wire.Response{}, err
	}
	steptrace.Mark("prepare: policy, probe, compile the plan")
	var dispatchErr error
	if err == nil && opt.Dispatch != nil {
		p.Call.BeforeStart = func() error {
			dispatchErr = opt.Dispatch()
			steptrace.Mark("dispatch: call/started durable")
			return dispatchErr
		}
	}
	res := wire.Result{CallReport: wire.PreparedReport(p)}
	if err == nil {
		p.Call.ForwardSignals, p.Call.Cleanup = opt.RelaySignals, opt.Cleanup
		var out Output
		if req.Stream {
			out, err = Stream(ctx, p, req.MaxOutputBytes, stdio, opt.Events, req.CallID)
		} else {
			out, err = Capture(ctx, p, req.MaxOutputBytes, stdio)
		}
		res = result(p, out, call.RetryForm{Request: opt.Raw})
	}
	if dispatchErr != nil {
		return wire.Response{}, dispatchErr
	}
	if err != nil {
		if err := res.StartFailed(err, p.Call.Cmd); err != nil {
			return wire.Response{}, err
		}
	}
	res.CallID = req.CallID
	return wire.Response{Result: &res}, nil
}

// result maps a call's output to the wire result, with the retry hint in
// form when the sandbox denied something.
func result(p *call.Prepared, out Output, form call.RetryForm) wire.Result {
	return wire.Result{CallReport: wire.NewCallReport(p, out.Report, call.ExitOutcome(out.Report), form),
		Stdout: out.Stdout, Stderr: out.Stderr, StdoutTruncated: out.StdoutTruncated, StderrTruncated: out.StderrTruncated}
}

// execFS runs the "fs" request: the result is `sbx fs --json`'s, with the
// retry as an `sbx exec` request.
func execFS(ctx context.Context, req *wire.Request, r call.Request, opt Options) (wire.Response, error) {
	op, input, err := req.FS.Change()
	if err != nil {
		return wire.Response{}, err
	}
	r.Escalation.Tool = "fs"
	exe := opt.Executable
	if exe == nil {
		exe = os.Executable
	}
	res, err := RunFS(ctx, r, op, input, FSOptions{Form: call.RetryForm{Request: opt.Raw}, Executable: exe, Dispatch: opt.Dispatch, RelaySignals: opt.RelaySignals})
	if err != nil {
		return wire.Response{}, err
	}
	res.CallID = req.CallID
	return wire.Response{FS: &res}, nil
}
