package profiles

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

// FuzzDecodeStrict: whatever DecodeStrict accepts has no duplicate key, no
// key folded onto a field, and re-decodes to the same value; nothing panics.
func FuzzDecodeStrict(f *testing.F) {
	for _, s := range strictSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v strictTarget
		if DecodeStrict(data, &v) == nil {
			jsonfuzz.Accepted(t, data, &v, DecodeStrict)
		}
	})
}

// FuzzDecodeProfile: the same invariants for a permission profile, which
// also normalises without panicking.
func FuzzDecodeProfile(f *testing.F) {
	for _, s := range []string{
		`{"network":{"enabled":true},"file_system":{"read":["a"],"write":["/b"]}}`,
		`{"network":{}}`,
		`{"network":{"enabled":false,"enabled":true}}`,
		`{"NETWORK":{"enabled":true}}`,
		`{"file_system":{"Write":["/"]}}`,
		`{"file_system":{"write":[],"write":["/"]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := DecodeProfile(data)
		if err != nil {
			return
		}
		jsonfuzz.Accepted(t, data, &p, DecodeStrict)
		p.Normalize("/sbx-fuzz") // errors are fine; a panic is not
	})
}

// FuzzDecodeNormalizeRequest: the same invariants for a request of sbx
// normalize-grant.
func FuzzDecodeNormalizeRequest(f *testing.F) {
	for _, s := range []string{
		`{"cwd":"/x","requested":{"network":{"enabled":true}},"granted":{"network":{"enabled":true}},"scope":"session","strict_auto_review":true}`,
		`{"cwd":"/x","scope":"turn","scope":"session"}`,
		`{"cwd":"/x","Granted":{"network":{"enabled":true}}}`,
		`{"cwd":"/x","granted":{"network":{"enabled":false,"enabled":true}}}`,
		`{"cwd":"/x","requested":{"network":{}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := DecodeNormalizeRequest(data); err != nil {
			return
		}
		var w normalizeWire
		if err := DecodeStrict(data, &w); err != nil {
			t.Fatalf("DecodeNormalizeRequest accepted %q, DecodeStrict refuses it: %v", data, err)
		}
		jsonfuzz.Accepted(t, data, &w, DecodeStrict)
	})
}
