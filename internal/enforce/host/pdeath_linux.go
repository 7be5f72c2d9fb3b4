package host

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// parentDeathSignal is a real-time signal nothing else sends sbx, so its
// arrival means "the thread that started sbx ended" and nothing else.
const parentDeathSignal = syscall.Signal(40)

// parentDeath asks the kernel for parentDeathSignal, which c receives,
// when sbx's parent ends. The kernel sends it when the *thread* that
// forked sbx exits, which in a multi-threaded runtime need not be the
// process's end: parentGone tells the two apart by the parent pid.
//
// With c nil (no Notifier installed: nothing would catch the signal, whose
// default action ends sbx) it asks for nothing.
func parentDeath(c chan os.Signal) (<-chan os.Signal, func() bool, func()) {
	if c == nil {
		return nil, nil, func() {}
	}
	ppid := os.Getppid()
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(parentDeathSignal), 0, 0, 0); err != nil {
		return nil, nil, func() {}
	}
	gone := func() bool { return os.Getppid() != ppid }
	return c, gone, func() { unix.Prctl(unix.PR_SET_PDEATHSIG, 0, 0, 0, 0) }
}
