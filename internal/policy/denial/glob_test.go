package denial

import (
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/policy"
)

// TestCheckerDenyGlobs: a name matching a deny pattern may not be made,
// written or renamed to; a deny_read one not read either; the verdict
// names the pattern. Existing matches that are carve-outs keep their
// cause (the mount's errno).
func TestCheckerDenyGlobs(t *testing.T) {
	pol := testPolicy()
	pol.CarveOuts = append(pol.CarveOuts, "/w/sub/.env")
	pol.DenyGlobs = []policy.DenyGlob{
		{Pattern: "/w/**/.env", Given: "**/.env", Access: policy.DenyWrite},
		{Pattern: "/w/**/*.pem", Given: "**/*.pem", Access: policy.DenyRead},
	}
	c := NewChecker(pol, Extra{})
	tests := []struct {
		name   string
		access Access
		path   string
		cause  Cause
		reason string
	}{
		{"create a match", Create, "/w/other/.env", DenyGlob, "deny_write pattern **/.env"},
		{"rename to a match", RenameTo, "/w/.env", DenyGlob, "deny_write pattern **/.env"},
		{"write a match made during the call", WriteObject, "/w/new/.env", DenyGlob, "**/.env"},
		{"read a deny_write match", Read, "/w/new/.env", NoCause, ""},
		{"read a deny_read match", Read, "/w/k.pem", DenyGlob, "deny_read pattern **/*.pem"},
		{"create inside a matching directory", Create, "/w/d.pem/x", DenyGlob, "**/*.pem"},
		{"an existing match keeps its carve-out", WriteObject, "/w/sub/.env", CarveOut, "/w/sub/.env"},
		{"a neighbour", Create, "/w/other/env", NoCause, ""},
		{"outside the anchor", Create, "/tmp/.env", NoCause, ""},
	}
	for _, tt := range tests {
		v := c.Path(tt.access, tt.path)
		if v.Cause != tt.cause || !strings.Contains(v.Reason(), tt.reason) || v.Allowed != (tt.cause == NoCause) {
			t.Errorf("%s: %+v (%s), want %v containing %q", tt.name, v, v.Reason(), tt.cause, tt.reason)
		}
	}
}
