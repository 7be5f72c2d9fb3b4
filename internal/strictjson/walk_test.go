package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"testing"
)

// FuzzKeyWalk: checkKeys (a byte walk over the value encoding/json's
// scanner accepted) refuses exactly what the json.Decoder.Token walk it
// replaced refused, with the same field and reason, for every well-formed
// input, under a typed target, in lenient mode, and under no type.
func FuzzKeyWalk(f *testing.F) {
	for _, s := range strictSeeds {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{"a":1,"b":[1,2,{"c":null,"c":true}]}`, `{"\u00e9":1,"é":2}`, "{\"\xff\":1,\"\xfe\":2}",
		` [ ] `, `{"items":[{"flag":null}]}`, `{"inner":{}}`, `1e5`, `"x"`, `{"a":"\"}\\"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var first json.RawMessage
		if json.NewDecoder(bytes.NewReader(data)).Decode(&first) != nil {
			// Malformed: the byte walk leaves it to the typed decode to
			// report (the token walk could name a duplicate key before
			// the syntax error); either way nothing is accepted.
			if _, err := (&keyCheck{}).checkKeys(data, nil); err == nil {
				t.Fatalf("%q is malformed, the byte walk took it", data)
			}
			return
		}
		for _, target := range []reflect.Type{reflect.TypeOf(&strictTarget{}), reflect.TypeOf(&requiredTarget{}), nil} {
			for _, lenient := range []bool{false, true} {
				walk, token := &keyCheck{lenient: lenient, keysOnly: true}, &keyCheck{lenient: lenient}
				wNull, wErr := walk.checkKeys(data, target)
				tNull, tErr := token.tokenCheckKeys(data, target)
				// With strings checked, the walk refuses what it refused,
				// or refuses a string before it (exact strings: strings.go).
				full := &keyCheck{lenient: lenient}
				fNull, fErr := full.checkKeys(data, target)
				if !errors.Is(fErr, ErrNUL) && !errors.Is(fErr, ErrInvalidUTF8) && !errors.Is(fErr, ErrEmptyPath) &&
					(fNull != wNull || fmt.Sprint(fErr) != fmt.Sprint(wErr)) {
					t.Fatalf("%q under %v (lenient %v): with strings %v, keys only %v", data, target, lenient, fErr, wErr)
				}
				var wf, tf *FieldError
				wIs, tIs := errors.As(wErr, &wf), errors.As(tErr, &tf)
				if wIs != tIs || (wIs && wf.Error() != tf.Error()) || ((wErr == nil) != (tErr == nil)) {
					t.Fatalf("%q under %v (lenient %v): byte walk %v, token walk %v", data, target, lenient, wErr, tErr)
				}
				if wErr == nil && (wNull != tNull || !equalStrings(walk.ignored, token.ignored)) {
					t.Fatalf("%q under %v: null %v/%v, ignored %q/%q", data, target, wNull, tNull, walk.ignored, token.ignored)
				}
			}
		}
	})
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

type requiredTarget struct {
	Name  string            `json:"name" strict:"required"`
	Other *string           `json:"other" strict:"required"`
	Items []strictInner     `json:"items"`
	Env   map[string]string `json:"env"`
}

// tokenCheckKeys is checkKeys as it was before the byte walk: it reads the
// first JSON value of data token by token, beside the Go
// type t it decodes into, and returns a *FieldError for the first key that is
// not exactly a field of its struct, is given twice in its object (struct or
// map), or for a required field that is absent or null. Any other error means
// the tokens could not be read (malformed JSON); the typed decode then
// reports it in its own words. null reports a top-level JSON null.
func (kc *keyCheck) tokenCheckKeys(data []byte, t reflect.Type) (null bool, err error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // numbers are skipped, not parsed
	return kc.tokenKeysOfValue(dec, t, "", 0)
}

// tokenKeysOfValue checks one value; null reports whether it was JSON null.
func (kc *keyCheck) tokenKeysOfValue(dec *json.Decoder, t reflect.Type, path string, depth int) (null bool, err error) {
	tok, err := dec.Token()
	if err != nil {
		return false, err
	}
	switch tok {
	case json.Delim('{'):
		return false, kc.tokenKeysOfObject(dec, decodeTarget(t), path, depth+1)
	case json.Delim('['):
		if depth+1 > maxKeyDepth {
			return false, errTooDeep
		}
		var elem reflect.Type
		if t = decodeTarget(t); t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; dec.More(); i++ {
			if _, err := kc.tokenKeysOfValue(dec, elem, path+"["+strconv.Itoa(i)+"]", depth+1); err != nil {
				return false, err
			}
		}
		_, err = dec.Token() // ']'
		return false, err
	}
	return tok == nil, nil
}

func (kc *keyCheck) tokenKeysOfObject(dec *json.Decoder, t reflect.Type, path string, depth int) error {
	if depth > maxKeyDepth {
		return errTooDeep
	}
	var fields map[string]jsonField
	var elem reflect.Type
	switch {
	case t == nil:
	case t.Kind() == reflect.Struct:
		fields = jsonFields(t)
	case t.Kind() == reflect.Map:
		elem = t.Elem()
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string) // Token guarantees a string key here
		p := join(path, key)
		if seen[key] {
			return &FieldError{Field: p, Err: ErrDuplicateKey}
		}
		seen[key] = true
		et := elem
		if fields != nil {
			f, ok := fields[key]
			switch {
			case !ok && kc.lenient && !caseVariant(key, fields):
				// Skipped by the typed decode; its value is still read
				// for duplicate keys, under no type.
				kc.ignored = append(kc.ignored, p)
			case !ok:
				return &FieldError{Field: p, Err: unknownField(key, fields)}
			}
			et = f.Type
		}
		null, err := kc.tokenKeysOfValue(dec, et, p, depth)
		if err != nil {
			return err
		}
		if null && fields[key].Required {
			// sbx reads null as absent; a required field must have a value.
			return &FieldError{Field: p, Err: ErrRequired}
		}
	}
	if _, err := dec.Token(); err != nil { // '}'
		return err
	}
	// Report missing required fields in a stable order.
	names := make([]string, 0, len(fields))
	for name, f := range fields {
		if f.Required && !seen[name] {
			names = append(names, name)
		}
	}
	if len(names) > 0 {
		sort.Strings(names)
		return &FieldError{Field: join(path, names[0]), Err: ErrRequired}
	}
	return nil
}
