package sandbox

import (
	"time"

	"github.com/sbx-sandbox/sbx/internal/wire"
)

// Request is one call: a command (or one file-system change, FS) and the
// permissions it runs with. Each field is a key of the JSON contract
// (docs/schema/exec-request.schema.json, named in its comment), with a Go
// type: a duration instead of milliseconds, a pointer where the contract
// tells an absent key from its zero value (new(sandbox.WorkspaceWrite)).
// Decode makes one from the JSON `sbx exec` reads.
type Request struct {
	// Command is the argv to run ("command"); Shell rewrites it.
	Command []string
	// Cwd is the call's working directory ("cwd", required): relative
	// paths of the request resolve against it.
	Cwd string
	// SandboxMode is the standing mode ("sandbox_mode"; nil: read-only).
	SandboxMode *Mode
	// WritableRoots are extra writable roots of workspace-write
	// ("writable_roots").
	WritableRoots []string
	// ExcludeTmp and ExcludeTmpdir keep /tmp and $TMPDIR out of the
	// writable roots ("exclude_tmp", "exclude_tmpdir").
	ExcludeTmp    bool
	ExcludeTmpdir bool
	// ReadOnly are carve-outs kept read-only inside the writable roots
	// ("read_only").
	ReadOnly []string
	// Protect and NoDefaultProtect are sbx run's --protect and
	// --no-default-protect ("protect", "no_default_protect").
	Protect          []string
	NoDefaultProtect bool
	// NetworkAccess is the caller's own network ("network_access").
	NetworkAccess bool
	// AdditionalPermissions is the permission profile the call asks for
	// ("additional_permissions"; DecodeProfile makes one).
	AdditionalPermissions *Profile
	// Resolve pins names for the proxy of a network-by-domain call,
	// "HOST:PORT:ADDR" ("resolve"): it grants nothing.
	Resolve []string
	// Tools opts into the tool table's profile of each named tool ("tools").
	Tools []string
	// Preauthorized marks AdditionalPermissions and CapAdd as the caller's
	// own under use_default ("preauthorized").
	Preauthorized bool
	// Env is set in the command's environment ("env"); EnvPolicy says
	// what of this process's environment it inherits ("env_policy").
	Env       map[string]string
	EnvPolicy *EnvPolicy
	// Shell runs Command through a shell ("shell").
	Shell *Shell
	// Timeout kills the command's tree once it passes ("timeout_ms",
	// rounded up to a whole millisecond; 0: none).
	Timeout time.Duration
	// Limits are the cgroup limits ("limits").
	Limits *Limits
	// MaxOutputBytes bounds each captured stream ("max_output_bytes").
	MaxOutputBytes int
	// Stream delivers the output to Options.Events as it comes ("stream").
	Stream bool
	// Require names features whose absence refuses the call ("require").
	Require []string
	// CallID and EnvironmentID identify the call and its session
	// ("call_id", "environment_id"): grants are keyed by them.
	CallID        string
	EnvironmentID string
	// Grants are the session's and turn's stored grants ("grants").
	Grants *Grants
	// SandboxPermissions and Justification are the per-call escalation
	// and its reason, a pair ("sandbox_permissions", "justification").
	SandboxPermissions *SandboxPermissions
	Justification      string
	// EscalateTo is the target mode of a require_escalated call
	// ("escalate_to").
	EscalateTo *Mode
	// ApprovalPolicy says when a person is asked ("approval_policy"; nil:
	// never, and an embedder decides approval itself).
	ApprovalPolicy *ApprovalPolicy
	// Approver is the argv of an approver program ("approver");
	// Options.Approver answers in-process instead.
	Approver []string
	// Guard is the path of a guard file, the final monotone layer ("guard").
	Guard string
	// PTY, when set, runs the command on a fresh pseudo-terminal ("pty").
	PTY *PTY
	// Stdin is text the command reads, then end-of-file ("stdin"; nil: none).
	Stdin *string
	// FS, instead of a command, makes one file-system change ("fs").
	FS *FSRequest
	// KillGrace is the time between a relayed SIGTERM and the kill of the
	// tree ("kill_grace_ms", rounded up to a whole millisecond; 0: the default).
	KillGrace time.Duration
	// CapAdd are Linux capabilities the command keeps, root only ("cap_add").
	CapAdd []string
	// RetryOnSuccess asks for the retry of a call that succeeded with
	// denials ("retry_on_success"): by default it has none.
	RetryOnSuccess bool
}

// PTY is the size of a command's pseudo-terminal; a nil size is the
// default 24x80.
type PTY struct {
	Rows *int
	Cols *int
}

// FSRequest is the one file-system change of a Request ("fs", the change
// `sbx fs` makes): Op on Path (and Dest), with the input Content (write,
// append) or Patch (apply-patch).
type FSRequest struct {
	Op        FSOp
	Path      string
	Dest      string
	Mode      string
	Parents   bool
	Recursive bool
	Content   *string
	Patch     *string
}

// The request's conversions to and from the wire form are the one place
// that knows both shapes: TestConversion fills each wire field in turn and
// fails on one that does not come back.

func (r *Request) wire() *wire.Request {
	w := &wire.Request{
		Command: r.Command, Cwd: r.Cwd, SandboxMode: r.SandboxMode, WritableRoots: r.WritableRoots,
		ExcludeTmp: r.ExcludeTmp, ExcludeTmpdir: r.ExcludeTmpdir, ReadOnly: r.ReadOnly, Protect: r.Protect,
		NoDefaultProtect: r.NoDefaultProtect, NetworkAccess: r.NetworkAccess, AdditionalPermissions: r.AdditionalPermissions,
		Resolve: r.Resolve, Tools: r.Tools, Preauthorized: r.Preauthorized, Env: r.Env, EnvPolicy: r.EnvPolicy,
		Shell: r.Shell, TimeoutMS: millis(r.Timeout), Limits: r.Limits, MaxOutputBytes: r.MaxOutputBytes,
		Stream: r.Stream, Require: r.Require, CallID: r.CallID, EnvironmentID: r.EnvironmentID, Grants: r.Grants,
		SandboxPermissions: r.SandboxPermissions, Justification: r.Justification, EscalateTo: r.EscalateTo,
		ApprovalPolicy: r.ApprovalPolicy, Approver: r.Approver, Guard: r.Guard, Stdin: r.Stdin,
		KillGraceMS: millis(r.KillGrace), CapAdd: r.CapAdd, RetryOnSuccess: r.RetryOnSuccess,
	}
	if r.PTY != nil {
		w.PTY = &wire.PTY{Rows: r.PTY.Rows, Cols: r.PTY.Cols}
	}
	if f := r.FS; f != nil {
		w.FS = &wire.FSRequest{Op: f.Op, Path: f.Path, Dest: f.Dest, Mode: f.Mode, Parents: f.Parents,
			Recursive: f.Recursive, Content: f.Content, Patch: f.Patch}
	}
	return w
}

func requestFromWire(w *wire.Request) *Request {
	r := &Request{
		Command: w.Command, Cwd: w.Cwd, SandboxMode: w.SandboxMode, WritableRoots: w.WritableRoots,
		ExcludeTmp: w.ExcludeTmp, ExcludeTmpdir: w.ExcludeTmpdir, ReadOnly: w.ReadOnly, Protect: w.Protect,
		NoDefaultProtect: w.NoDefaultProtect, NetworkAccess: w.NetworkAccess, AdditionalPermissions: w.AdditionalPermissions,
		Resolve: w.Resolve, Tools: w.Tools, Preauthorized: w.Preauthorized, Env: w.Env, EnvPolicy: w.EnvPolicy,
		Shell: w.Shell, Timeout: time.Duration(w.TimeoutMS) * time.Millisecond, Limits: w.Limits,
		MaxOutputBytes: w.MaxOutputBytes, Stream: w.Stream, Require: w.Require, CallID: w.CallID,
		EnvironmentID: w.EnvironmentID, Grants: w.Grants, SandboxPermissions: w.SandboxPermissions,
		Justification: w.Justification, EscalateTo: w.EscalateTo, ApprovalPolicy: w.ApprovalPolicy,
		Approver: w.Approver, Guard: w.Guard, Stdin: w.Stdin, KillGrace: time.Duration(w.KillGraceMS) * time.Millisecond,
		CapAdd: w.CapAdd, RetryOnSuccess: w.RetryOnSuccess,
	}
	if w.PTY != nil {
		r.PTY = &PTY{Rows: w.PTY.Rows, Cols: w.PTY.Cols}
	}
	if f := w.FS; f != nil {
		r.FS = &FSRequest{Op: f.Op, Path: f.Path, Dest: f.Dest, Mode: f.Mode, Parents: f.Parents,
			Recursive: f.Recursive, Content: f.Content, Patch: f.Patch}
	}
	return r
}

// millis is d in the contract's whole milliseconds, rounded up so that a
// timeout is never shorter than asked (nor 0, "none", for a sub-millisecond
// one). A negative d stays negative: the request's check refuses it.
func millis(d time.Duration) int64 {
	ms := d.Milliseconds()
	if d > 0 && d%time.Millisecond != 0 {
		ms++
	}
	return ms
}
