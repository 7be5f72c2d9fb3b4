//go:build !linux

package host

// Prestart does nothing here: only the Linux thread launch has namespaces
// worth making ahead of the plan.
func Prestart(netns bool) {}

// DiscardPrestart does nothing here (see Prestart).
func DiscardPrestart() {}
