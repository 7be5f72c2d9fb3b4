//go:build unix

package steptrace

import "golang.org/x/sys/unix"

// cpuNow is the CPU time of every thread of the process, in ns.
func cpuNow() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return ts.Nano()
}
