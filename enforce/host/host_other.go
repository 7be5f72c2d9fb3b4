//go:build !linux

package host

import (
	"context"
	"runtime"

	"sbx/enforce"
)

// ErrStart marks a failure of the exec itself.
var ErrStart = enforce.ErrNotSupported

// Run is not available on this platform yet: nothing runs unsandboxed.
func Run(ctx context.Context, c Call) (enforce.Report, error) {
	return enforce.Report{}, &enforce.UnsupportedFeatureError{Feature: "sandbox", Reason: "no backend for " + runtime.GOOS + " yet"}
}

// StageCommand is the hidden subcommand that runs StageMain.
const StageCommand = "__stage"

// StageMain has nothing to do on this platform.
func StageMain() int { return 125 }
