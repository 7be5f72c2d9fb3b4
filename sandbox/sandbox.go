package sandbox

import (
	"context"
	"encoding"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"

	"github.com/sbx-sandbox/sbx/internal/call"
	"github.com/sbx-sandbox/sbx/internal/enforce/host"
	"github.com/sbx-sandbox/sbx/internal/run"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
	"github.com/sbx-sandbox/sbx/internal/wire"
)

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
	// (Request.Approver). Cancelling Run's ctx settles a pending one
	// cancelled.
	Approver Approver
}

// Decode reads a request as `sbx exec` reads its stdin: strictly (exact
// keys, no duplicates, no unknown fields), at most 16 MiB. An error is a
// *Refusal naming the field.
func Decode(data []byte) (*Request, error) {
	w, err := wire.Decode(data)
	if err != nil {
		return nil, refusal(err)
	}
	return requestFromWire(w), nil
}

// DecodeProfile reads a permission profile strictly, as the request's
// "additional_permissions": {"network": {"enabled": true}, "file_system":
// {"read": [...], "write": [...]}}.
func DecodeProfile(data []byte) (Profile, error) {
	var p Profile
	if err := strictjson.Decode(data, &p); err != nil {
		return Profile{}, refusal(err)
	}
	return p, nil
}

// Run checks, prepares and runs one call, as `sbx exec` does. An error is
// a *Refusal: nothing ran. Cancelling ctx settles a pending approval
// cancelled and kills a running command's tree.
func Run(ctx context.Context, req *Request, opt Options) (Response, error) {
	res, err := exec(ctx, req.wire(), opt)
	if err != nil {
		return Response{}, refusal(err)
	}
	return responseFromWire(res), nil
}

// exec is Run on the wire form, the one the run stage takes.
func exec(ctx context.Context, req *wire.Request, opt Options) (wire.Response, error) {
	raw, err := wireForm(req)
	if err != nil {
		return wire.Response{}, err
	}
	env := opt.Env
	if env == nil {
		env = os.Environ()
	}
	r, in, err := req.Call(env)
	if err != nil {
		return wire.Response{}, err
	}
	if opt.Approver != nil {
		r.Escalation.Approver = answerer(opt.Approver)
	}
	var events wire.EventSink
	if opt.Events != nil {
		events = func(ev wire.OutputEvent) error { return opt.Events(eventFromWire(ev)) }
	}
	return run.Exec(ctx, req, r, in, run.Options{Raw: raw, Events: events})
}

// FS makes the one file-system change of req.FS under the sandbox the
// rest of req describes, as Run does for such a request, and returns its
// result: OK, or Error with kind KindFSDenied (the sandbox refused it; see
// the retry) or KindFSFailed. An error is a *Refusal: nothing changed.
func FS(ctx context.Context, req *Request, opt Options) (*FSResult, error) {
	if req.FS == nil {
		return nil, refusal(errors.New("fs: the request has no fs change (Run runs a command)"))
	}
	res, err := Run(ctx, req, opt)
	if err != nil {
		return nil, err
	}
	return res.FS, nil
}

// Explanation is the plan Run would enforce for a request on this system.
type Explanation struct {
	// Text is the plan as `sbx explain` prints it.
	Text string
	// plan is the backend's compiled plan, whose shape is the platform's:
	// an embedder reads it as the JSON MarshalJSON gives.
	plan any
}

// String is Text.
func (e Explanation) String() string { return e.Text }

// MarshalJSON is the plan as `sbx explain --json` prints it.
func (e Explanation) MarshalJSON() ([]byte, error) { return json.Marshal(e.plan) }

// Explain is the plan Run would enforce for req on this system. Nothing
// runs, but a request that asks for more permissions is prepared as Run
// prepares it: its approver is asked. An error is a *Refusal.
func Explain(ctx context.Context, req *Request) (Explanation, error) {
	if req.FS != nil {
		return Explanation{}, refusal(errors.New("explain: a file-system change has no command to explain"))
	}
	r, _, err := req.wire().Call(os.Environ())
	if err != nil {
		return Explanation{}, refusal(err)
	}
	p, err := call.Prepare(ctx, r)
	if err != nil && !errors.Is(err, call.ErrNotFound) {
		return Explanation{}, refusal(err)
	}
	text, plan, err := host.Explain(p.Call)
	if err != nil {
		return Explanation{}, refusal(err)
	}
	return Explanation{Text: text, plan: plan}, nil
}

// Doctor is what this system can enforce: `sbx doctor`'s checks.
func Doctor() []Check { return host.Doctor() }

// wireForm is req as a runtime would have sent it: the fields it sets, by
// their JSON keys, without the unset rest (a retry hint repeats it). It is
// built from req's fields directly, one key per field of the wire type.
func wireForm(req *wire.Request) ([]byte, error) {
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
