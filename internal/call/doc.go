// Package call is the head of the call pipeline, as a library: it takes one
// call as a Request (what `sbx run` flags or an `sbx exec` request say) and
// decides it, once, into a Prepared call that enforce/host can run, with
// the provenance of every permission for the report and, after the run,
// the exact-retry hint.
//
//	Request --Prepare--> Prepared{Policy, Permissions, Guard, Call} --host.Run--> Report
//	                        \--Retry(denials, outcome)--> RetryHint (escalation, grant, argv or request)
//
// Prepare does, in this order: the command (a shell spec made into argv),
// required features, limits, the cwd, the environment policy, the
// normalisation of the additional permissions and of the grants, the
// preauthorised split, capabilities, the standing policy, validation of the
// escalation (the ladder, the pairing), the policy the call would run with
// and the guard on it, approval, and finally the resolution of the command
// on the command's PATH.
//
//	p, err := call.Prepare(ctx, call.Request{
//		Command: []string{"make", "test"}, Cwd: "/work/repo", Mode: profiles.WorkspaceWrite,
//		Env: os.Environ(),
//		Escalation: call.Escalation{ApprovalPolicy: profiles.ApprovalNever},
//	})
//	if err != nil { /* refused: a *strictjson.FieldError names the field; escalate.ErrDenied; call.ErrNotFound */ }
//	rep, err := run.Run(ctx, p, run.IO{Stdout: os.Stdout, Stderr: os.Stderr}) // package run; or host.Run(ctx, p.Call)
//	if len(rep.Denials) > 0 {
//		// nil for a command that exited 0, unless the request asked (RetryOnSuccess)
//		hint := p.Retry(rep.Denials, call.ExitOutcome(rep), call.RetryForm{Request: rawRequest})
//	}
//
// A caller that launches sandboxed calls can guess with PrestartHint,
// before Prepare, whether to make the namespaces ahead (host.Prestart).
//
// Fields is the request table: each field once, with its flag, its JSON key,
// the rule of its strings, the modes where it means something and whether
// it is asked about under with_additional_permissions. Prepare refuses a
// field given where it means nothing, whichever front end set it; Render
// names a refusal's field in the words of a front end (the CLI's flags);
// a retry is the call plus a list of row changes, which the argv writes
// with the rows' flags and the request with their keys (the caller's own
// flags and fields kept as given); sbx run registers its flags from it.
//
// Guarantees:
//   - Nothing has been run or created when Prepare returns an error, and
//     every refusal of bad input is a *strictjson.FieldError naming the field.
//   - Nothing is asked that would then be refused: the ladder and pairing
//     are checked, and the policy the call would run with is built and
//     guarded, before any approver is asked; a with_additional_permissions
//     request the guard would strip whole, or a write into a read-only
//     carve-out, is refused without asking.
//   - Approval fails closed (escalate.Validate once, then escalate.Obtain):
//     only an exact allowed-once proceeds, and approval policy never asks
//     nobody. ctx ending while the approver is asked settles the approval
//     cancelled; the package catches no signal (sbx's SIGINT and SIGTERM
//     reach an ask through the approver cmd/sbx wraps).
//   - The guard is applied last and only takes away; what it removed is in
//     Permissions.GuardRemoved, and it is loaded once: the retry reads the
//     same guard, so what it forbids gets no retry.
//   - Additional permissions under use_default run without approval only
//     when marked Preauthorized (the caller's own, not a model's).
//   - The package is pure Go and builds on every OS; it knows no flag set
//     (the CLI gives a retry's command line as data, CommandLine): only the
//     names in Fields.
package call
