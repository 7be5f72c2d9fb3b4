// Package serve is sbx's long-lived session server (`sbx serve`): JSON-RPC
// 2.0, one JSON object per line, over stdio or a unix socket
// (docs/serve.md). It owns the session state that profiles/ and escalate/
// model (the knobs pinned when a session opens, preset intents, turns,
// grants stored by environment id and scope, child sessions) and runs
// each exec request through packages wire (the request) and run (the
// call), the code path of `sbx exec`, launching in-process: no new Go
// start per call. The server makes the call it wants from the request
// (its session's mode, grants and approver) and hands it to run.Exec.
//
//	cl := serve.NewClientAnswerer()
//	srv := serve.New(serve.Options{Client: cl, Answerer: serve.Waterfall{cl,
//		serve.Always{Answerer: escalate.CommandApprover{Argv: argv}}}})
//	err := srv.ServeConn(ctx, os.Stdin, os.Stdout) // or srv.ServeListener(ctx, l) after serve.Listen(path)
//
// Approvals go to an Answerer (escalate.Approver, the one answerer
// interface, asked the one question escalate.ApprovalRequest), a seam; sbx serve's is a Waterfall of
// Claimers (--answerers), the first that claims a question answering it:
// the ClientAnswerer (approval/requested to the clients that declare
// approvals, their responses read strictly and routed by rpc id), the
// TerminalAnswerer and the --approver program (Always around an
// escalate.CommandApprover), the WebAnswerer, a browser panel on loopback
// (WebAnswerer.ListenWeb, then WebPanel.Serve) that answers the client
// answerer's pending approvals through its settling path, and the
// ACPAnswerer (session/request_permission to an Agent Client Protocol
// client, for the calls of sessions opened with acp_session_id).
// The outcome vocabulary is closed; only allowed-once proceeds, and an ask
// is bounded by Options.AnswerTimeout.
//
// Guarantees:
//   - Each record (Log) is appended, and durable, before the effect it
//     records is acted on or acknowledged: approval/asked before the
//     answerer is asked, and the call proceeds only once approval/decided
//     is on the log. A record that cannot be appended stops the action.
//   - Cancellation (exec/cancel, $/cancelRequest, the client going away,
//     the turn ending for approvals) settles a pending approval cancelled
//     at once; an answer that comes later is dropped. A call is checked
//     again before policy and before dispatch; after dispatch its whole
//     tree is killed and the result says aborted.
//   - A client that goes away has its running calls killed; ServeConn
//     returns once they ended and their records are written.
//   - Only the server's uid and root may connect to its socket
//     (SO_PEERCRED), which is made 0600. The browser panel binds loopback
//     only, and every /api request needs its Host, no cross-site fetch, a
//     same-authority Origin and the per-start token.
//   - A malformed line gets a parse error and the connection goes on; a
//     line over the size limit is refused without being held whole.
package serve
