//go:build !unix

package steptrace

// cpuNow is 0 where the process's CPU clock is not read: the trace has
// wall times only.
func cpuNow() int64 { return 0 }
