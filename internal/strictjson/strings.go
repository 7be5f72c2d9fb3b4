package strictjson

import (
	"errors"
	"reflect"
	"unicode/utf8"
)

// Strings are exact (DESIGN.md invariant 9). encoding/json decodes invalid
// UTF-8, and a lone UTF-16 surrogate escape, as U+FFFD, so `touch m53\xff`
// would run as `touch m53\uFFFD`; and Go keeps a NUL byte that the C string
// a gateway reads ends at, so "WS\u0000/../../../OUT" is WS to the gateway
// and OUT to sbx. Decode refuses both before the typed decode, and an
// empty path, which would otherwise resolve to sbx's own directory: each
// string is checked by the rule of its kind, named in its field's tag.

// StringKind is what a request string becomes, declared on the struct field
// with a `kind:"..."` tag (untagged: KindToken). Each kind has one check
// (CheckString); a later request-field table carries the same kinds.
type StringKind string

const (
	// KindToken is an argv element, an environment name or value, a
	// domain, an id, a mode: a C string to whatever reads it, so no NUL.
	KindToken StringKind = ""
	// KindPath is a path: no NUL, and not empty ("" would resolve to the
	// current directory of whoever reads it).
	KindPath StringKind = "path"
	// KindData is content passed through as bytes (a file's content, a
	// patch, stdin): NUL is data there.
	KindData StringKind = "data"
)

// kindDeferred marks the strings of a value decoded by its own
// UnmarshalJSON (a json.RawMessage: JSON-RPC params, a recorded request):
// their decode, strict again, checks them with their fields' kinds and
// names them from there (invalid_params rather than an invalid message).
const kindDeferred StringKind = "\x00deferred"

func deferredTo(t reflect.Type) bool {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t != nil && reflect.PointerTo(t).Implements(jsonUnmarshaler)
}

// The errors of a string refused by its kind's rule, and of one encoding/json
// would change; Decode wraps them in a *FieldError naming the field.
var (
	ErrNUL         = errors.New("contains a NUL byte")
	ErrInvalidUTF8 = errors.New("is not valid UTF-8 (it would be changed to U+FFFD)")
	ErrEmptyPath   = errors.New("empty path")
)

// CheckString is the rule of kind for s: the one check for a string of
// that kind, whichever front end (JSON, a CLI flag) it came through. UTF-8
// is JSON's rule, checked for every string of a request (checkRawString):
// a CLI argument is passed on as the bytes it is.
func CheckString(kind StringKind, s string) error {
	return checkKind(kind, len(s) == 0, containsNUL(s))
}

func checkKind(kind StringKind, empty, nul bool) error {
	switch {
	case kind == KindPath && empty:
		return ErrEmptyPath
	case kind != KindData && nul:
		return ErrNUL
	}
	return nil
}

func containsNUL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return true
		}
	}
	return false
}

// checkRawString applies CheckString to a JSON string as it is written
// (quotes included, well-formed JSON), without decoding it: invalid UTF-8
// and lone surrogate escapes are refused for every string; the kind's rule
// applies when t is a type sbx decodes the string into as text (a string,
// or a type that parses text), not under an interface or a raw message,
// whose own decode checks it later (nor under a type with its own
// UnmarshalJSON: kindDeferred). An empty path is refused where it
// cannot mean "absent" (element: an array's element, a map's key): a
// struct's string field reads "" as unset, as Go writes it, and the field's
// own check decides (cwd is required).
func checkRawString(raw []byte, t reflect.Type, kind StringKind, element bool) error {
	if kind == kindDeferred {
		return nil
	}
	nul, ok := scanRawString(raw[1 : len(raw)-1])
	if !ok {
		return ErrInvalidUTF8
	}
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || (t.Kind() != reflect.String && !reflect.PointerTo(t).Implements(textUnmarshaler)) {
		return nil
	}
	return checkKind(kind, element && len(raw) == 2, nul)
}

func (w *keyWalk) checkString(raw []byte, t reflect.Type, kind StringKind, element bool) error {
	if w.kc.keysOnly {
		return nil
	}
	return checkRawString(raw, t, kind, element)
}

// scanRawString reads the text between a JSON string's quotes: nul when it
// decodes to a NUL byte (only \u0000 can: JSON has no raw control bytes),
// ok when it is valid UTF-8 and every \u escape is a character (a high
// surrogate followed by a low one, or no surrogate).
func scanRawString(b []byte) (nul, ok bool) {
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == '\\':
			if b[i+1] != 'u' {
				i += 2
				continue
			}
			r := hex4(b[i+2 : i+6])
			i += 6
			switch {
			case r == 0:
				nul = true
			case r >= 0xDC00 && r <= 0xDFFF:
				return nul, false // a low surrogate alone
			case r >= 0xD800 && r <= 0xDBFF:
				if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
					return nul, false
				}
				if lo := hex4(b[i+2 : i+6]); lo < 0xDC00 || lo > 0xDFFF {
					return nul, false
				}
				i += 6
			}
		case c < utf8.RuneSelf:
			i++
		default:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n <= 1 {
				return nul, false
			}
			i += n
		}
	}
	return nul, true
}

// hex4 is the value of four hex digits (well-formed JSON: they are).
func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}
