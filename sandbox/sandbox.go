// Package sandbox is sbx for programs written in Go: one call of the
// JSON contract (docs/json.md) run under the OS sandbox, as `sbx exec`
// runs it, without a process of sbx in between.
//
// Its request and result types are the contract's (package wire, the
// same types `sbx exec` and `sbx serve` decode and print), so what a
// program builds here is what a runtime would send sbx as JSON, and the
// schemas in docs/schema describe both. It runs them through the same run
// stage (package run) as `sbx exec` and `sbx serve`.
//
// A program that uses it calls Main first in its main function: an
// unprivileged call re-executes the program itself as the sandbox's stage
// (in a new user namespace), and a file-system change re-executes it as the
// helper that makes the change inside the sandbox. Main runs those and
// exits; in the program's own start it returns at once.
//
//	func main() {
//		sandbox.Main()
//		...
//		res, err := sandbox.Run(ctx, &sandbox.Request{Command: []string{"make", "test"}, Cwd: dir}, sandbox.Options{})
//	}
//
// Importing the package locks the main goroutine to the main thread (an
// init function, as the sbx binary does): the stage restricts that thread
// and the launcher restricts threads of its own, and neither may be
// scheduled onto the other's.
package sandbox

import (
	"context"
	"encoding"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"runtime"
	"strings"

	"github.com/sbx-sandbox/sbx/internal/call"
	"github.com/sbx-sandbox/sbx/internal/enforce/host"
	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/report"
	"github.com/sbx-sandbox/sbx/internal/run"
	"github.com/sbx-sandbox/sbx/internal/wire"
)

func init() { runtime.LockOSThread() }

// Request is one call: a command (or one file-system change, FS) and the
// permissions it runs with (docs/schema/exec-request.schema.json).
type Request = wire.Request

// FSRequest is the file-system change of a Request.
type FSRequest = wire.FSRequest

// Response is what a call came to: exactly one of Result (a command) and
// FS (a file-system change) is set.
type Response = wire.Response

// Result is a command's result: the report (what was enforced, degraded
// and denied, with the retry), the exit status and the captured output
// (docs/schema/exec-result.schema.json).
type Result = wire.Result

// FSResult is a file-system change's result.
type FSResult = wire.FSResult

// OutputEvent is one event of a streamed call's output.
type OutputEvent = wire.OutputEvent

// Question is the one approval question every answerer gets (the shape
// an --approver program reads on its stdin, and an sbx server's clients in
// approval/requested): target_mode, additional_permissions,
// new_permissions, merged_permissions, cap_add, justification, command and
// the ids.
type Question = escalate.ApprovalRequest

// Approver answers approval questions in-process (Options.Approver). Only
// an exact AllowedOnce lets the call proceed; any other outcome, an error,
// a panic, or an answer after ctx ends denies it.
type Approver = escalate.Approver

// ApproverFunc adapts a function to Approver.
type ApproverFunc = escalate.ApproverFunc

// Outcome is an approver's answer.
type Outcome = escalate.Outcome

// The outcomes. Only AllowedOnce proceeds; each other has its own error.
const (
	AllowedOnce = escalate.AllowedOnce
	Rejected    = escalate.Rejected
	Cancelled   = escalate.Cancelled
	Unavailable = escalate.Unavailable
)

// Check is one line of Doctor.
type Check = report.Check

// Options are what the program decides beyond the request.
type Options struct {
	// Env is the environment the command's is made from (nil: this
	// process's own).
	Env []string
	// Events receives the output of a Stream request as it comes
	// (required for one).
	Events func(OutputEvent) error
	// Approver, when set, answers the call's approval questions
	// in-process, instead of the approver program the request names
	// ("approver"). Cancelling Run's ctx settles a pending one cancelled.
	Approver Approver
}

// Main runs sbx's stages when this process is one and exits; otherwise it
// returns at once. Call it first in main.
func Main() {
	if len(os.Args) < 2 {
		return
	}
	switch os.Args[1] {
	case host.StageCommand:
		os.Exit(host.StageMain())
	case run.FSStageCommand:
		os.Exit(run.FSStageMain(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
}

// Decode reads a request as `sbx exec` reads its stdin: strictly (exact
// keys, no duplicates, no unknown fields), at most 16 MiB.
func Decode(data []byte) (*Request, error) { return wire.Decode(data) }

// Run checks, prepares and runs one call, as `sbx exec` does. An error is
// a refusal: nothing ran (wire.NewRefusal makes its JSON). Cancelling
// ctx settles a pending approval cancelled and kills a running command's
// tree.
func Run(ctx context.Context, req *Request, opt Options) (Response, error) {
	raw, err := wireForm(req)
	if err != nil {
		return Response{}, err
	}
	env := opt.Env
	if env == nil {
		env = os.Environ()
	}
	r, in, err := req.Call(env)
	if err != nil {
		return Response{}, err
	}
	if opt.Approver != nil {
		r.Escalation.Approver = opt.Approver
	}
	return run.Exec(ctx, req, r, in, run.Options{Raw: raw, Events: opt.Events})
}

// FS makes the one file-system change of req.FS under the sandbox the
// rest of req describes, as Run does for such a request, and returns its
// result: OK, or Error with kind "denied" (the sandbox refused it; see the
// retry) or "failed". An error is a refusal: nothing changed.
func FS(ctx context.Context, req *Request, opt Options) (*FSResult, error) {
	if req.FS == nil {
		return nil, errors.New("fs: the request has no fs change (Run runs a command)")
	}
	res, err := Run(ctx, req, opt)
	if err != nil {
		return nil, err
	}
	return res.FS, nil
}

// Explain is the plan Run would enforce for req on this system, as text
// (`sbx explain`'s) and as a value that marshals to `sbx explain --json`'s.
// Nothing runs, but a request that asks for more permissions is prepared as
// Run prepares it: its approver is asked.
func Explain(ctx context.Context, req *Request) (string, any, error) {
	if req.FS != nil {
		return "", nil, errors.New("explain: a file-system change has no command to explain")
	}
	r, _, err := req.Call(os.Environ())
	if err != nil {
		return "", nil, err
	}
	p, err := call.Prepare(ctx, r)
	if err != nil && !errors.Is(err, call.ErrNotFound) {
		return "", nil, err
	}
	return host.Explain(p.Call)
}

// Doctor is what this system can enforce: `sbx doctor`'s checks.
func Doctor() []Check { return host.Doctor() }

// wireForm is req as a runtime would have sent it: the fields it sets, by
// their JSON keys, without the unset rest (a retry hint repeats it). It is
// built from req's fields directly, one key per field of the wire type.
func wireForm(req *Request) ([]byte, error) {
	m := map[string]any{}
	v := reflect.ValueOf(req).Elem()
	for i := range v.NumField() {
		sf := v.Type().Field(i)
		key, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if !sf.IsExported() || key == "" || key == "-" || unset(v.Field(i)) {
			continue
		}
		m[key] = v.Field(i).Interface()
	}
	return json.Marshal(m)
}

// unset says a field holds what a caller who left it out would: nil, or
// false, 0 or "" (behind a pointer too: "stdin": "" is no input). A value
// that spells itself (a mode, which reads "read-only" at 0) is set.
func unset(f reflect.Value) bool {
	for f.Kind() == reflect.Pointer {
		if f.IsNil() {
			return true
		}
		f = f.Elem()
	}
	if f.Type().Implements(reflect.TypeFor[encoding.TextMarshaler]()) || f.Type().Implements(reflect.TypeFor[json.Marshaler]()) {
		return false
	}
	switch f.Kind() {
	case reflect.Bool, reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return f.IsZero()
	case reflect.Slice, reflect.Map, reflect.Interface:
		return f.IsNil()
	}
	return false
}
