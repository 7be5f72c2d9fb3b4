package main

import (
	"errors"
	"syscall"

	"github.com/sbx-sandbox/sbx/call"
	"github.com/sbx-sandbox/sbx/enforce"
	"github.com/sbx-sandbox/sbx/enforce/host"
	"github.com/sbx-sandbox/sbx/escalate"
	"github.com/sbx-sandbox/sbx/profiles"
)

// SchemaVersion is the version of the JSON contract (docs/json.md, the
// schemas in docs/schema, whose $ids carry it as /v1/): every result,
// report and refusal says it in "schema_version". It changes only when a
// field changes meaning or goes away; fields are added without a change.
const SchemaVersion = "1"

// schemaVersion marshals as SchemaVersion: embedded in every output, it
// cannot be forgotten where one is built.
type schemaVersion struct{}

func (schemaVersion) MarshalText() ([]byte, error) { return []byte(SchemaVersion), nil }

// UnmarshalText accepts any version: a reader of old output still decodes it.
func (*schemaVersion) UnmarshalText([]byte) error { return nil }

// The kinds of an error object, a closed vocabulary (the schema's
// $defs/error/properties/kind enum; a test keeps the two equal).
const (
	// errInvalidRequest: the request or the flags are bad; field names the
	// field when it is known.
	errInvalidRequest = "invalid_request"
	// errDeniedByPolicy: the escalation was not approved; outcome says how.
	errDeniedByPolicy = "denied_by_policy"
	// errUnsupported: a required feature cannot be enforced here; feature
	// names it.
	errUnsupported = "unsupported"
	// errExecFailed: the command could not be started (exit 126, 127);
	// errno names the error.
	errExecFailed = "exec_failed"
	// errInternal: sbx itself failed.
	errInternal = "internal"
	// fsDenied and fsFailed are the kinds of an fs result's error: the
	// sandbox refused the change (on the supervisor's evidence), or it
	// failed for an ordinary reason.
	fsDenied = "denied"
	fsFailed = "failed"
)

// errorKinds is the vocabulary, in the schema's order.
var errorKinds = []string{errInvalidRequest, errDeniedByPolicy, errUnsupported, errExecFailed, errInternal, fsDenied, fsFailed}

// errorObject is the one shape of an error on the wire: "error_detail" of a
// refusal and of an exec result, and "error" (and "error_detail") of an fs
// result. Message is the text the CLI prints on stderr.
type errorObject struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	// Field is the request field (or flag) at fault, for invalid_request.
	Field string `json:"field,omitempty"`
	// Outcome is rejected, cancelled, unavailable or never, for
	// denied_by_policy.
	Outcome string `json:"outcome,omitempty"`
	// Feature is the required feature, for unsupported.
	Feature string `json:"feature,omitempty"`
	// Errno is the error's name (ENOENT, EACCES), for exec_failed.
	Errno string `json:"errno,omitempty"`
}

// internalError marks a failure of sbx itself among refusals, which are
// otherwise the request's fault.
type internalError struct{ err error }

func (e internalError) Error() string { return e.err.Error() }
func (e internalError) Unwrap() error { return e.err }

// errorFor classifies err. fallback is the kind of an error that says
// nothing more specific: invalid_request while the request is checked,
// internal once it runs.
func errorFor(err error, fallback string) *errorObject {
	o := &errorObject{Kind: fallback, Message: err.Error()}
	var unsupported *enforce.UnsupportedFeatureError
	var field *profiles.FieldError
	var internal internalError
	if outcome, ok := escalate.DenialOutcome(err); ok {
		o.Kind, o.Outcome = errDeniedByPolicy, outcome
	} else if errors.As(err, &unsupported) {
		o.Kind, o.Feature = errUnsupported, unsupported.Feature
	} else if errors.Is(err, call.ErrNotFound) {
		o.Kind, o.Errno = errExecFailed, "ENOENT"
	} else if errors.Is(err, host.ErrStart) && !errors.Is(err, enforce.ErrNotSupported) {
		o.Kind, o.Errno = errExecFailed, execErrno(err)
	} else if errors.As(err, &internal) {
		o.Kind = errInternal
	} else if errors.As(err, &field) {
		o.Kind, o.Field = errInvalidRequest, field.Field
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

// execErrno names the errno in err's chain, or "" when there is none.
func execErrno(err error) string {
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

// refusal is what sbx exec (and sbx fs --json) prints when it refuses
// (exit 125): nothing ran.
type refusal struct {
	SchemaVersion schemaVersion `json:"schema_version"`
	// Error is the message of ErrorDetail, as it was before the object.
	Error       string       `json:"error"`
	ErrorDetail *errorObject `json:"error_detail"`
}

// newRefusal is the refusal for err; an error with nothing more specific
// to say is invalid_request (internalError marks sbx's own failures).
func newRefusal(err error) refusal {
	o := errorFor(err, errInvalidRequest)
	return refusal{Error: o.Message, ErrorDetail: o}
}
