package serve

import (
	"errors"
	"fmt"

	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/report"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
	"github.com/sbx-sandbox/sbx/internal/wire"
)

// The error codes of the protocol: JSON-RPC 2.0's own, then the server's
// (add, never renumber). Every error also has data.kind, a word a client
// can switch on.
const (
	CodeParse          = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternal       = -32603

	CodeUnknownSession = -32001
	CodeNotInitialized = -32002
	CodeNoOpenTurn     = -32003
	CodeDenied         = -32004
	CodeUnsupported    = -32005
	CodeConflict       = -32006
	CodeShuttingDown   = -32007
	CodeTooLarge       = -32008
	// CodeCancelled is LSP's RequestCancelled.
	CodeCancelled = -32800
)

// The kinds of data.kind, one per code.
const (
	KindParse          = "parse"
	KindInvalidRequest = "invalid_request"
	KindMethodNotFound = "method_not_found"
	KindInvalidParams  = "invalid_params"
	KindInternal       = "internal"
	KindUnknownSession = "unknown_session"
	KindNotInitialized = "not_initialized"
	KindNoOpenTurn     = "no_open_turn"
	KindDenied         = "denied"
	KindUnsupported    = "unsupported"
	KindConflict       = "conflict"
	KindShuttingDown   = "shutting_down"
	KindTooLarge       = "too_large"
	KindCancelled      = "cancelled"
)

// The outcomes of a cancelled exec (data.outcome of a cancelled error, or
// the "aborted" of a result).
const (
	// OutcomeCancelled: cancelled before anyone was asked and before the
	// command started.
	OutcomeCancelled = "cancelled"
	// OutcomeAbortedBeforeDispatch: cancelled after an approval was asked
	// (the cancellation settled it, or it was allowed and the call was
	// stopped before its command started).
	OutcomeAbortedBeforeDispatch = "aborted_before_dispatch"
)

// Error is a JSON-RPC error object.
type Error struct {
	Code    int       `json:"code"`
	Message string    `json:"message"`
	Data    ErrorData `json:"data"`
}

// ErrorData is an error's data member.
type ErrorData struct {
	Kind string `json:"kind"`
	// Field names the parameter at fault (invalid_params), as a dotted path
	// inside params ("cwd", "additional_permissions.file_system.write[0]").
	Field string `json:"field,omitempty"`
	// Outcome is the approval outcome that denied a call (denied), or how
	// a cancelled call ended (cancelled).
	Outcome string `json:"outcome,omitempty"`
	// Feature is the required feature that is missing (unsupported).
	Feature   report.Feature `json:"feature,omitempty"`
	SessionID string         `json:"session_id,omitempty"`
	TurnID    string         `json:"turn_id,omitempty"`
	CallID    string         `json:"call_id,omitempty"`
	// Detail is the error object sbx exec would have printed in its
	// refusal, for a refused exec.
	Detail *wire.ErrorObject `json:"detail,omitempty"`
}

func (e *Error) Error() string { return e.Message }

func newError(code int, kind, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Data: ErrorData{Kind: kind}}
}

// paramError is an invalid_params error naming field.
func paramError(field string, err error) *Error {
	return &Error{Code: CodeInvalidParams, Message: field + ": " + err.Error(), Data: ErrorData{Kind: KindInvalidParams, Field: field}}
}

// asError maps err to the protocol: an *Error as it is, a field error to
// invalid_params, anything else internal.
func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var fe *strictjson.FieldError
	if errors.As(err, &fe) {
		return &Error{Code: CodeInvalidParams, Message: err.Error(), Data: ErrorData{Kind: KindInvalidParams, Field: fe.Field}}
	}
	return &Error{Code: CodeInternal, Message: err.Error(), Data: ErrorData{Kind: KindInternal}}
}

// refusalError maps a refusal of run.Exec: the same classification
// as sbx exec's refusal object, which goes along as data.detail.
func refusalError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	o := wire.ErrorFor(err, wire.KindInvalidRequest)
	d := ErrorData{Detail: o}
	code := CodeInvalidParams
	switch o.Kind {
	case wire.KindInvalidRequest:
		d.Kind, d.Field = KindInvalidParams, o.Field
	case wire.KindDeniedByPolicy:
		code, d.Kind, d.Outcome = CodeDenied, KindDenied, o.Outcome
	case wire.KindUnsupported:
		code, d.Kind, d.Feature = CodeUnsupported, KindUnsupported, o.Feature
	default:
		code, d.Kind = CodeInternal, KindInternal
	}
	return &Error{Code: code, Message: o.Message, Data: d}
}

// isCancelledDenial reports whether err is an approval settled cancelled.
func isCancelledDenial(err error) bool {
	o, ok := escalate.DenialOutcome(err)
	return ok && o == escalate.OutcomeCancelled
}
