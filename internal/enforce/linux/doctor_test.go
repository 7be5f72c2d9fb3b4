//go:build linux

package linux

import (
	"fmt"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/report"
)

// TestLandlockChecks: doctor's lines for the later Landlock ABIs, derived
// from the table, are those it wrote out by hand before it (issue 32), in
// the same order; a kernel has each from its ABI on.
func TestLandlockChecks(t *testing.T) {
	want := []struct {
		feature report.Feature
		abi     int
		detail  string
	}{
		{report.FeatureLandlockRefer, 2, "rename/link across directories inside writable roots"},
		{report.FeatureLandlockTruncate, 3, "truncate restricted to writable roots"},
		{report.FeatureLandlockNet, 4, "TCP bind/connect rules (used when no network namespace can be made)"},
		{report.FeatureLandlockIoctlDev, 5, "device ioctls restricted to the terminal and /dev/null"},
		{report.FeatureLandlockScope, 6, "signals and abstract unix sockets scoped to the sandbox"},
		{report.FeatureLandlockAudit, 7, "denials logged to the audit subsystem"},
		{report.FeatureLandlockResolveUnix, 9, "with the network off, pathname unix sockets outside writable roots unreachable"},
	}
	for _, abi := range []int{0, 1, 6, 7, 9, 12} {
		got := landlockChecks(abi)
		if len(got) != len(want) {
			t.Fatalf("ABI %d: %d lines, want %d: %+v", abi, len(got), len(want), got)
		}
		for i, w := range want {
			wc := report.Check{Feature: w.feature, Available: abi >= w.abi, Detail: fmt.Sprintf("needs ABI %d: %s", w.abi, w.detail), Fallback: "reported as degraded"}
			if got[i] != wc {
				t.Errorf("ABI %d line %d: %+v, want %+v", abi, i, got[i], wc)
			}
		}
	}
	// The literal spellings doctor printed (sbx doctor --json's "feature").
	for i, name := range []string{"landlock-refer", "landlock-truncate", "landlock-net", "landlock-ioctl-dev", "landlock-scope", "landlock-audit", "landlock-resolve-unix"} {
		if string(want[i].feature) != name {
			t.Errorf("line %d: feature %q, doctor printed %q", i, want[i].feature, name)
		}
	}
}
