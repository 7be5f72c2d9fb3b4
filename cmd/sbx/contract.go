package main

import (
	"github.com/sbx-sandbox/sbx/execjson"
)

// The JSON contract (docs/json.md) is package execjson's; these names are
// the CLI's for it.

// SchemaVersion is the version of the JSON contract (execjson.SchemaVersion).
const SchemaVersion = execjson.SchemaVersion

// schemaVersion marshals as SchemaVersion.
type schemaVersion = execjson.Version

// The kinds of an error object, a closed vocabulary (execjson.ErrorKinds).
const (
	errInvalidRequest = execjson.KindInvalidRequest
	errDeniedByPolicy = execjson.KindDeniedByPolicy
	errUnsupported    = execjson.KindUnsupported
	errExecFailed     = execjson.KindExecFailed
	errInternal       = execjson.KindInternal
	fsDenied          = execjson.KindFSDenied
	fsFailed          = execjson.KindFSFailed
)

// errorKinds is the vocabulary, in the schema's order.
var errorKinds = execjson.ErrorKinds

// errorObject is the one shape of an error on the wire.
type errorObject = execjson.ErrorObject

// internalError marks a failure of sbx itself among refusals, which are
// otherwise the request's fault (execjson.InternalMarker).
type internalError struct{ err error }

func (e internalError) Error() string    { return e.err.Error() }
func (e internalError) Unwrap() error    { return e.err }
func (e internalError) InternalFailure() {}

// errorFor classifies err (execjson.ErrorFor).
func errorFor(err error, fallback string) *errorObject { return execjson.ErrorFor(err, fallback) }

// execErrno names the errno in err's chain, or "" when there is none.
func execErrno(err error) string { return execjson.Errno(err) }

// refusal is what sbx exec (and sbx fs --json) prints when it refuses
// (exit 125): nothing ran.
type refusal = execjson.Refusal

// newRefusal is the refusal for err.
func newRefusal(err error) refusal { return execjson.NewRefusal(err) }
