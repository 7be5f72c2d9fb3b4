package wire

import (
	"errors"
	"fmt"
	"time"

	"github.com/sbx-sandbox/sbx/internal/call"
	"github.com/sbx-sandbox/sbx/internal/enforce/host"
	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/fsop"
	"github.com/sbx-sandbox/sbx/internal/netrule"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/report"
	"github.com/sbx-sandbox/sbx/internal/shells"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// Request is the wire shape of `sbx exec` (docs/schema/exec-request.schema.json).
type Request struct {
	Command       []string       `json:"command"`
	Cwd           string         `json:"cwd" kind:"path"`
	SandboxMode   *profiles.Mode `json:"sandbox_mode"`
	WritableRoots []string       `json:"writable_roots" kind:"path"`
	ExcludeTmp    bool           `json:"exclude_tmp"`
	ExcludeTmpdir bool           `json:"exclude_tmpdir"`
	ReadOnly      []string       `json:"read_only" kind:"path"`
	// Protect and NoDefaultProtect are sbx run's --protect and
	// --no-default-protect (policy.DefaultProtected).
	Protect               []string          `json:"protect" kind:"path"`
	NoDefaultProtect      bool              `json:"no_default_protect"`
	NetworkAccess         bool              `json:"network_access"`
	AdditionalPermissions *profiles.Profile `json:"additional_permissions"`
	// Resolve pins names for the proxy of a network-by-domain call,
	// "HOST:PORT:ADDR" as sbx run's --resolve (call.Request.Resolve). It
	// is beside the profile, not in it: it grants nothing, so grants,
	// merging and approval never carry it.
	Resolve []string `json:"resolve"`
	// Tools opts into the tool table's profile of each named tool
	// (call.Request.Tools).
	Tools []string `json:"tools"`
	// Preauthorized marks additional_permissions and cap_add as the
	// caller's own under use_default (otherwise they are refused there).
	Preauthorized bool                `json:"preauthorized"`
	Env           map[string]string   `json:"env"`
	EnvPolicy     *profiles.EnvPolicy `json:"env_policy"`
	Shell         *shells.Spec        `json:"shell"`
	TimeoutMS     int64               `json:"timeout_ms"`
	// Limits are validated as sbx run's limit flags are (0 is refused).
	Limits         *report.LimitsRequest `json:"limits"`
	MaxOutputBytes int                   `json:"max_output_bytes"`
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
	Guard    string   `json:"guard" kind:"path"`
	// PTY, when present, runs the command on a fresh pseudo-terminal.
	PTY *PTY `json:"pty"`
	// Stdin is text the command reads, then end-of-file (absent: none).
	Stdin *string `json:"stdin" kind:"data"`
	// FS, instead of command or shell, makes one file-system change as
	// `sbx fs` does.
	FS *FSRequest `json:"fs"`
	// KillGraceMS is the time between a relayed SIGTERM and the kill of
	// the tree (0 or absent: host.DefaultKillGrace).
	KillGraceMS int64 `json:"kill_grace_ms"`
	// CapAdd are Linux capabilities the command keeps (root only), as
	// sbx run --cap-add: a widening, asked about under
	// with_additional_permissions, the caller's own only when
	// preauthorized under use_default (call.Prepare).
	CapAdd []string `json:"cap_add"`
	// RetryOnSuccess asks for the retry of a call that succeeded with
	// denials (call.Request.RetryOnSuccess): by default it has none.
	RetryOnSuccess bool `json:"retry_on_success"`
}

// PTY is the "pty" object; absent sizes are the default 24x80.
type PTY struct {
	Rows *int `json:"rows"`
	Cols *int `json:"cols"`
}

// size validates the object and fills in the defaults.
func (p PTY) size() (PTYSize, error) {
	s := DefaultPTYSize
	if p.Rows != nil {
		s.Rows = *p.Rows
	}
	if p.Cols != nil {
		s.Cols = *p.Cols
	}
	return s, s.Check("pty.")
}

// MaxRequest bounds a request. A request is a few kilobytes; the largest
// fields are "stdin" (at most MaxStdinBytes, up to six times that once
// escaped) and an fs change's content.
const MaxRequest = 16 << 20

// MaxKillGrace bounds kill_grace_ms: a longer wait is no grace period, and
// the bound keeps the duration from overflowing.
const MaxKillGrace = time.Hour

// Decode decodes one request strictly (exact keys, no duplicates, at
// every depth: strictjson.Decode). Its errors are refusals.
func Decode(data []byte) (*Request, error) {
	var req Request
	if err := strictjson.Decode(data, &req); err != nil {
		return nil, err
	}
	return &req, nil
}

// Input is what the command reads: text on a pipe, or typed into a pty.
type Input struct {
	PTY   *PTYSize // nil: pipes
	Stdin string
}

// Call checks the request's fields and maps it to the call it describes,
// with env as sbx's own environment (the command's is made from it), and
// the input. Every error names the field; nothing has been made.
func (req *Request) Call(env []string) (call.Request, Input, error) {
	var in Input
	var r call.Request
	if err := req.checkFS(); err != nil {
		return r, in, err
	}
	if req.TimeoutMS < 0 {
		return r, in, &strictjson.FieldError{Field: "timeout_ms", Err: errors.New("must not be negative")}
	}
	if req.TimeoutMS > report.MaxTimeout.Milliseconds() {
		return r, in, &strictjson.FieldError{Field: "timeout_ms", Err: report.ErrTimeoutRange}
	}
	if req.MaxOutputBytes < 0 {
		return r, in, &strictjson.FieldError{Field: "max_output_bytes", Err: errors.New("must not be negative")}
	}
	// Parsed once, here, where the error can name resolve[i]; the call
	// carries the typed rules to the proxy.
	resolve, err := netrule.ParseResolves(req.Resolve)
	if ie := (*netrule.IndexError)(nil); errors.As(err, &ie) {
		return r, in, &strictjson.FieldError{Field: fmt.Sprintf("resolve[%d]", ie.Index), Err: ie.Err}
	}
	killGrace, err := req.killGrace()
	if err != nil {
		return r, in, err
	}
	if req.Stdin != nil {
		if len(*req.Stdin) > MaxStdinBytes {
			return r, in, &strictjson.FieldError{Field: "stdin", Err: fmt.Errorf("%d bytes is more than the %d allowed; give the command a file instead", len(*req.Stdin), MaxStdinBytes)}
		}
		in.Stdin = *req.Stdin
	}
	if req.PTY != nil {
		size, err := req.PTY.size()
		if err != nil {
			return r, in, err
		}
		in.PTY = &size
	}
	r = call.Request{
		Command: req.Command, Cwd: req.Cwd, WritableRoots: req.WritableRoots, ExcludeTmp: req.ExcludeTmp,
		ExcludeTmpdir: req.ExcludeTmpdir, CarveOuts: req.ReadOnly, Network: req.NetworkAccess,
		Protect: req.Protect, ProtectField: "protect", NoDefaultProtect: req.NoDefaultProtect,
		Env: env, Timeout: time.Duration(req.TimeoutMS) * time.Millisecond, Require: req.Require, CapAdd: req.CapAdd, CapAddField: "cap_add",
		KillGrace: killGrace, Resolve: resolve, RetryOnSuccess: req.RetryOnSuccess, Tools: req.Tools,
	}
	if req.SandboxMode != nil {
		r.Mode = *req.SandboxMode
	}
	if req.Limits != nil {
		if r.Limits, err = req.Limits.Limits(report.JSONLimitNames); err != nil {
			return r, in, err
		}
	}
	if req.AdditionalPermissions != nil {
		r.Additional = *req.AdditionalPermissions
	}
	r.Preauthorized = req.Preauthorized
	if req.EnvPolicy != nil {
		r.EnvPolicy = *req.EnvPolicy
		if len(r.EnvPolicy.Set) > 0 {
			return r, in, &strictjson.FieldError{Field: "env_policy.set", Err: errors.New(`use the top-level "env" object`)}
		}
	}
	r.EnvPolicy.Set = req.Env
	r.Shell = req.Shell
	e, err := req.escalation()
	if err != nil {
		return r, in, err
	}
	r.Escalation = e
	if req.Cwd == "" {
		return r, in, &strictjson.FieldError{Field: "cwd", Err: errors.New("required")}
	}
	return r, in, nil
}

// escalation maps the request's permission fields. Without
// approval_policy an exec call never asks anyone: agent runtimes decide
// approval themselves and pass the answer as grants or an approver.
func (req *Request) escalation() (call.Escalation, error) {
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
			return e, &strictjson.FieldError{Field: "escalate_to", Err: errors.New(`only valid with sandbox_permissions "require_escalated"`)}
		}
		e.Target = *req.EscalateTo
	} else if e.SandboxPermissions == profiles.RequireEscalated {
		return e, &strictjson.FieldError{Field: "escalate_to", Err: errors.New(`required with sandbox_permissions "require_escalated"`)}
	}
	if len(req.Approver) > 0 {
		e.Approver = escalate.CommandApprover{Argv: req.Approver}
	}
	return e, nil
}

// killGrace checks kill_grace_ms.
func (req *Request) killGrace() (time.Duration, error) {
	if req.KillGraceMS < 0 || req.KillGraceMS > MaxKillGrace.Milliseconds() {
		return 0, &strictjson.FieldError{Field: "kill_grace_ms", Err: fmt.Errorf("must be between 0 and %d (0: the default %d)", MaxKillGrace.Milliseconds(), host.DefaultKillGrace.Milliseconds())}
	}
	return time.Duration(req.KillGraceMS) * time.Millisecond, nil
}

// FSRequest is the "fs" object of an `sbx exec` request: the change
// `sbx fs` makes from its arguments and stdin
// (docs/schema/exec-request.schema.json, $defs/fs).
type FSRequest struct {
	Op        fsop.Kind `json:"op"`
	Path      string    `json:"path" kind:"path"`
	Dest      string    `json:"dest" kind:"path"`
	Mode      string    `json:"mode"`
	Parents   bool      `json:"parents"`
	Recursive bool      `json:"recursive"`
	// Content is what write writes and append appends.
	Content *string `json:"content" kind:"data"`
	// Patch is the unified diff of apply-patch.
	Patch *string `json:"patch" kind:"data"`
}

// Change validates the object and returns the change and its input. Errors
// name the field ("fs.dest").
func (f FSRequest) Change() (fsop.Op, string, error) {
	op := fsop.Op{Kind: f.Op, Path: f.Path, Dest: f.Dest, Mode: f.Mode, Parents: f.Parents, Recursive: f.Recursive}
	var ae *fsop.ArgError
	if err := op.Validate(); errors.As(err, &ae) {
		return op, "", &strictjson.FieldError{Field: "fs." + ae.Field, Err: ae.Err}
	} else if err != nil {
		return op, "", &strictjson.FieldError{Field: "fs", Err: err}
	}
	inputs := []struct {
		field string
		value *string
		wants bool
	}{
		{"content", f.Content, op.Kind == fsop.Write || op.Kind == fsop.Append},
		{"patch", f.Patch, op.Kind == fsop.ApplyPatch},
	}
	input := ""
	for _, in := range inputs {
		switch {
		case in.wants && in.value == nil:
			return op, "", &strictjson.FieldError{Field: "fs." + in.field, Err: fmt.Errorf("required by %s", op.Kind)}
		case !in.wants && in.value != nil:
			return op, "", &strictjson.FieldError{Field: "fs." + in.field, Err: fmt.Errorf("not taken by %s", op.Kind)}
		case in.wants:
			input = *in.value
		}
	}
	return op, input, nil
}

// checkFS refuses the request fields an "fs" request does not go with:
// it runs no command, and its input is fs.content or fs.patch.
func (req *Request) checkFS() error {
	if req.FS == nil {
		return nil
	}
	others := []struct {
		field string
		set   bool
	}{
		{"command", req.Command != nil}, {"shell", req.Shell != nil}, {"stdin", req.Stdin != nil},
		{"pty", req.PTY != nil}, {"stream", req.Stream},
	}
	for _, o := range others {
		if o.set {
			return &strictjson.FieldError{Field: o.field, Err: errors.New(`not taken with "fs" (a request runs a command or makes one file-system change)`)}
		}
	}
	return nil
}
