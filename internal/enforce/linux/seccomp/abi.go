//go:build linux

package seccomp

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// This file names the syscalls of a foreign ABI the filter's prologue
// refuses (CompileSeccomp): an i386 syscall (int $0x80) or an x32 one (nr
// with the x32 bit) on amd64. Every number of the rule table would mean
// another syscall under them, so no rule applies: with a supervisor the
// prologue sends them there, and each is refused with ENOSYS (what a kernel
// without that ABI answers) and named in a denial; without one the kernel
// kills the process, and the launcher infers the cause from the death.

// foreignABIRet is what the prologue returns for a foreign ABI's syscall:
// USER_NOTIF when the table has notify rules (the program is loaded with a
// listener, and a plan without one loads the table without them), else
// KILL_PROCESS. The supervisor never lets such a call continue (it refuses
// every call ForeignABI names), so routing it there widens nothing.
func foreignABIRet(rules []SeccompRule) uint32 {
	for _, r := range rules {
		if r.Action == ActNotify {
			return retUnotify
		}
	}
	return retKill
}

// ForeignABI reports whether a notification is a foreign ABI's syscall, and
// names its ABI and syscall: "i386", "x32", or "arch 0x..." for an arch the
// kernel offers that is neither.
func ForeignABI(arch uint32, nr int32) (abi, name string, foreign bool) {
	native, err := nativeSeccompArch()
	if err != nil {
		return "", "", false
	}
	switch {
	case arch == unix.AUDIT_ARCH_I386:
		return "i386", abiSyscallName(i386Names, uint32(nr)), true
	case arch != native.audit:
		return fmt.Sprintf("arch %#x", arch), fmt.Sprintf("syscall %d", nr), true
	case native.x32Bit != 0 && uint32(nr)&native.x32Bit != 0:
		return "x32", abiSyscallName(x32Names, uint32(nr)&^native.x32Bit), true
	}
	return "", "", false
}

// NativeABIName is the name of the one ABI the table is written for
// ("x86_64"), or "unknown" on an architecture without a table.
func NativeABIName() string {
	if a, err := nativeSeccompArch(); err == nil {
		return a.name
	}
	return "unknown"
}

// The name tables of abinames_*.go, parsed once.
var (
	x32Names  = lazyNames(x32SyscallNames)
	i386Names = lazyNames(i386SyscallNames)
)

func lazyNames(table string) func() map[uint32]string {
	return sync.OnceValue(func() map[uint32]string {
		m := map[uint32]string{}
		for _, f := range strings.Fields(table) {
			num, name, ok := strings.Cut(f, ":")
			if n, err := strconv.ParseUint(num, 10, 32); ok && err == nil {
				m[uint32(n)] = name
			}
		}
		return m
	})
}

func abiSyscallName(names func() map[uint32]string, nr uint32) string {
	if name, ok := names()[nr]; ok {
		return name
	}
	return fmt.Sprintf("syscall %d", nr)
}
