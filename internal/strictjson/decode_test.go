package strictjson

import (
	"errors"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/enum"
)

// strictInner and strictTarget cover the shapes the wire types use: nested
// structs, pointers, arrays of objects, maps, an embedded struct, text
// types (Mode), a required field and a field of any JSON.
type strictInner struct {
	Name  string `json:"name"`
	Flag  bool   `json:"flag" strict:"required"`
	Extra any    `json:"extra"`
}

type strictEmbedded struct {
	Promoted string `json:"promoted"`
}

// Mode stands in for profiles.Mode, which this package cannot import (profiles
// imports it): a text type with the same names and errors, from the same
// enum table shape.
type Mode int

var modeNames = enum.Names[Mode]{Type: "Mode", What: "sandbox mode", Names: []string{"read-only", "workspace-write", "danger-full-access"}}

func (m Mode) MarshalText() ([]byte, error)  { return modeNames.Marshal(m) }
func (m *Mode) UnmarshalText(b []byte) error { return modeNames.Unmarshal(m, b) }

type strictTarget struct {
	strictEmbedded
	Mode  *Mode             `json:"sandbox_mode"`
	Items []strictInner     `json:"items"`
	Inner *strictInner      `json:"inner"`
	Env   map[string]string `json:"env"`
	Lists [][]string        `json:"lists"`
}

func TestDecodeStrictExactKeys(t *testing.T) {
	tests := []struct {
		name, in string
		want     string // "" = accepted
		is       error
	}{
		{"exact keys", `{"sandbox_mode":"read-only","items":[{"flag":true}],"env":{"A":"1","a":"2"},"promoted":"x"}`, "", nil},
		{"escaped key is the same key", `{"\u0073andbox_mode":"read-only"}`, "", nil},
		{"top-level case variant", `{"SANDBOX_MODE":"danger-full-access"}`, "SANDBOX_MODE: unknown field (did you mean sandbox_mode?)", ErrUnknownField},
		{"top-level duplicate", `{"sandbox_mode":"read-only","sandbox_mode":"danger-full-access"}`, "sandbox_mode: duplicate key", ErrDuplicateKey},
		{"duplicate by escape", `{"sandbox_mode":"read-only","\u0073andbox_mode":"danger-full-access"}`, "sandbox_mode: duplicate key", ErrDuplicateKey},
		{"duplicate of a case variant", `{"sandbox_mode":"read-only","Sandbox_Mode":"danger-full-access"}`, "Sandbox_Mode: unknown field (did you mean sandbox_mode?)", ErrUnknownField},
		{"duplicate in a nested object", `{"inner":{"flag":true,"name":"a","name":"b"}}`, "inner.name: duplicate key", ErrDuplicateKey},
		{"case variant in a nested object", `{"inner":{"flag":true,"NAME":"a"}}`, "inner.NAME: unknown field (did you mean name?)", ErrUnknownField},
		{"duplicate in an object in an array", `{"items":[{"flag":true},{"flag":true,"flag":false}]}`, "items[1].flag: duplicate key", ErrDuplicateKey},
		{"case variant in an object in an array", `{"items":[{"Flag":true}]}`, "items[0].Flag: unknown field (did you mean flag?)", ErrUnknownField},
		{"duplicate map key", `{"env":{"PATH":"/bin","PATH":"/tmp"}}`, "env.PATH: duplicate key", ErrDuplicateKey},
		{"duplicate inside any", `{"inner":{"flag":true,"extra":{"a":[{"b":1,"b":2}]}}}`, "inner.extra.a[0].b: duplicate key", ErrDuplicateKey},
		{"duplicate promoted field", `{"promoted":"a","promoted":"b"}`, "promoted: duplicate key", ErrDuplicateKey},
		{"duplicate in an object where an array belongs", `{"lists":{"a":1,"a":2}}`, "lists.a: duplicate key", ErrDuplicateKey},
		{"unknown field", `{"inner":{"flag":true,"wirte":1}}`, "inner.wirte: unknown field", ErrUnknownField},
		{"required field missing", `{"inner":{"name":"a"}}`, "inner.flag: required", ErrRequired},
		{"required field null", `{"items":[{"flag":null}]}`, "items[0].flag: required", ErrRequired},
		{"top-level array", `[{"sandbox_mode":"read-only"}]`, "expected a JSON object, got JSON array", nil},
		{"top-level string", `"x"`, "expected a JSON object, got JSON string", nil},
		{"top-level null", `null`, "expected a JSON object, got JSON null", nil},
		{"wrong type names the JSON type", `{"items":{}}`, "items: expected an array of objects, got JSON object", nil},
		{"text type", `{"sandbox_mode":1}`, "sandbox_mode: expected a string, got JSON number", nil},
		{"map of strings", `{"env":[]}`, "env: expected an object of strings, got JSON array", nil},
		{"array of arrays", `{"lists":"x"}`, "lists: expected an array of arrays of strings, got JSON string", nil},
		{"unknown mode", `{"sandbox_mode":"writable"}`, `sandbox_mode: unknown sandbox mode "writable"`, nil},
		{"trailing data", `{} {}`, "trailing data after the JSON value", nil},
		{"malformed", `{"inner":}`, "malformed JSON at byte 10", nil},
		{"truncated", `{"inner":{`, "malformed JSON: unexpected end of input", nil},
		{"empty", ``, "empty input: expected a JSON object", nil},
		{"too deep", `{"inner":{"flag":true,"extra":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}}`, "malformed JSON", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v strictTarget
			err := Decode([]byte(tt.in), &v)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("err = %v, want none", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("err = %v, want it to match %v", err, tt.is)
			}
		})
	}
}
