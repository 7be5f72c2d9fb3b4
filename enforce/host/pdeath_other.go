//go:build unix && !linux

package host

import "os"

// parentDeath has no kernel support outside Linux: sbx notices its parent's end
// only through the signals and closed pipes it gets.
func parentDeath() (<-chan os.Signal, func() bool, func()) { return nil, nil, func() {} }
