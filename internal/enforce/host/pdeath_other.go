//go:build unix && !linux

package host

import (
	"os"
	"syscall"
)

// parentDeathSignal is none: without kernel support outside Linux, sbx
// notices its parent's end only through the signals and closed pipes it gets.
const parentDeathSignal = syscall.Signal(0)

func parentDeath(chan os.Signal) (<-chan os.Signal, func() bool, func()) {
	return nil, nil, func() {}
}
