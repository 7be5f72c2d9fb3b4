//go:build !linux && !darwin && !windows

package host

import "os"

// IsTerminal reports whether f is a terminal; without a backend for this
// platform it always says no.
func IsTerminal(f *os.File) bool { return false }
