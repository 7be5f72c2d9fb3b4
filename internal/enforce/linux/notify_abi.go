//go:build linux

package linux

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/report"
)

// This file reports the syscalls of a foreign ABI the filter's prologue
// refuses (CompileSeccomp): an i386 syscall (int $0x80) or an x32 one (nr
// with the x32 bit) on amd64. Every number of the rule table would mean
// another syscall under them, so no rule applies: with a supervisor the
// prologue sends them here, and each is refused with ENOSYS (what a kernel
// without that ABI answers) and named in a denial; without one the kernel
// kills the process, and SigsysDenial infers the cause from the death.

// SeccompSource is the Source of a denial inferred from the filter's own
// verdict (a SIGSYS death), with no supervisor to observe the call.
const SeccompSource = "seccomp-filter"

// foreignABIRet is what the prologue returns for a foreign ABI's syscall:
// USER_NOTIF when the table has notify rules (the program is loaded with a
// listener, and a plan without one loads the table without them), else
// KILL_PROCESS. The supervisor never lets such a call continue
// (supervisor.refuseForeignABI), so routing it there widens nothing.
func foreignABIRet(rules []SeccompRule) uint32 {
	for _, r := range rules {
		if r.Action == ActNotify {
			return retUnotify
		}
	}
	return retKill
}

// foreignABI reports whether a notification is a foreign ABI's syscall, and
// names its ABI and syscall: "i386", "x32", or "arch 0x..." for an arch the
// kernel offers that is neither.
func foreignABI(arch uint32, nr int32) (abi, name string, foreign bool) {
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

// refuseForeignABI refuses a foreign ABI's syscall with ENOSYS: the
// supervisor has no decoder for another ABI's numbers and arguments, so it
// fails closed, and the denial says which syscall and ABI it was.
func (s *supervisor) refuseForeignABI(n *seccompNotif, abi, name string) decision {
	return decision{errno: unix.ENOSYS, denials: []report.Denial{{
		Operation: "syscall", Syscall: name, PID: int(n.PID),
		Source: SupervisorSource, Confidence: Observed, Count: 1,
		Reason: fmt.Sprintf("a syscall of the %s ABI (number %#x): the seccomp filter refuses every syscall of an ABI other than the native one (%s), whose rules would not apply, with ENOSYS", abi, uint32(n.Data.Nr), nativeABIName()),
	}}}
}

func nativeABIName() string {
	if a, err := nativeSeccompArch(); err == nil {
		return a.name
	}
	return "unknown"
}

// SigsysDenial is the denial inferred from a command killed by SIGSYS
// under a plan whose filter kills (a foreign ABI's syscall without a
// supervisor; a supervised filter refuses those with ENOSYS instead and
// names them). None for a plan without a filter or another death.
//
// IMPORTANT: the kernel does not say which syscall killed it, so the
// denial cannot either; a process can also send itself SIGSYS, hence
// "inferred".
func SigsysDenial(p *Plan, ws syscall.WaitStatus) []report.Denial {
	if p == nil || len(p.SeccompProg) == 0 || !ws.Signaled() || ws.Signal() != syscall.SIGSYS {
		return nil
	}
	return []report.Denial{{
		Operation: "syscall", Source: SeccompSource, Confidence: Inferred, Count: 1,
		Reason: "the command was killed by SIGSYS: the seccomp filter kills a syscall of an ABI other than the native one (" + nativeABIName() +
			": an i386 syscall through int $0x80, an x32 syscall number) when no supervisor runs; the kernel does not say which syscall it was (without a supervisor, and when the process sent itself SIGSYS, nothing does)",
	}}
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
