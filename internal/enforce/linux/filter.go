//go:build linux

package linux

import (
	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/enforce/linux/seccomp"
)

// The seccomp filter's table and compiler live in the leaf package
// enforce/linux/seccomp, which imports nothing of this one. These names keep
// the plan's fields and the stage's JSON spelled as they were (issue 32:
// a refactor changes no exported name); new code may use the seccomp
// package's names directly.
type (
	BPFProgram   = seccomp.BPFProgram
	SeccompRule  = seccomp.SeccompRule
	SocketPolicy = seccomp.SocketPolicy
	NotifyScope  = seccomp.NotifyScope
)

const (
	SocketsAny           = seccomp.SocketsAny
	SocketsLoopbackNetns = seccomp.SocketsLoopbackNetns
	SocketsUnixOnly      = seccomp.SocketsUnixOnly

	NotifyNone   = seccomp.NotifyNone
	NotifyWrites = seccomp.NotifyWrites
	NotifyReads  = seccomp.NotifyReads

	// unsupervisedSetgid ends the reason of every "denial-reports"
	// downgrade (seccomp.UnsupervisedSetgid).
	unsupervisedSetgid = seccomp.UnsupervisedSetgid
)

// SeccompRules is seccomp.SeccompRules.
func SeccompRules(s SocketPolicy) []SeccompRule { return seccomp.SeccompRules(s) }

// SeccompTable is seccomp.SeccompTable.
func SeccompTable(s SocketPolicy, sup NotifyScope) []SeccompRule { return seccomp.SeccompTable(s, sup) }

// CompileSeccomp is seccomp.CompileSeccomp.
func CompileSeccomp(rules []SeccompRule) ([]unix.SockFilter, error) {
	return seccomp.CompileSeccomp(rules)
}
