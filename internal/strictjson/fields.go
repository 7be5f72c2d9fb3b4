package strictjson

import (
	"encoding/json"
	"errors"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

var jsonUnmarshaler = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()

// JSONKind names the JSON a Go type decodes from: "a JSON object", "an
// array of strings", "a string" (for a type that parses text, such as Mode).
func JSONKind(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == nil, reflect.PointerTo(t).Implements(jsonUnmarshaler):
		return "a JSON value"
	case reflect.PointerTo(t).Implements(textUnmarshaler):
		return "a string"
	}
	switch t.Kind() {
	case reflect.Struct:
		return "a JSON object"
	case reflect.Map:
		return "an object of " + plural(t.Elem())
	case reflect.Slice, reflect.Array:
		return "an array of " + plural(t.Elem())
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a JSON value"
}

// plural is JSONKind for the elements of an array or object.
func plural(t reflect.Type) string {
	k := JSONKind(t)
	switch k {
	case "a JSON object":
		return "objects"
	case "a JSON value":
		return "JSON values"
	}
	k = strings.TrimPrefix(strings.TrimPrefix(k, "an "), "a ")
	if strings.HasPrefix(k, "array of ") || strings.HasPrefix(k, "object of ") {
		return k[:strings.Index(k, " ")] + "s" + k[strings.Index(k, " "):]
	}
	return k + "s"
}

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
		var fields map[string]jsonField
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
				f, ok := fields[k]
				if !ok {
					continue
				}
				et = f.Type
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

var textUnmarshaler = reflect.TypeOf((*interface{ UnmarshalText([]byte) error })(nil)).Elem()

// badTextField finds the first string whose Go type rejects it in
// UnmarshalText, or the first value whose Go type rejects it in its own
// UnmarshalJSON, and returns its dotted path and the type's error.
func badTextField(v any, t reflect.Type, prefix string) (string, error) {
	return walkJSON(v, t, prefix, func(v any, t reflect.Type, path string) (string, error) {
		str, ok := v.(string)
		if !ok && reflect.PointerTo(t).Implements(jsonUnmarshaler) {
			// A value with its own JSON form (a granular approval
			// policy): decode it alone, and name its field from here.
			raw, err := json.Marshal(v)
			if err != nil {
				return "", nil
			}
			if err := reflect.New(t).Interface().(json.Unmarshaler).UnmarshalJSON(raw); err != nil {
				var fe *FieldError
				if errors.As(err, &fe) {
					return join(path, fe.Field), fe.Err
				}
				return path, err
			}
			return "", nil
		}
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

// jsonField is one JSON key of a struct: the Go type of its value, whether
// the field is tagged `strict:"required"`, and the kind of its strings
// (`kind:"path"`: see StringKind).
type jsonField struct {
	Type     reflect.Type
	Required bool
	Kind     StringKind
}

// jsonFields lists the JSON keys of struct type t as encoding/json names
// them, the fields of embedded structs included (an outer field wins). Where
// it and encoding/json might differ (same-depth conflicts), the typed decode
// still refuses a key it does not know: the difference fails closed.
func jsonFields(t reflect.Type) map[string]jsonField {
	out := map[string]jsonField{}
	var embedded []reflect.Type
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			embedded = append(embedded, ft)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = jsonField{Type: f.Type, Required: f.Tag.Get("strict") == "required", Kind: StringKind(f.Tag.Get("kind"))}
	}
	for _, et := range embedded {
		for name, f := range jsonFields(et) {
			if _, ok := out[name]; !ok {
				out[name] = f
			}
		}
	}
	return out
}

func join(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}
