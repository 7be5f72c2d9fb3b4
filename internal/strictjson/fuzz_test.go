package strictjson

import (
	"testing"

	"github.com/sbx-sandbox/sbx/internal/jsonfuzz"
)

// strictSeeds are the escapes of issue #13 and shapes around them: case
// variants and duplicates at every depth, and exact input that must pass.
var strictSeeds = []string{
	`{"SANDBOX_MODE":"danger-full-access"}`,
	`{"sandbox_mode":"read-only","sandbox_mode":"danger-full-access"}`,
	`{"sandbox_mode":"read-only","\u0073andbox_mode":"danger-full-access"}`,
	`{"items":[{"flag":true},{"flag":true,"flag":false}]}`,
	`{"items":[{"Flag":true}]}`,
	`{"env":{"PATH":"/bin","PATH":"/tmp"}}`,
	`{"inner":{"flag":true,"extra":{"a":[{"b":1,"b":2}]}}}`,
	`{"sandbox_mode":"read-only","items":[{"flag":true,"name":"x"}],"env":{"A":"1","a":"2"},"promoted":"x","lists":[["a"]]}`,
	`[{"sandbox_mode":"read-only"}]`,
	`null`,
	`{"inner":{"name":"a"}}`,
}

// FuzzDecodeStrict: whatever Decode accepts has no duplicate key, no
// key folded onto a field, and re-decodes to the same value; nothing panics.
func FuzzDecodeStrict(f *testing.F) {
	for _, s := range strictSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v strictTarget
		if Decode(data, &v) == nil {
			jsonfuzz.Accepted(t, data, &v, Decode)
		}
	})
}
