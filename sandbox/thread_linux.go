package sandbox

import (
	"os"
	"syscall"
)

// onMainThread says the calling thread is the thread group leader.
func onMainThread() bool { return syscall.Gettid() == os.Getpid() }
