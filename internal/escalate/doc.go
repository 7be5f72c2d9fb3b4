// Package escalate decides whether one call may run with more than its
// standing policy, and takes away what the deployment forbids: the ladder and
// pairing checks of sandbox_permissions, approval (fail closed) and the guard.
//
// The steps, in the order a launcher runs them:
//
//	call := escalate.Call{
//		CallID: "c1", Tool: "shell", Cwd: "/work/repo",
//		Standing:           escalate.StandingFrom(standingPolicy),
//		SandboxPermissions: escalate.RequireEscalated,
//		Target:             profiles.DangerFullAccess,
//		Justification:      "needs to install packages",
//	}
//	dec, err := escalate.Decide(ctx, call, profiles.ApprovalOnRequest,
//		escalate.CommandApprover{Argv: []string{"/usr/local/bin/approve"}})
//	if err != nil { /* refused: errors.Is(err, escalate.ErrDenied) or a Validate error */ }
//	pol, err := policy.Build(policy.Request{Mode: dec.Mode, Cwd: call.Cwd, Additional: effective})
//	guard, err := escalate.LoadGuard("") // DefaultGuardPath, missing = empty
//	applied := guard.Apply(pol)          // applied.Policy is what runs
//
// Guarantees:
//   - Validate refuses an unpaired or empty justification, a same-level or
//     narrowing target, and additional permissions that add nothing, each with
//     its own sentinel error, before any approver is asked.
//   - Approver is the one answerer interface and ApprovalRequest the one
//     question, the same for every answerer (the --approver program, the
//     terminal, sbx serve's clients, panel and ACP editor, an in-process
//     one); Ask is the one race of an answer against cancellation and a
//     timeout. Decide is Validate, then Obtain; a caller that validates
//     first (call.Prepare) calls Obtain, so a call is validated once.
//   - Decide proceeds on an exact allowed-once only. No approver, a rejected,
//     cancelled or unavailable answer, an approver error, a timeout, a late
//     answer after cancellation, a malformed answer and an unknown outcome are
//     all denials (errors.Is(err, ErrDenied)), each with its own error.
//   - Approval policy never denies whatever would need asking, without asking.
//     A delegated child's policy is always never and it inherits no grants.
//   - An approval widens the one call it was asked for; nothing here stores it.
//   - Guard.Apply is monotone and idempotent: it never adds a write root,
//     never turns the network on, never lifts a read-only carve-out, and it
//     runs last, so no mode, grant or approval widens past it.
//
// The package is pure Go and builds on every OS; only TerminalApprover touches
// a device (/dev/tty), and it reports unavailable where there is none.
package escalate
