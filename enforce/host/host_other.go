//go:build !linux && !darwin && !windows

package host

import (
	"context"
	"runtime"

	"github.com/sbx-sandbox/sbx/enforce"
)

// ErrStart marks a failure of the exec itself.
var ErrStart = enforce.ErrNotSupported

// Run is not available on this platform yet: nothing runs unsandboxed.
func Run(ctx context.Context, c Call) (enforce.Report, error) {
	return enforce.Report{}, &enforce.UnsupportedFeatureError{Feature: "sandbox", Reason: "no backend for " + runtime.GOOS + " yet"}
}

// Doctor reports that this platform has no backend yet.
func Doctor() []Check {
	return []Check{{Feature: "sandbox", Detail: "no backend for " + runtime.GOOS + " yet", Fallback: "refuse to run"}}
}

// compiled is not available without a backend.
func compiled(c Call) (backendPlan, error) {
	return nil, &enforce.UnsupportedFeatureError{Feature: "sandbox", Reason: "no backend for " + runtime.GOOS + " yet"}
}
