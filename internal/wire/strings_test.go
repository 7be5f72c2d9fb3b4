package wire

import (
	"errors"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// TestDecodeStrings: an exec request's strings are exact (issue 27 §4): a
// NUL in a path, argv element, environment name or value, or id, invalid
// UTF-8 anywhere, and an empty path are refused naming the field; a NUL in
// content (fs.content, fs.patch, stdin) is data.
func TestDecodeStrings(t *testing.T) {
	tests := []struct {
		name, in, field string
		want            error
	}{
		{"cwd with a NUL", `{"command":["true"],"cwd":"/w\u0000/../../../OUT"}`, "cwd", strictjson.ErrNUL},
		{"argv with a NUL", `{"command":["touch","a\u0000b"],"cwd":"/w"}`, "command[1]", strictjson.ErrNUL},
		{"env name with a NUL", `{"command":["true"],"cwd":"/w","env":{"A\u0000":"1"}}`, `env["A\x00"]`, strictjson.ErrNUL},
		{"env value with a NUL", `{"command":["true"],"cwd":"/w","env":{"A":"1\u0000"}}`, "env.A", strictjson.ErrNUL},
		{"call_id with a NUL", `{"command":["true"],"cwd":"/w","call_id":"c\u0000"}`, "call_id", strictjson.ErrNUL},
		{"domain with a NUL", `{"command":["true"],"cwd":"/w","additional_permissions":{"network":{"enabled":true,"allowed_domains":["a.com\u0000.evil"]}}}`, "additional_permissions.network.allowed_domains[0]", strictjson.ErrNUL},
		{"grant path with a NUL", `{"command":["true"],"cwd":"/w","grants":{"session":{"file_system":{"write":["/w\u0000x"]}}}}`, "grants.session.file_system.write[0]", strictjson.ErrNUL},
		{"fs path with a NUL", `{"fs":{"op":"write","path":"a\u0000","content":""},"cwd":"/w"}`, "fs.path", strictjson.ErrNUL},
		{"invalid UTF-8 in argv", "{\"command\":[\"touch\",\"m53\xff\"],\"cwd\":\"/w\"}", "command[1]", strictjson.ErrInvalidUTF8},
		{"invalid UTF-8 in fs content", "{\"fs\":{\"op\":\"write\",\"path\":\"a\",\"content\":\"\xff\"},\"cwd\":\"/w\"}", "fs.content", strictjson.ErrInvalidUTF8},
		{"lone surrogate in a shell script", `{"shell":{"kind":"sh","script":"echo \udc00"},"cwd":"/w"}`, "shell.script", strictjson.ErrInvalidUTF8},
		{"empty writable root", `{"command":["true"],"cwd":"/w","writable_roots":[""]}`, "writable_roots[0]", strictjson.ErrEmptyPath},
		{"empty permission path", `{"command":["true"],"cwd":"/w","additional_permissions":{"file_system":{"read":[""]}}}`, "additional_permissions.file_system.read[0]", strictjson.ErrEmptyPath},
		{"NUL in fs content is data", `{"fs":{"op":"write","path":"a","content":"\u0000\u0001"},"cwd":"/w"}`, "", nil},
		{"NUL in stdin is data", `{"command":["cat"],"cwd":"/w","stdin":"a\u0000b"}`, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode([]byte(tt.in))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("%s: %v", tt.in, err)
				}
				return
			}
			var fe *strictjson.FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field || !errors.Is(err, tt.want) {
				t.Fatalf("%s: err %v, want %s: %v", tt.in, err, tt.field, tt.want)
			}
		})
	}
}

func TestDecodeStrict(t *testing.T) {
	var fe *strictjson.FieldError
	for _, in := range []string{`{"cwd": "/", "SANDBOX_MODE": "danger-full-access"}`, `{"cwd": "/", "cwd": "/etc"}`} {
		if _, err := Decode([]byte(in)); err == nil {
			t.Errorf("%s decoded", in)
		} else if !errors.As(err, &fe) && !strings.Contains(err.Error(), "duplicate") {
			t.Errorf("%s: %v does not name the field", in, err)
		}
	}
}
