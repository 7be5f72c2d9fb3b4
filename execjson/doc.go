// Package execjson is the JSON call contract of sbx (docs/json.md) as a
// library: one request in, one result out. `sbx exec` reads a request from
// stdin and prints the result; `sbx serve` runs the same function per
// "exec" request of a session. Both share this code path, so a request
// means the same thing whichever way it comes in.
//
//	req, err := execjson.Decode(data) // strict: exact keys, no duplicates
//	if err != nil { /* a refusal: execjson.NewRefusal(err) */ }
//	resp, err := execjson.Exec(ctx, req, execjson.Options{Env: os.Environ(), Raw: data})
//	if err != nil { /* a refusal: nothing ran (exit 125) */ }
//	// resp.Result (a command) or resp.FS (a file-system change)
//
// Exec does, in order: the request's own checks (Request.Call, every error
// naming the field), the caller's Adjust (a server adds its session's
// standing mode, grants and approver), call.Prepare (grants, the ladder,
// approval, the guard), the caller's Dispatch check, the run (captured, or
// streamed as OutputEvents to an EventSink), and the result with the
// exact-retry hint when the sandbox denied something.
//
// Guarantees:
//   - A request is decoded strictly (profiles.DecodeStrict) and every
//     refusal happens before anything is made or started.
//   - Cancelling the context settles a pending approval cancelled
//     (escalate.Decide) and kills a running command's whole tree.
//   - Memory stays bounded: captured output is capped per stream, streamed
//     output is not buffered.
//   - The wire types (Request, Result, FSResult, Refusal, OutputEvent) are
//     the schemas' in docs/schema; tests in cmd/sbx keep the two equal.
package execjson
