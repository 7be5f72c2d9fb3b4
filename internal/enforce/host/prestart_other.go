//go:build !linux

package host

import "os"

// Prestart does nothing here: only the Linux launches have namespaces (or
// a stage) worth making ahead of the plan.
func Prestart(netns bool, stdio [3]*os.File) {}

// DiscardPrestart does nothing here (see Prestart).
func DiscardPrestart() {}

// Resident does nothing here (see Prestart).
func Resident() {}
