//go:build linux

package supervisor

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/enforce/linux/seccomp"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// The supervisor's half of the foreign ABIs the filter's prologue sends
// here (seccomp.ForeignABI names them).

// refuseForeignABI refuses a foreign ABI's syscall with ENOSYS: the
// supervisor has no decoder for another ABI's numbers and arguments, so it
// fails closed, and the denial says which syscall and ABI it was.
func (s *Supervisor) refuseForeignABI(n *seccompNotif, abi, name string) decision {
	return decision{errno: unix.ENOSYS, denials: []report.Denial{{
		Operation: "syscall", Syscall: name, PID: int(n.PID),
		Source: SupervisorSource, Confidence: Observed, Count: 1,
		Reason: fmt.Sprintf("a syscall of the %s ABI (number %#x): the seccomp filter refuses every syscall of an ABI other than the native one (%s), whose rules would not apply, with ENOSYS", abi, uint32(n.Data.Nr), seccomp.NativeABIName()),
	}}}
}
