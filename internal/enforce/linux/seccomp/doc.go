//go:build linux

// Package seccomp is the seccomp filter of a Linux call: the rule table, a
// reason per row (SeccompTable: what is refused with an errno, what goes to
// the supervisor), its compiler to classic BPF (CompileSeccomp), and the
// loading of the program on the calling thread (LoadSeccomp,
// LoadSeccompListener). It is a leaf: it imports x/sys, the standard library
// and report, nothing of the backend, so the table can be read, tested and
// changed alone.
//
//	prog, err := seccomp.CompileSeccomp(seccomp.SeccompTable(seccomp.SocketsUnixOnly, seccomp.NotifyWrites))
//	// on a locked thread with no_new_privs set:
//	fd, err := seccomp.LoadSeccompListener(prog)
//
// Guarantees: the program refuses every syscall of an ABI other than the
// native one before any rule (their numbers would mean other calls);
// arguments are compared on their low 32 bits, as the kernel reads an int,
// so high bits cannot dodge a rule; a table that cannot be compiled
// exactly is an error, never a shorter program. The supervisor's side
// (what a notified call becomes) lives in enforce/linux; this package only
// says which calls reach it, and names those of a foreign ABI (ForeignABI)
// and the mode a set-id rule tested (SetidMode) so that it reads them
// where the filter did.
//
// Adding a rule is one row in seccomp.go (or seccomp_setid.go for a call
// that takes a mode); TestSeccompTableCoversEveryRule fails until the
// row has a case in seccompCases.
package seccomp
