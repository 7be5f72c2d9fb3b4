package wire

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/call"
)

// notRows are the request's top-level keys that are no row of call.Fields,
// each with the reason: they say how the call is fed, answered or shaped on
// the wire, not what it may do, so the CLI's flags, the retry and the
// approver's question have nothing to say of them.
var notRows = map[string]string{
	"preauthorized":    "the caller's own word on an escalation, read with escalate_to",
	"grants":           "permissions granted earlier in the turn or session (serve passes them)",
	"approver":         "the program asked to approve, not part of the call",
	"max_output_bytes": "how much output the result carries",
	"stream":           "whether output is streamed as events",
	"pty":              "the terminal the command runs on",
	"stdin":            "the command's input",
	"fs":               "a file-system change instead of a command (its own request, FSRequest)",
}

// TestRequestKeysAreRows: every key of Request is a row of call.Fields
// (the one request table: its flag, string rule, effect and retry), the
// parent of rows ("limits" of "limits.pids"), or one of notRows. Adding a
// field to Request fails here until it is a row (docs/extending.md).
func TestRequestKeysAreRows(t *testing.T) {
	rows := map[string]bool{}
	for _, f := range call.Fields {
		rows[f.Key] = true
		for k := f.Key; strings.Contains(k, "."); {
			k = k[:strings.LastIndex(k, ".")]
			rows[k] = true
		}
	}
	keys := map[string]bool{}
	rt := reflect.TypeOf(Request{})
	for i := 0; i < rt.NumField(); i++ {
		key := strings.Split(rt.Field(i).Tag.Get("json"), ",")[0]
		if key == "" || key == "-" {
			continue
		}
		keys[key] = true
		if _, ok := notRows[key]; !ok && !rows[key] {
			t.Errorf("Request's key %q is no row of call.Fields (internal/call/fields.go) and not in notRows", key)
		}
	}
	for k := range notRows {
		if !keys[k] {
			t.Errorf("notRows names %q, which Request no longer has", k)
		}
		if rows[k] {
			t.Errorf("notRows names %q, which is a row of call.Fields", k)
		}
	}
}
