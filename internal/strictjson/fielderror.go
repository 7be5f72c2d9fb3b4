package strictjson

import "errors"

// FieldError is an invalid value in a named field of a request.
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

// ErrUnknownField and ErrDuplicateKey are the Err of the *FieldError that
// Decode returns for a key the type lacks (a case variant of a known
// field included) and for a key given twice in one object.
var (
	ErrUnknownField = errors.New("unknown field")
	ErrDuplicateKey = errors.New("duplicate key")
	ErrRequired     = errors.New("required")
)
