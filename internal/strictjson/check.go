package strictjson

import (
	"errors"
	"reflect"
)

// Check applies Decode's rules for v's type to data without
// decoding it: exact keys, no duplicate at any depth, required fields
// present, strings by their kind. data must be one well-formed JSON value,
// as json.Marshal or json.Compact produce it (the byte walk assumes it; a
// writer checking what it just encoded has exactly that). It is for a
// writer that must not write what its reader would refuse (the journal
// checks each record it encodes): the typed decode Decode adds would
// only rebuild the value the writer already holds, at several times the
// cost of the walk. A nil error means Decode(data, v) accepts data.
func Check(wellFormed []byte, v any) error {
	if len(wellFormed) == 0 {
		return errors.New("empty input: expected a JSON object")
	}
	w := keyWalk{b: wellFormed, kc: &keyCheck{}}
	null, err := w.value(reflect.TypeOf(v), KindToken, nil, 0)
	if err != nil {
		return err
	}
	if t := decodeTarget(reflect.TypeOf(v)); null && t != nil && (t.Kind() == reflect.Struct || t.Kind() == reflect.Map) {
		return errors.New("expected a JSON object, got JSON null")
	}
	return nil
}
