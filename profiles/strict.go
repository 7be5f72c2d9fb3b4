package profiles

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
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
		var generic any
		if json.Unmarshal(data, &generic) == nil {
			// A value's own UnmarshalText error (an unknown mode) comes
			// without the field name; find the field by re-decoding leaves.
			if path, ferr := badTextField(generic, reflect.TypeOf(v), ""); ferr != nil {
				return &FieldError{Field: path, Err: ferr}
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
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("malformed JSON: unexpected end of input")
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

// walkJSON calls visit for every node of a generic JSON value, with the Go
// type the node decodes into and its dotted path, in a stable order; it
// stops at the first node for which visit returns a path.
func walkJSON(v any, t reflect.Type, path string, visit func(v any, t reflect.Type, path string) (string, error)) (string, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if p, err := visit(v, t, path); p != "" {
		return p, err
	}
	switch val := v.(type) {
	case map[string]any:
		var fields map[string]reflect.Type
		switch t.Kind() {
		case reflect.Struct:
			fields = jsonFields(t)
		case reflect.Map:
		default:
			return "", nil
		}
		keys := make([]string, 0, len(val))
		for k := range val {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			var et reflect.Type
			if fields != nil {
				ft, ok := fields[k]
				if !ok {
					continue
				}
				et = ft
			} else {
				et = t.Elem()
			}
			if p, err := walkJSON(val[k], et, join(path, k), visit); p != "" {
				return p, err
			}
		}
	case []any:
		if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
			return "", nil
		}
		for i, e := range val {
			if p, err := walkJSON(e, t.Elem(), path+"["+strconv.Itoa(i)+"]", visit); p != "" {
				return p, err
			}
		}
	}
	return "", nil
}

// unknownFieldPath returns the path of the first key the Go type lacks.
func unknownFieldPath(v any, t reflect.Type, prefix string) string {
	p, _ := walkJSON(v, t, prefix, func(v any, t reflect.Type, path string) (string, error) {
		m, ok := v.(map[string]any)
		if !ok || t.Kind() != reflect.Struct {
			return "", nil
		}
		fields := jsonFields(t)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if _, ok := fields[k]; !ok {
				return join(path, k), nil
			}
		}
		return "", nil
	})
	return p
}

var textUnmarshaler = reflect.TypeOf((*interface{ UnmarshalText([]byte) error })(nil)).Elem()

// badTextField finds the first string whose Go type rejects it in
// UnmarshalText, and returns its dotted path and the type's error.
func badTextField(v any, t reflect.Type, prefix string) (string, error) {
	return walkJSON(v, t, prefix, func(v any, t reflect.Type, path string) (string, error) {
		str, ok := v.(string)
		if !ok || !reflect.PointerTo(t).Implements(textUnmarshaler) {
			return "", nil
		}
		target := reflect.New(t).Interface().(interface{ UnmarshalText([]byte) error })
		if err := target.UnmarshalText([]byte(str)); err != nil {
			return path, err
		}
		return "", nil
	})
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
