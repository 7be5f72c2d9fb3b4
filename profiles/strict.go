package profiles

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
)

// DecodeStrict decodes exactly one JSON value from data into v, rejecting
// unknown fields and trailing data. The error names the offending field, so a
// caller can show "additional_permissions.file_system.wirte: unknown field".
func DecodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if strings.HasPrefix(err.Error(), "json: unknown field ") {
			// encoding/json names the key but not where it is; find the path.
			var generic any
			if json.Unmarshal(data, &generic) == nil {
				if path := unknownFieldPath(generic, reflect.TypeOf(v), ""); path != "" {
					return fmt.Errorf("%s: unknown field", path)
				}
			}
		}
		return describeJSONError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

func describeJSONError(err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			field = "(top level)"
		}
		return fmt.Errorf("%s: expected %s, got JSON %s", field, typeErr.Type, typeErr.Value)
	case errors.As(err, &syntaxErr):
		return fmt.Errorf("malformed JSON at byte %d: %v", syntaxErr.Offset, err)
	case errors.Is(err, io.EOF):
		return errors.New("empty input: expected a JSON object")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// encoding/json gives no typed error for unknown fields; its text is
		// stable (`json: unknown field "x"`).
		return fmt.Errorf("%s: unknown field", strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`))
	}
	var fieldErr *FieldError
	if errors.As(err, &fieldErr) {
		return fieldErr
	}
	return err
}

// FieldError is an invalid value in a named field of a request.
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

// unknownFieldPath walks a generic JSON value against the Go type it was
// decoded into and returns the dotted path of the first key that type lacks.
func unknownFieldPath(v any, t reflect.Type, prefix string) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch val := v.(type) {
	case map[string]any:
		if t.Kind() == reflect.Map {
			for k, e := range val {
				if p := unknownFieldPath(e, t.Elem(), join(prefix, k)); p != "" {
					return p
				}
			}
			return ""
		}
		if t.Kind() != reflect.Struct {
			return ""
		}
		fields := jsonFields(t)
		for k, e := range val {
			ft, ok := fields[k]
			if !ok {
				return join(prefix, k)
			}
			if p := unknownFieldPath(e, ft, join(prefix, k)); p != "" {
				return p
			}
		}
	case []any:
		if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
			return ""
		}
		for i, e := range val {
			if p := unknownFieldPath(e, t.Elem(), prefix+"["+strconv.Itoa(i)+"]"); p != "" {
				return p
			}
		}
	}
	return ""
}

func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

func join(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}
