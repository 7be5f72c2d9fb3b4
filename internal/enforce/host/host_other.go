//go:build !linux && !darwin && !windows

package host

import (
	"runtime"

	"github.com/sbx-sandbox/sbx/internal/report"
)

// ErrStart marks a failure of the exec itself.
var ErrStart = report.ErrNotSupported

// execFailureStatus is never needed here: nothing starts.
func execFailureStatus(err error) int { return 126 }

// newBackend refuses: there is no backend for this platform yet, and
// nothing runs unsandboxed.
func newBackend(c Call) (backend, error) {
	return nil, &report.UnsupportedFeatureError{Feature: report.FeatureSandbox, Reason: "no backend for " + runtime.GOOS + " yet"}
}

// Doctor reports that this platform has no backend yet.
func Doctor() []report.Check {
	return []report.Check{{Feature: report.FeatureSandbox, Detail: "no backend for " + runtime.GOOS + " yet", Fallback: "refuse to run"}}
}

// compiled is not available without a backend.
func compiled(c Call) (backendPlan, error) {
	return nil, &report.UnsupportedFeatureError{Feature: report.FeatureSandbox, Reason: "no backend for " + runtime.GOOS + " yet"}
}
