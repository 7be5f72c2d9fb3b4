//go:build linux

package linux

import (
	"syscall"

	"github.com/sbx-sandbox/sbx/internal/enforce/linux/seccomp"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// This file reports the syscalls of a foreign ABI the filter's prologue
// refuses (seccomp.CompileSeccomp; seccomp.ForeignABI names them): an i386 syscall (int $0x80) or an x32 one (nr
// with the x32 bit) on amd64. Every number of the rule table would mean
// another syscall under them, so no rule applies: with a supervisor the
// prologue sends them here, and each is refused with ENOSYS (what a kernel
// without that ABI answers) and named in a denial; without one the kernel
// kills the process, and SigsysDenial infers the cause from the death.

// SeccompSource is the Source of a denial inferred from the filter's own
// verdict (a SIGSYS death), with no supervisor to observe the call.
const SeccompSource = "seccomp-filter"

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
		Operation: "syscall", Source: SeccompSource, Confidence: report.ConfidenceInferred, Count: 1,
		Reason: "the command was killed by SIGSYS: the seccomp filter kills a syscall of an ABI other than the native one (" + seccomp.NativeABIName() +
			": an i386 syscall through int $0x80, an x32 syscall number) when no supervisor runs; the kernel does not say which syscall it was (without a supervisor, and when the process sent itself SIGSYS, nothing does)",
	}}
}
