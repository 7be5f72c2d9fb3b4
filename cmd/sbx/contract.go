package main

import (
	"github.com/sbx-sandbox/sbx/internal/wire"
)

// The JSON contract (docs/json.md) is package wire's; these names are
// the CLI's for it.

// SchemaVersion is the version of the JSON contract (wire.SchemaVersion).
const SchemaVersion = wire.SchemaVersion

// schemaVersion marshals as SchemaVersion.
type schemaVersion = wire.Version

// The kinds of an error object, a closed vocabulary (wire.ErrorKinds).
const (
	errInvalidRequest = wire.KindInvalidRequest
	errDeniedByPolicy = wire.KindDeniedByPolicy
	errUnsupported    = wire.KindUnsupported
	errExecFailed     = wire.KindExecFailed
	errInternal       = wire.KindInternal
	fsDenied          = wire.KindFSDenied
	fsFailed          = wire.KindFSFailed
)

// errorKinds is the vocabulary, in the schema's order.
var errorKinds = wire.ErrorKinds

// errorObject is the one shape of an error on the wire.
type errorObject = wire.ErrorObject

// internalError marks a failure of sbx itself among refusals, which are
// otherwise the request's fault (wire.InternalMarker).
type internalError struct{ err error }

func (e internalError) Error() string    { return e.err.Error() }
func (e internalError) Unwrap() error    { return e.err }
func (e internalError) InternalFailure() {}

// errorFor classifies err (wire.ErrorFor).
func errorFor(err error, fallback string) *errorObject { return wire.ErrorFor(err, fallback) }

// execErrno names the errno in err's chain, or "" when there is none.
func execErrno(err error) string { return wire.Errno(err) }

// refusal is what sbx exec (and sbx fs --json) prints when it refuses
// (exit 125): nothing ran.
type refusal = wire.Refusal

// newRefusal is the refusal for err.
func newRefusal(err error) refusal { return wire.NewRefusal(err) }
