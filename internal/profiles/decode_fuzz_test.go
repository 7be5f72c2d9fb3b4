package profiles

import (
	"testing"

	"github.com/sbx-sandbox/sbx/internal/jsonfuzz"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

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
		jsonfuzz.Accepted(t, data, &p, strictjson.Decode)
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
		if err := strictjson.Decode(data, &w); err != nil {
			t.Fatalf("DecodeNormalizeRequest accepted %q, strictjson.Decode refuses it: %v", data, err)
		}
		jsonfuzz.Accepted(t, data, &w, strictjson.Decode)
	})
}
