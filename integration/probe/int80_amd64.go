//go:build linux

package main

import (
	"runtime/debug"
	"syscall"
)

func int80Getpid() int32

// int80 runs getpid through the i386 syscall ABI. The kernel returns the pid
// (truncated to 32 bits) when IA32 emulation is on and nothing filters it.
// Without IA32 emulation (CONFIG_IA32_EMULATION=n, ia32_emulation=0) the
// instruction raises a general-protection SIGSEGV (si_code SI_KERNEL), which
// the Go runtime would turn into a fatal "unexpected fault address" (exit 2);
// SetPanicOnFault makes it a recoverable panic, so the probe can say
// "SIGSEGV" in its JSON like every other outcome. A sandbox filter that
// refuses the foreign architecture kills the process with SIGSYS before the
// kernel gets that far, so it is never mistaken for this.
func int80() (r result) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if recover() != nil {
			r = fail("int80", "SIGSEGV", "int $0x80 faulted: the kernel has no IA32 syscall emulation")
		}
	}()
	n := int80Getpid()
	if n < 0 {
		return fail("int80", errnoName(-int(n)), "int $0x80 getpid returned an error")
	}
	return result{Op: "int80", OK: true, Detail: "int $0x80 getpid returned " + itoa(int(n))}
}

// x32 runs getpid with the x32 syscall number (the x32 bit set): the same
// instruction as a native syscall, so it works on every amd64 kernel; one
// without x32 support answers ENOSYS, a filter that refuses the ABI kills
// the process or (sbx's supervisor) answers ENOSYS and reports it.
func x32() result {
	const x32Bit = 0x40000000
	r1, _, errno := syscall.RawSyscall(x32Bit|syscall.SYS_GETPID, 0, 0, 0)
	if errno != 0 {
		return fail("x32", errnoName(int(errno)), "x32 getpid returned an error")
	}
	return result{Op: "x32", OK: true, Detail: "x32 getpid returned " + itoa(int(r1))}
}
