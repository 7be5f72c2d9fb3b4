//go:build !linux

package sandbox

// onMainThread is true where no stage re-executes the program: only the
// Linux backend has one (host.StageMain refuses elsewhere).
func onMainThread() bool { return true }
