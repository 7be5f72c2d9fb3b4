// Package run is the run stage of the call pipeline: it runs a prepared
// call (call.Prepared) on pipes or a pseudo-terminal, captures or streams
// its output, runs the fs helper stage for a file-system change, and, for
// a JSON request, maps the outcome to the wire result of package wire.
// `sbx exec`, `sbx serve`, `sbx fs`, `sbx probe` and package sandbox run
// calls through it.
//
//	p, err := call.Prepare(ctx, r)
//	if err != nil { /* a refusal */ }
//	rep, err := run.Run(ctx, p, run.IO{Stdin: "input\n", Stdout: os.Stdout, Stderr: os.Stderr})
//
// or, for a decoded request, with the call the caller made from it:
//
//	r, in, err := req.Call(env)
//	// the caller's own explicit step on r (a server's session mode, grants, approver)
//	resp, err := run.Exec(ctx, req, r, in, run.Options{Raw: data})
//
// Exec does, in order: call.Prepare (grants, the ladder, approval, the
// guard), the run (captured, or streamed as wire.OutputEvents to an
// EventSink), and the result with the exact-retry hint when the sandbox
// denied something. Within the run, once the plan is compiled and admitted
// and before anything is made for it, comes the caller's Dispatch check (it
// changes nothing in the call). Nothing changes the call between the
// caller and Prepare.
//
// Guarantees:
//   - Every refusal of Exec and RunFS happens before anything is started.
//   - Cancelling the context settles a pending approval cancelled
//     (escalate.Decide) and kills a running command's whole tree.
//   - Memory stays bounded: captured output is capped per stream, streamed
//     output is not buffered.
//   - The fs helper (FSStageCommand) makes its change with plain system
//     calls inside the call's sandbox, so the kernel judges it as it judges
//     a command; a change is said denied only on the supervisor's evidence.
//   - Run owns no process state: relaying signals is host.Call's
//     ForwardSignals, set by the caller (a CLI), never by a server.
package run
