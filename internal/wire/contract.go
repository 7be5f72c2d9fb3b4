package wire

import (
	"errors"
	"syscall"

	"github.com/sbx-sandbox/sbx/internal/call"
	"github.com/sbx-sandbox/sbx/internal/enforce"
	"github.com/sbx-sandbox/sbx/internal/enforce/host"
	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/fsop"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/report"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// SchemaVersion is the version of the JSON contract (docs/json.md, the
// schemas in docs/schema, whose $ids carry it as /v1/): every result,
// report and refusal says it in "schema_version". It changes only when a
// field changes meaning or goes away; fields are added without a change.
const SchemaVersion = "1"

// Version marshals as SchemaVersion: embedded in every output, it cannot
// be forgotten where one is built.
type Version struct{}

func (Version) MarshalText() ([]byte, error) { return []byte(SchemaVersion), nil }

// UnmarshalText accepts any version: a reader of old output still decodes it.
func (*Version) UnmarshalText([]byte) error { return nil }

// The kinds of an error object, a closed vocabulary (the schema's
// $defs/error/properties/kind enum; a test keeps the two equal).
const (
	// KindInvalidRequest: the request or the flags are bad; field names
	// the field when it is known.
	KindInvalidRequest = "invalid_request"
	// KindDeniedByPolicy: the escalation was not approved; outcome says how.
	KindDeniedByPolicy = "denied_by_policy"
	// KindUnsupported: a required feature cannot be enforced here; feature
	// names it.
	KindUnsupported = "unsupported"
	// KindExecFailed: the command could not be started (exit 126, 127);
	// errno names the error.
	KindExecFailed = "exec_failed"
	// KindInternal: sbx itself failed.
	KindInternal = "internal"
	// KindFSDenied and KindFSFailed are the kinds of an fs result's error:
	// the sandbox refused the change (on the supervisor's evidence), or it
	// failed for an ordinary reason.
	KindFSDenied = "denied"
	KindFSFailed = "failed"
)

// ErrorKinds is the vocabulary, in the schema's order.
var ErrorKinds = []string{KindInvalidRequest, KindDeniedByPolicy, KindUnsupported, KindExecFailed, KindInternal, KindFSDenied, KindFSFailed}

// ErrorObject is the one shape of an error on the wire: "error_detail" of a
// refusal and of an exec result, and "error" (and "error_detail") of an fs
// result. Message is the text the CLI prints on stderr.
type ErrorObject struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	// Field is the request field (or flag) at fault, for invalid_request.
	Field string `json:"field,omitempty"`
	// Outcome is rejected, cancelled, unavailable or never, for
	// denied_by_policy.
	Outcome string `json:"outcome,omitempty"`
	// Feature is the required feature, for unsupported.
	Feature report.Feature `json:"feature,omitempty"`
	// Errno is the error's name (ENOENT, EACCES), for exec_failed.
	Errno string `json:"errno,omitempty"`
}

// InternalMarker is implemented by errors that mark a failure of sbx
// itself among refusals, which are otherwise the request's fault.
// Internal makes one; the CLI has its own.
type InternalMarker interface{ InternalFailure() }

type internalError struct{ err error }

func (e internalError) Error() string    { return e.err.Error() }
func (e internalError) Unwrap() error    { return e.err }
func (e internalError) InternalFailure() {}

// Internal marks err as sbx's own failure (kind internal).
func Internal(err error) error { return internalError{err} }

// ErrorFor classifies err. fallback is the kind of an error that says
// nothing more specific: invalid_request while the request is checked,
// internal once it runs.
func ErrorFor(err error, fallback string) *ErrorObject {
	o := &ErrorObject{Kind: fallback, Message: err.Error()}
	var unsupported *report.UnsupportedFeatureError
	var field *strictjson.FieldError
	var internal InternalMarker
	if outcome, ok := escalate.DenialOutcome(err); ok {
		o.Kind, o.Outcome = KindDeniedByPolicy, outcome
	} else if errors.As(err, &unsupported) {
		o.Kind, o.Feature = KindUnsupported, unsupported.Feature
	} else if errors.Is(err, call.ErrNotFound) {
		o.Kind, o.Errno = KindExecFailed, "ENOENT"
	} else if errors.Is(err, host.ErrStart) && !errors.Is(err, report.ErrNotSupported) {
		o.Kind, o.Errno = KindExecFailed, Errno(err)
	} else if errors.As(err, &internal) {
		o.Kind = KindInternal
	} else if errors.As(err, &field) {
		o.Kind, o.Field = KindInvalidRequest, field.Field
	}
	return o
}

// errnoNames are the errors an exec can fail with, by their C names (Go's
// syscall has no portable table of names).
var errnoNames = []struct {
	errno syscall.Errno
	name  string
}{
	{syscall.ENOENT, "ENOENT"}, {syscall.EACCES, "EACCES"}, {syscall.EPERM, "EPERM"},
	{syscall.ENOEXEC, "ENOEXEC"}, {syscall.ENOTDIR, "ENOTDIR"}, {syscall.EISDIR, "EISDIR"},
	{syscall.ELOOP, "ELOOP"}, {syscall.ENAMETOOLONG, "ENAMETOOLONG"}, {syscall.E2BIG, "E2BIG"},
	{syscall.ENOMEM, "ENOMEM"}, {syscall.ETXTBSY, "ETXTBSY"}, {syscall.EINVAL, "EINVAL"},
}

// Errno names the errno in err's chain, or "" when there is none.
func Errno(err error) string {
	var e syscall.Errno
	if !errors.As(err, &e) {
		return ""
	}
	for _, n := range errnoNames {
		if n.errno == e {
			return n.name
		}
	}
	return e.Error()
}

// Refusal is what sbx exec (and sbx fs --json) prints when it refuses
// (exit 125): nothing ran.
type Refusal struct {
	SchemaVersion Version `json:"schema_version"`
	// Error is the message of ErrorDetail, as it was before the object.
	Error       string       `json:"error"`
	ErrorDetail *ErrorObject `json:"error_detail"`
}

// NewRefusal is the refusal for err; an error with nothing more specific
// to say is invalid_request (Internal marks sbx's own failures).
func NewRefusal(err error) Refusal {
	o := ErrorFor(err, KindInvalidRequest)
	return Refusal{Error: o.Message, ErrorDetail: o}
}

// CallReport is the report of `sbx run --report` and the core of the
// `sbx exec` result: what was enforced plus where the permissions came from.
type CallReport struct {
	// SchemaVersion is SchemaVersion, first in every report and result.
	SchemaVersion Version `json:"schema_version"`
	// CallID echoes the call_id of an `sbx exec` request.
	CallID string `json:"call_id,omitempty"`
	report.Report
	Permissions call.Permissions `json:"permissions"`
	// Env names what the environment policy stripped and set (never values).
	Env profiles.EnvReport `json:"env"`
	// Retry is the exact-retry hint when the sandbox denied something.
	Retry *call.RetryHint `json:"retry,omitempty"`
}

// PreparedReport is the report of a prepared call before it runs.
func PreparedReport(p *call.Prepared) CallReport {
	if p == nil {
		return CallReport{}
	}
	return CallReport{Report: p.Report, Permissions: p.Permissions, Env: p.Env}
}

// Result is the wire shape of the result (docs/schema/exec-result.schema.json).
type Result struct {
	CallReport
	Stdout          string `json:"stdout" kind:"data"`
	Stderr          string `json:"stderr" kind:"data"`
	StdoutTruncated bool   `json:"stdout_truncated"`
	StderrTruncated bool   `json:"stderr_truncated"`
	// Error is why the command did not start (126, 127), for people;
	// ErrorDetail is the same as an error object (kind exec_failed).
	Error       string       `json:"error,omitempty"`
	ErrorDetail *ErrorObject `json:"error_detail,omitempty"`
}

// FSResult is the `sbx fs --json` output and the `sbx exec` result of an
// "fs" request: the report plus the outcome of the change.
type FSResult struct {
	CallReport
	Op fsop.Kind `json:"op"`
	OK bool      `json:"ok"`
	// Error says why the change was not made: Kind "denied" when the
	// supervisor reported a denial, else "failed"; Message is the helper's
	// error as the system call (or the patch) gave it.
	Error *ErrorObject `json:"error,omitempty"`
	// ErrorDetail is the same object, under the name every other output
	// gives it.
	ErrorDetail *ErrorObject `json:"error_detail,omitempty"`
}

// ExitRefused is the exit status when sbx refused or failed before the
// command started (bad flags, bad profile, a required feature missing).
const ExitRefused = 125

// ExitDenied is the exit status of an fs change the sandbox denied (the
// report has the denial and the retry hint).
const ExitDenied = 3

// exitStatusFor maps a failure before or at start to an exit status.
func exitStatusFor(err error) int {
	switch {
	case errors.Is(err, call.ErrNotFound):
		return 127
	case errors.Is(err, host.ErrStart):
		return 126
	}
	return ExitRefused
}

// StartFailure is the one mapping of a call that failed before or at
// start (err from call.Prepare or host.Run, not nil) to what the CLI says
// and the exit status: 127 not found, 126 not executable (or the status
// the report already has for a failed start), and ExitRefused for
// everything else, the E2BIG of too large arguments included.
func StartFailure(err error, cmd enforce.Command, reported int) (error, int) {
	err = call.StartError(err, cmd)
	code := exitStatusFor(err)
	if errors.Is(err, host.ErrStart) {
		code = reported
	}
	return err, code
}
