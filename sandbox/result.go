package sandbox

import (
	"encoding/json"

	"github.com/sbx-sandbox/sbx/internal/wire"
)

// Response is what a call came to: exactly one of Result (a command) and
// FS (a file-system change) is set.
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

// ExitCode is the command's (or the file-system change's) exit status.
func (r Response) ExitCode() int {
	if r.FS != nil {
		return r.FS.ExitCode
	}
	return r.Result.ExitCode
}

// Result is a command's result: the report (what was enforced, degraded
// and denied, with the retry), the exit status and the captured output.
// It marshals to the JSON `sbx exec` prints
// (docs/schema/exec-result.schema.json).
type Result struct {
	// CallID echoes the request's.
	CallID string
	// Report is what was enforced and what happened: the exit status
	// (ExitCode), Enforcement, Downgrades, Denials and the rest.
	Report
	// Permissions says where each permission came from.
	Permissions Permissions
	// Env names what the environment policy stripped and set.
	Env EnvReport
	// Retry is the exact-retry hint when the sandbox denied something.
	Retry *RetryHint

	// Stdout and Stderr are the captured output (empty when the request
	// streamed it to Options.Events); the Truncated flags say
	// MaxOutputBytes cut them.
	Stdout          string
	Stderr          string
	StdoutTruncated bool
	StderrTruncated bool
	// Error is why the command did not start (exit 126, 127), for people;
	// ErrorDetail is the same as an error object (kind exec_failed).
	Error       string
	ErrorDetail *ErrorDetail
}

// FSResult is a file-system change's result: the report plus whether the
// change was made. It marshals to the JSON `sbx fs --json` prints.
type FSResult struct {
	CallID      string
	Report      // ExitCode: 0 made, 1 failed, 3 denied
	Permissions Permissions
	Env         EnvReport
	Retry       *RetryHint

	Op FSOp
	OK bool
	// Error says why the change was not made: Kind "denied" when the
	// sandbox refused it (on the supervisor's evidence), else "failed".
	// ErrorDetail is the same object, under the name every other output
	// gives it.
	Error       *ErrorDetail
	ErrorDetail *ErrorDetail
}

// ErrorDetail is the one shape of an error in a result or a refusal
// ("error_detail"): Kind is one of the Kind constants, Message the text
// sbx prints, and the rest says more for some kinds.
type ErrorDetail struct {
	Kind    string
	Message string
	// Field is the request field at fault, for KindInvalidRequest.
	Field string
	// Outcome is rejected, cancelled, unavailable or never, for
	// KindDeniedByPolicy.
	Outcome string
	// Feature is the required feature, for KindUnsupported.
	Feature Feature
	// Errno is the error's name (ENOENT, EACCES), for KindExecFailed.
	Errno string
}

// OutputEvent is one chunk of a streamed call's output (Request.Stream),
// as `sbx exec` prints it on a line of NDJSON.
type OutputEvent struct {
	// Event is "output".
	Event string
	// Stream is "stdout" or "stderr".
	Stream string
	// Data is the chunk when it is valid UTF-8, else DataBase64 is (a
	// multi-byte character split between two reads makes both chunks so).
	Data       string
	DataBase64 []byte
	// CallID echoes the request's.
	CallID string
}

// MarshalJSON is the event as `sbx exec` prints it.
func (e OutputEvent) MarshalJSON() ([]byte, error) { return json.Marshal(e.wire()) }

func eventFromWire(w wire.OutputEvent) OutputEvent {
	return OutputEvent{Event: w.Event, Stream: w.Stream, Data: w.Data, DataBase64: w.DataBase64, CallID: w.CallID}
}

func (e OutputEvent) wire() wire.OutputEvent {
	return wire.OutputEvent{Event: e.Event, Stream: e.Stream, Data: e.Data, DataBase64: e.DataBase64, CallID: e.CallID}
}

// MarshalJSON is the result as `sbx exec` prints it.
func (r Result) MarshalJSON() ([]byte, error) { return json.Marshal(r.wire()) }

// MarshalJSON is the result as `sbx fs --json` prints it.
func (r FSResult) MarshalJSON() ([]byte, error) { return json.Marshal(r.wire()) }

// The result's conversions, like the request's, are checked field by field
// by TestConversion.

func responseFromWire(w wire.Response) Response {
	var r Response
	if w.Result != nil {
		r.Result = resultFromWire(w.Result)
	}
	if w.FS != nil {
		r.FS = fsResultFromWire(w.FS)
	}
	return r
}

func resultFromWire(w *wire.Result) *Result {
	return &Result{CallID: w.CallID, Report: w.Report, Permissions: w.Permissions, Env: w.Env, Retry: w.Retry,
		Stdout: w.Stdout, Stderr: w.Stderr, StdoutTruncated: w.StdoutTruncated, StderrTruncated: w.StderrTruncated,
		Error: w.Error, ErrorDetail: detailFromWire(w.ErrorDetail)}
}

func (r *Result) wire() *wire.Result {
	return &wire.Result{
		CallReport: wire.CallReport{CallID: r.CallID, Report: r.Report, Permissions: r.Permissions, Env: r.Env, Retry: r.Retry},
		Stdout:     r.Stdout, Stderr: r.Stderr, StdoutTruncated: r.StdoutTruncated, StderrTruncated: r.StderrTruncated,
		Error: r.Error, ErrorDetail: r.ErrorDetail.wire(),
	}
}

func fsResultFromWire(w *wire.FSResult) *FSResult {
	r := &FSResult{CallID: w.CallID, Report: w.Report, Permissions: w.Permissions, Env: w.Env, Retry: w.Retry,
		Op: w.Op, OK: w.OK, Error: detailFromWire(w.Error), ErrorDetail: detailFromWire(w.ErrorDetail)}
	if w.Error == w.ErrorDetail {
		r.ErrorDetail = r.Error // one object under two names, as on the wire
	}
	return r
}

func (r *FSResult) wire() *wire.FSResult {
	w := &wire.FSResult{
		CallReport: wire.CallReport{CallID: r.CallID, Report: r.Report, Permissions: r.Permissions, Env: r.Env, Retry: r.Retry},
		Op:         r.Op, OK: r.OK, Error: r.Error.wire(), ErrorDetail: r.ErrorDetail.wire(),
	}
	if r.Error == r.ErrorDetail {
		w.ErrorDetail = w.Error
	}
	return w
}

func detailFromWire(o *wire.ErrorObject) *ErrorDetail {
	if o == nil {
		return nil
	}
	return &ErrorDetail{Kind: o.Kind, Message: o.Message, Field: o.Field, Outcome: o.Outcome, Feature: o.Feature, Errno: o.Errno}
}

func (d *ErrorDetail) wire() *wire.ErrorObject {
	if d == nil {
		return nil
	}
	return &wire.ErrorObject{Kind: d.Kind, Message: d.Message, Field: d.Field, Outcome: d.Outcome, Feature: d.Feature, Errno: d.Errno}
}
