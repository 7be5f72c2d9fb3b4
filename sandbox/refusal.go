package sandbox

import (
	"encoding/json"
	"errors"

	"github.com/sbx-sandbox/sbx/internal/wire"
)

// The kinds of an ErrorDetail, a closed vocabulary (docs/json.md).
const (
	// KindInvalidRequest: the request is bad; Field names the field when
	// it is known.
	KindInvalidRequest = wire.KindInvalidRequest
	// KindDeniedByPolicy: the escalation was not approved; Outcome says how.
	KindDeniedByPolicy = wire.KindDeniedByPolicy
	// KindUnsupported: a required feature cannot be enforced here; Feature
	// names it.
	KindUnsupported = wire.KindUnsupported
	// KindExecFailed: the command could not be started (exit 126, 127);
	// Errno names the error.
	KindExecFailed = wire.KindExecFailed
	// KindInternal: sbx itself failed.
	KindInternal = wire.KindInternal
	// KindFSDenied and KindFSFailed are the kinds of an FSResult's Error:
	// the sandbox refused the change, or it failed for an ordinary reason.
	KindFSDenied = wire.KindFSDenied
	KindFSFailed = wire.KindFSFailed
)

// Refusal is every error of Decode, Run, FS and Explain: the call was
// refused and nothing ran. It carries what the JSON refusal of `sbx exec`
// carries (ErrorDetail: kind, field, outcome, feature, errno), and unwraps
// to the cause.
//
//	var ref *sandbox.Refusal
//	if errors.As(err, &ref) && ref.Kind == sandbox.KindInvalidRequest {
//		log.Printf("bad field %s: %s", ref.Field, ref.Message)
//	}
type Refusal struct {
	ErrorDetail
	err error
}

// Error is the message sbx prints for the refusal.
func (r *Refusal) Error() string { return r.Message }

// Unwrap is the cause.
func (r *Refusal) Unwrap() error { return r.err }

// MarshalJSON is the refusal as `sbx exec` prints it (exit 125).
func (r *Refusal) MarshalJSON() ([]byte, error) {
	return json.Marshal(wire.Refusal{Error: r.Message, ErrorDetail: r.ErrorDetail.wire()})
}

// refusal classifies err as `sbx exec` does (wire.NewRefusal: what says
// nothing more specific is an invalid request) and wraps it, once.
func refusal(err error) error {
	if err == nil {
		return nil
	}
	var ref *Refusal
	if errors.As(err, &ref) {
		return err
	}
	return &Refusal{ErrorDetail: *detailFromWire(wire.NewRefusal(err).ErrorDetail), err: err}
}
