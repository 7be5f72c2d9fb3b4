package escalate

import (
	"testing"

	"github.com/sbx-sandbox/sbx/internal/jsonfuzz"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// FuzzParseGuard: what a guard file may say is exact JSON: an accepted guard
// has no duplicate key and no case variant of a field, and re-decodes the
// same; ParseGuard never panics.
func FuzzParseGuard(f *testing.F) {
	for _, s := range []string{
		`{"deny_read":["/home/me/.ssh"],"deny_write":["/etc"],"deny_network":true}`,
		`{"deny_write":["/etc"],"deny_write":[]}`,
		`{"deny_network":true,"deny_network":false}`,
		`{"DENY_WRITE":["/etc"]}`,
		`{"deny_write":["etc"]}`,
		`{"deny_read":["**/.env","/home/*/.ssh"],"deny_write":["a/**b"]}`,
		`[{"deny_write":["/etc"]}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, perr := ParseGuard(data) // resolves paths: errors are fine
		var g Guard
		err := strictjson.Decode(data, &g)
		if err != nil {
			if perr == nil {
				t.Fatalf("ParseGuard accepted %q, which does not decode: %v", data, err)
			}
			return
		}
		jsonfuzz.Accepted(t, data, &g, strictjson.Decode)
	})
}

// FuzzParseAnswer: an approver's answer approves only when it is exactly
// {"outcome":"allowed-once"} (give or take whitespace and escapes): never
// through a duplicate, a case variant or trailing data.
func FuzzParseAnswer(f *testing.F) {
	for _, s := range []string{
		`{"outcome":"allowed-once"}`,
		`{"outcome":"denied","outcome":"allowed-once"}`,
		`{"OUTCOME":"allowed-once"}`,
		`{"Outcome":"allowed-once"}`,
		`{"outcome":"allowed-once"} {"outcome":"allowed-once"}`,
		`{"outcome":"allowed-once","scope":"session"}`,
		`{"outcome":"\u0061llowed-once"}`,
		`[{"outcome":"allowed-once"}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := parseAnswer(data)
		if err != nil {
			return
		}
		var ans commandAnswer
		if err := strictjson.Decode(data, &ans); err != nil {
			t.Fatalf("parseAnswer accepted %q, which does not decode: %v", data, err)
		}
		jsonfuzz.Accepted(t, data, &ans, strictjson.Decode)
		if o == AllowedOnce && jsonfuzz.Lost(data, []byte(`{"outcome":"allowed-once"}`)) != "" {
			t.Fatalf("%q approved, but it says more than the outcome", data)
		}
	})
}
