package strictjson

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
	"sync"
)

// Decode decodes exactly one JSON value from data into v, rejecting
// unknown fields and trailing data. The error names the offending field, so a
// caller can show "additional_permissions.file_system.wirte: unknown field".
//
// Keys are exact (DESIGN.md invariant 4): encoding/json alone matches keys
// case-insensitively and keeps the last of duplicated keys, so a filter that
// checks "sandbox_mode" would be bypassed by "SANDBOX_MODE" or by a second
// "sandbox_mode". checkKeys refuses both, at every depth (map keys too),
// before the typed decode sees the input; with every key exact and unique,
// encoding/json's folding has nothing left to match. A struct field tagged
// `strict:"required"` must be present and not null.
func Decode(data []byte, v any) error {
	_, err := decodeChecked(data, v, &keyCheck{})
	return err
}

// DecodeLenient decodes one JSON value like Decode, except that a key
// the type does not know is skipped, with its value, and listed in ignored
// (dotted paths, in input order). It is for answers from outside sbx whose
// newer fields can only narrow what sbx reads (a request_permissions
// response carrying a "macos" section): requests stay strict. Keys are still
// exact: a case variant of a known field and a duplicate key, at any depth
// (under ignored keys too), are refused, because encoding/json would
// otherwise fold the one and keep the last of the other.
func DecodeLenient(data []byte, v any) (ignored []string, err error) {
	return decodeChecked(data, v, &keyCheck{lenient: true})
}

// keyCheck is the state of one checkKeys walk.
type keyCheck struct {
	lenient bool
	ignored []string
	// keysOnly leaves strings unchecked: the key rules alone, which
	// FuzzKeyWalk holds against the token walk it replaced.
	keysOnly bool
}

func decodeChecked(data []byte, v any, kc *keyCheck) ([]string, error) {
	null, keysErr := kc.checkKeys(data, reflect.TypeOf(v))
	var fe *FieldError
	if errors.As(keysErr, &fe) {
		return nil, keysErr
	}
	if t := decodeTarget(reflect.TypeOf(v)); null && keysErr == nil && t != nil && (t.Kind() == reflect.Struct || t.Kind() == reflect.Map) {
		// encoding/json reads a top-level null as "set nothing": a request
		// of null is a mistake, not an empty request.
		return nil, errors.New("expected a JSON object, got JSON null")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if !kc.lenient {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		var generic any
		if json.Unmarshal(data, &generic) == nil {
			// A value's own UnmarshalText error (an unknown mode) comes
			// without the field name; find the field by re-decoding leaves.
			if path, ferr := badTextField(generic, reflect.TypeOf(v), ""); ferr != nil {
				return nil, &FieldError{Field: path, Err: ferr}
			}
		}
		return nil, describeJSONError(err)
	}
	if keysErr != nil {
		// The key check could not read what the decoder took: fail closed.
		return nil, describeJSONError(keysErr)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("trailing data after the JSON value")
	}
	return kc.ignored, nil
}

func describeJSONError(err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		// The Go type (main.execRequest) means nothing to a caller: say
		// which JSON type the field takes.
		if typeErr.Field == "" {
			return fmt.Errorf("expected %s, got JSON %s", JSONKind(typeErr.Type), typeErr.Value)
		}
		return fmt.Errorf("%s: expected %s, got JSON %s", typeErr.Field, JSONKind(typeErr.Type), typeErr.Value)
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

// maxKeyDepth bounds the nesting checkKeys follows, as encoding/json bounds
// its own (10000): deeper input is malformed for both.
const maxKeyDepth = 10000

var errTooDeep = fmt.Errorf("malformed JSON: nested deeper than %d", maxKeyDepth)

// checkKeys reads the first JSON value of data beside the Go type t it
// decodes into, and returns a *FieldError for the first key that is not
// exactly a field of its struct, is given twice in its object (struct or
// map), or for a required field that is absent or null. Any other error
// means the value could not be read (malformed JSON); the typed decode then
// reports it in its own words. null reports a top-level JSON null.
//
// encoding/json's scanner checks the value first (json.RawMessage), so the
// walk below reads well-formed JSON only: it finds the keys with a byte
// scan and no token per value. (It was a json.Decoder.Token walk: 18 µs
// and 189 allocations for one JSON-RPC exec request, read several times
// per call by sbx serve.)
func (kc *keyCheck) checkKeys(data []byte, t reflect.Type) (null bool, err error) {
	var raw json.RawMessage
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&raw); err != nil {
		return false, err
	}
	w := keyWalk{b: raw, kc: kc}
	return w.value(t, KindToken, nil, 0)
}

// keyWalk walks one well-formed JSON value; i is the next byte to read.
type keyWalk struct {
	b  []byte
	i  int
	kc *keyCheck
}

// keyPath is a value's place, rendered only for an error or an ignored
// key: "inner.items[0].flag".
type keyPath struct {
	parent *keyPath
	key    string
	index  int // an array element's, when isIdx
	isIdx  bool
}

func (p *keyPath) String() string {
	if p == nil {
		return ""
	}
	if p.isIdx {
		return p.parent.String() + "[" + strconv.Itoa(p.index) + "]"
	}
	return join(p.parent.String(), p.key)
}

func (w *keyWalk) space() {
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

// value checks one value, a string by the rule of kind (checkRawString);
// null reports whether it was JSON null.
func (w *keyWalk) value(t reflect.Type, kind StringKind, path *keyPath, depth int) (null bool, err error) {
	if deferredTo(t) {
		kind = kindDeferred
	}
	w.space()
	switch w.b[w.i] {
	case '{':
		w.i++
		return false, w.object(decodeTarget(t), kind, path, depth+1)
	case '[':
		w.i++
		if depth+1 > maxKeyDepth {
			return false, errTooDeep
		}
		var elem reflect.Type
		if t = decodeTarget(t); t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		w.space()
		if w.b[w.i] == ']' {
			w.i++
			return false, nil
		}
		for i := 0; ; i++ {
			if _, err := w.value(elem, kind, &keyPath{parent: path, index: i, isIdx: true}, depth+1); err != nil {
				return false, err
			}
			w.space()
			c := w.b[w.i]
			w.i++
			if c == ']' {
				return false, nil
			}
		}
	case '"':
		raw, _ := w.str()
		if err := w.checkString(raw, t, kind, path != nil && path.isIdx); err != nil {
			return false, &FieldError{Field: path.String(), Err: err}
		}
		return false, nil
	}
	// A number, true, false or null.
	start := w.i
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case ',', ']', '}', ' ', '\t', '\n', '\r':
			return string(w.b[start:w.i]) == "null", nil
		}
		w.i++
	}
	return string(w.b[start:w.i]) == "null", nil
}

// str skips a string and returns its raw text, quotes included; plain is
// true when it has no escape and no byte outside ASCII: the text between
// the quotes is then the string encoding/json decodes. (It replaces invalid
// UTF-8 with U+FFFD, so a key with any byte outside ASCII is decoded by it.)
func (w *keyWalk) str() (raw []byte, plain bool) {
	start := w.i
	w.i++
	plain = true
	for {
		switch c := w.b[w.i]; {
		case c == '"':
			w.i++
			return w.b[start:w.i], plain
		case c == '\\':
			plain = false
			w.i += 2
		default:
			if c >= 0x80 {
				plain = false
			}
			w.i++
		}
	}
}

// key reads an object's key as encoding/json decodes it, and its raw text.
func (w *keyWalk) key() (string, []byte) {
	raw, plain := w.str()
	if plain {
		return string(raw[1 : len(raw)-1]), raw
	}
	var k string
	if err := json.Unmarshal(raw, &k); err != nil {
		// Well-formed JSON: cannot happen. Keep the raw text, which
		// differs from every plain key.
		return string(raw), raw
	}
	return k, raw
}

// seenKeys are an object's keys so far: a list while it is short, a map
// once it is long (a message of a million keys must not cost their square).
type seenKeys struct {
	list []string
	set  map[string]bool
}

func (s *seenKeys) add(k string) (dup bool) {
	if s.set != nil {
		if s.set[k] {
			return true
		}
		s.set[k] = true
		return false
	}
	for _, x := range s.list {
		if x == k {
			return true
		}
	}
	s.list = append(s.list, k)
	if len(s.list) > 16 {
		s.set = make(map[string]bool, 2*len(s.list))
		for _, x := range s.list {
			s.set[x] = true
		}
	}
	return false
}

func (s *seenKeys) has(k string) bool {
	if s.set != nil {
		return s.set[k]
	}
	for _, x := range s.list {
		if x == k {
			return true
		}
	}
	return false
}

// decodeTarget is the type whose keys an object must have: t without
// pointers, or nil when the keys are not known here (an interface, a type
// with its own UnmarshalJSON, or a type the value does not fit, which the
// typed decode refuses). Duplicates are refused under a nil type too.
func decodeTarget(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return nil
	}
	return t
}

// object checks an object's keys and values; the '{' is read. kind is a
// map's: its keys and values are strings of that kind.
func (w *keyWalk) object(t reflect.Type, kind StringKind, path *keyPath, depth int) error {
	if depth > maxKeyDepth {
		return errTooDeep
	}
	var info *structKeys
	var elem, keyType reflect.Type
	switch {
	case t == nil:
	case t.Kind() == reflect.Struct:
		info = keysOf(t)
	case t.Kind() == reflect.Map:
		elem, keyType = t.Elem(), t.Key()
	}
	var seen seenKeys
	w.space()
	if w.b[w.i] == '}' {
		w.i++
	} else {
		for {
			w.space()
			key, raw := w.key()
			w.space()
			w.i++ // ':'
			p := &keyPath{parent: path, key: key}
			if err := w.checkString(raw, keyType, kind, true); err != nil {
				// Quoted: the key itself is what is wrong with it.
				return &FieldError{Field: path.String() + "[" + strconv.QuoteToASCII(key) + "]", Err: err}
			}
			if seen.add(key) {
				return &FieldError{Field: p.String(), Err: ErrDuplicateKey}
			}
			et, ek := elem, kind
			var f jsonField
			if info != nil {
				var ok bool
				f, ok = info.fields[key]
				switch {
				case !ok && w.kc.lenient && !caseVariant(key, info.fields):
					// Skipped by the typed decode; its value is still
					// read for duplicate keys, under no type.
					w.kc.ignored = append(w.kc.ignored, p.String())
				case !ok:
					return &FieldError{Field: p.String(), Err: unknownField(key, info.fields)}
				}
				et, ek = f.Type, f.Kind
			}
			null, err := w.value(et, ek, p, depth)
			if err != nil {
				return err
			}
			if null && f.Required {
				// sbx reads null as absent; a required field must have a value.
				return &FieldError{Field: p.String(), Err: ErrRequired}
			}
			w.space()
			c := w.b[w.i]
			w.i++
			if c == '}' {
				break
			}
		}
	}
	if info != nil {
		// Missing required fields, the first by name.
		for _, name := range info.required {
			if !seen.has(name) {
				return &FieldError{Field: join(path.String(), name), Err: ErrRequired}
			}
		}
	}
	return nil
}

// structKeys are a struct type's JSON fields, and its required ones sorted.
type structKeys struct {
	fields   map[string]jsonField
	required []string
}

// structKeysCache maps a struct type to its *structKeys: the walk looks
// them up per object.
var structKeysCache sync.Map

func keysOf(t reflect.Type) *structKeys {
	if v, ok := structKeysCache.Load(t); ok {
		return v.(*structKeys)
	}
	k := &structKeys{fields: jsonFields(t)}
	for name, f := range k.fields {
		if f.Required {
			k.required = append(k.required, name)
		}
	}
	sort.Strings(k.required)
	v, _ := structKeysCache.LoadOrStore(t, k)
	return v.(*structKeys)
}

// caseVariant reports whether key differs from a field only in case, which
// encoding/json would match to the field.
func caseVariant(key string, fields map[string]jsonField) bool {
	for name := range fields {
		if strings.EqualFold(name, key) {
			return true
		}
	}
	return false
}

// unknownField is ErrUnknownField, with a hint when the key is a case
// variant of a field ("did you mean sandbox_mode?").
func unknownField(key string, fields map[string]jsonField) error {
	for name := range fields {
		if strings.EqualFold(name, key) {
			return fmt.Errorf("%w (did you mean %s?)", ErrUnknownField, name)
		}
	}
	return ErrUnknownField
}
