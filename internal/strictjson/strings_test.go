package strictjson

import (
	"encoding/json"
	"errors"
	"testing"
)

type kindTarget struct {
	Path    string            `json:"path" kind:"path"`
	Paths   []string          `json:"paths" kind:"path"`
	Token   string            `json:"token"`
	Argv    []string          `json:"argv"`
	Env     map[string]string `json:"env"`
	Data    *string           `json:"data" kind:"data"`
	Mode    *Mode             `json:"mode"`
	Any     any               `json:"any"`
	Inner   *kindTarget       `json:"inner"`
	Numbers []int             `json:"numbers"`
	Raw     json.RawMessage   `json:"raw"`
}

// TestStringKinds: every string of a strict decode is valid UTF-8 as written
// (encoding/json would replace what is not with U+FFFD), and obeys the rule
// of its field's kind: no NUL but in data, no empty path. The field is named.
func TestStringKinds(t *testing.T) {
	tests := []struct {
		name, in  string
		wantField string // "" for accepted
		wantErr   error
	}{
		{"plain", `{"path":"/w","token":"t","argv":["a",""],"env":{"A":""},"data":"x"}`, "", nil},
		{"NUL in a path", `{"path":"WS\u0000/../../../OUT"}`, "path", ErrNUL},
		{"NUL in an argv element", `{"argv":["ok","a\u0000b"]}`, "argv[1]", ErrNUL},
		{"NUL in an env value", `{"env":{"A":"\u0000"}}`, "env.A", ErrNUL},
		{"NUL in an env name", `{"env":{"A\u0000B":"1"}}`, `env["A\x00B"]`, ErrNUL},
		{"NUL in a token", `{"token":"\u0000"}`, "token", ErrNUL},
		{"NUL in a text value", `{"mode":"read-only\u0000"}`, "mode", ErrNUL},
		{"NUL in a nested path", `{"inner":{"paths":["/a","\u0000"]}}`, "inner.paths[1]", ErrNUL},
		{"NUL in data is data", `{"data":"a\u0000b"}`, "", nil},
		{"an escaped backslash then u0000 is no NUL", `{"path":"a\\u0000"}`, "", nil},
		{"empty path field is unset, as Go writes it", `{"path":""}`, "", nil},
		{"empty path in a list", `{"paths":["/a",""]}`, "paths[1]", ErrEmptyPath},
		{"empty token is the field's business", `{"token":""}`, "", nil},
		{"invalid UTF-8 in an argv element", "{\"argv\":[\"m53\xff\"]}", "argv[0]", ErrInvalidUTF8},
		{"invalid UTF-8 in data", "{\"data\":\"\xc3\"}", "data", ErrInvalidUTF8},
		{"invalid UTF-8 under any type", "{\"any\":{\"x\":[\"\xed\xa0\x80\"]}}", "any.x[0]", ErrInvalidUTF8},
		{"invalid UTF-8 in a map key", "{\"env\":{\"\xff\":\"1\"}}", `env["\ufffd"]`, ErrInvalidUTF8},
		{"lone high surrogate", `{"token":"\ud800"}`, "token", ErrInvalidUTF8},
		{"lone low surrogate", `{"token":"a\udc00"}`, "token", ErrInvalidUTF8},
		{"high surrogate then no low one", `{"token":"\ud800\u0041"}`, "token", ErrInvalidUTF8},
		{"a surrogate pair", `{"token":"\ud83d\ude00"}`, "", nil},
		{"U+FFFD spelled out", `{"token":"\ufffd�"}`, "", nil},
		{"NUL under any type is its decoder's", `{"any":"\u0000"}`, "", nil},
		{"a raw message is its own decoder's", "{\"raw\":{\"a\":[\"\xff\\u0000\"]}}", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v kindTarget
			err := Decode([]byte(tt.in), &v)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("%s: %v", tt.in, err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tt.wantField || !errors.Is(err, tt.wantErr) {
				t.Fatalf("%s: err %v, want %s: %v", tt.in, err, tt.wantField, tt.wantErr)
			}
		})
	}
}

func TestCheckString(t *testing.T) {
	for _, tt := range []struct {
		kind StringKind
		s    string
		want error
	}{
		{KindPath, "", ErrEmptyPath}, {KindPath, "a\x00", ErrNUL}, {KindPath, "/a", nil},
		{KindToken, "", nil}, {KindToken, "\x00", ErrNUL}, {KindData, "\x00", nil},
		{KindPath, "\xff", nil}, // a CLI argument passes as its bytes
	} {
		if err := CheckString(tt.kind, tt.s); !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
			t.Errorf("CheckString(%q, %q) = %v, want %v", tt.kind, tt.s, err, tt.want)
		}
	}
}
