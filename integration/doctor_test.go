//go:build linux

package integration

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestDoctorLandlock: `sbx doctor --json` opens with its Landlock lines,
// one per ABI that adds something sbx uses (internal/landlock's table), in
// ABI order, each available exactly when this kernel's ABI has it; and no
// feature is listed twice.
func TestDoctorLandlock(t *testing.T) {
	c := caps(t)
	out := sbx(t, opts{args: []string{"doctor", "--json"}})
	if out.code != 0 {
		t.Fatalf("sbx doctor --json: exit %d\nstderr: %s", out.code, out.stderr)
	}
	var doc struct {
		Checks []struct {
			Feature   string `json:"feature"`
			Available bool   `json:"available"`
			Detail    string `json:"detail"`
		} `json:"checks"`
	}
	if err := json.Unmarshal([]byte(out.stdout), &doc); err != nil {
		t.Fatalf("sbx doctor --json: %v\n%s", err, out.stdout)
	}
	want := []struct {
		feature string
		abi     int
	}{
		{"landlock", 1}, {"landlock-refer", 2}, {"landlock-truncate", 3}, {"landlock-net", 4},
		{"landlock-ioctl-dev", 5}, {"landlock-scope", 6}, {"landlock-audit", 7}, {"landlock-resolve-unix", 9},
	}
	if len(doc.Checks) <= len(want) {
		t.Fatalf("%d checks, want more than %d: %s", len(doc.Checks), len(want), out.stdout)
	}
	for i, w := range want {
		got := doc.Checks[i]
		if got.Feature != w.feature || got.Available != (c.abi >= w.abi) {
			t.Errorf("check %d: %s available %t, want %s available %t (kernel ABI %d)", i, got.Feature, got.Available, w.feature, c.abi >= w.abi, c.abi)
		}
		if i > 0 && !strings.HasPrefix(got.Detail, fmt.Sprintf("needs ABI %d: ", w.abi)) {
			t.Errorf("check %s: detail %q", got.Feature, got.Detail)
		}
	}
	seen := map[string]bool{}
	for _, ch := range doc.Checks {
		if seen[ch.Feature] {
			t.Errorf("%s listed twice", ch.Feature)
		}
		seen[ch.Feature] = true
	}
}
