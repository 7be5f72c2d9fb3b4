//go:build linux

// Package supervisor is the seccomp user-notification supervisor of a
// Linux call: the filter (package seccomp) hands it the calls its notify
// rules name, and for each it reads the path or address from the caller's
// memory, resolves it in the caller's view, asks the denial package whether
// the policy forbids it, and answers: refuse with the errno the kernel's
// rules would give and record a denial, let the kernel run the call
// (CONTINUE), or carry the operation out itself, race-free, on what it
// resolved once (a connect or datagram to a pathname unix socket, a setgid
// chmod of a directory).
//
//	s, err := supervisor.New(in) // in: what it may know of the plan
//	s.Attach(supervisor.Listener{FD: fd}) // the listener the launcher loaded
//	... the command runs ...
//	res := s.Finish() // the denials it saw
//
// Its one input is Input, a small struct that enforce/linux fills from a
// Plan (Plan.supervisorInput); it imports nothing of enforce/linux, and
// enforce/linux starts it (launch.go, thread.go, stage_parent.go through
// supervision.go).
//
// Guarantees (DESIGN.md invariant 1): it is not a wall. The kernel's
// rules (Landlock, mounts, the filter) enforce every rule; a CONTINUE
// lets the kernel decide with them in place, so a racing thread can only
// turn a refusal into what the kernel says. Where it cannot see (memory
// it cannot read, a deleted cwd or root, a name it cannot resolve) it
// refuses with EACCES and an inferred denial. Where it is the only check
// (what Landlock cannot express), it is best effort, and marked IMPORTANT
// where that lives.
//
// Adding a supervised syscall touches the seccomp package's table (a
// notify row in seccomp/seccomp.go, with its reason), atForm (supervise_amd64.go)
// when it has a legacy form, and its decoding and handler here (notify.go's
// dispatch and name table, then notify_fs.go or notify_net.go). Package
// seccomp's TestSeccompTableCoversEveryRule fails until the row has a case,
// enforce/linux's explain goldens (testdata/explain, -update) until they
// print it, and enforce/linux's supervise_test.go is where a probe op runs
// it under the real kernel.
package supervisor
