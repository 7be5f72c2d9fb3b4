// Package jsonfuzz holds the invariants the fuzz tests of sbx's strict JSON
// decoders (strictjson.Decode and its callers) assert on every input a
// decoder accepted. It is an oracle written apart from the decoder, for
// tests only.
//
//	var v execRequest
//	if strictjson.Decode(data, &v) == nil {
//		jsonfuzz.Accepted(t, data, &v, func(b []byte, into any) error { return strictjson.Decode(b, into) })
//	}
//
// Guarantees: Accepted fails the test when the accepted input has a key
// given twice in one object (at any depth), when a non-empty value of the
// input is not found under the exact same key path in the re-encoded value
// (a case variant that was folded onto a field), or when the value does not
// re-decode to the same JSON.
package jsonfuzz

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"testing"
)

// Accepted checks the invariants of data, which decode accepted into v (a
// pointer). decode must be the decoder under test.
func Accepted(t *testing.T, data []byte, v any, decode func([]byte, any) error) {
	t.Helper()
	if p, ok := DuplicateKey(data); ok {
		t.Fatalf("accepted a duplicate key at %q: %q", p, data)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("accepted %q, but the value does not encode: %v", data, err)
	}
	if p := Lost(data, out); p != "" {
		t.Fatalf("accepted %q, but its value at %q is not in the decoded value %s (a key folded onto another?)", data, p, out)
	}
	again := reflect.New(reflect.TypeOf(v).Elem()).Interface()
	if err := decode(out, again); err != nil {
		t.Fatalf("the re-encoded value %s is refused: %v", out, err)
	}
	if out2, _ := json.Marshal(again); !bytes.Equal(out, out2) {
		t.Fatalf("the value does not round-trip:\n%s\n%s", out, out2)
	}
}

// DuplicateKey reports the path of the first key given twice in one object
// of data, at any depth. Input that is not JSON has none.
func DuplicateKey(data []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	p, dup, _ := dupValue(dec, "")
	return p, dup
}

func dupValue(dec *json.Decoder, path string) (string, bool, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", false, err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return "", false, err
			}
			key, _ := k.(string)
			if seen[key] {
				return path + "." + key, true, nil
			}
			seen[key] = true
			if p, dup, err := dupValue(dec, path+"."+key); dup || err != nil {
				return p, dup, err
			}
		}
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if p, dup, err := dupValue(dec, path+"["+strconv.Itoa(i)+"]"); dup || err != nil {
				return p, dup, err
			}
		}
	default:
		return "", false, nil
	}
	_, err = dec.Token()
	return "", false, err
}

// Lost returns the path of the first non-empty value of in (a JSON object)
// that out lacks under the same exact keys, or that differs there; "" when
// none is lost. Empty values (null, false, 0, "", [], {}) may be dropped
// by omitempty and are not compared.
func Lost(in, out []byte) string {
	var a, b any
	if json.Unmarshal(in, &a) != nil || json.Unmarshal(out, &b) != nil {
		return "(not JSON)"
	}
	return lost(a, b, "")
}

func lost(a, b any, path string) string {
	if empty(a) {
		return ""
	}
	switch av := a.(type) {
	case map[string]any:
		bv, _ := b.(map[string]any)
		for k, x := range av {
			y, ok := bv[k]
			if !ok && !empty(x) {
				return path + "." + k
			}
			if p := lost(x, y, path+"."+k); p != "" {
				return p
			}
		}
	case []any:
		bv, _ := b.([]any)
		if len(av) != len(bv) {
			return path
		}
		for i := range av {
			if p := lost(av[i], bv[i], path+"["+strconv.Itoa(i)+"]"); p != "" {
				return p
			}
		}
	default:
		if !reflect.DeepEqual(a, b) {
			return path
		}
	}
	return ""
}

func empty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case float64:
		return x == 0
	case string:
		return x == ""
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}
