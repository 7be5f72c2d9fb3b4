// Package wire is the JSON call contract of sbx (docs/json.md): the
// wire types, their strict decoding, the mapping of a request to the call
// it describes, and the mapping of failures to error objects. It runs
// nothing: package run prepares and runs the call and fills in the result.
// `sbx exec`, `sbx serve` and package sandbox share both, so a request
// means the same thing whichever way it comes in.
//
//	req, err := wire.Decode(data) // strict: exact keys, no duplicates
//	if err != nil { /* a refusal: wire.NewRefusal(err) */ }
//	r, in, err := req.Call(os.Environ()) // every error names the field
//	// ... the caller adds what it holds to r (a server: its session's
//	// standing mode, grants and approver), then run.Exec(ctx, req, r, in, opt)
//
// Guarantees:
//   - A request is decoded strictly (strictjson.Decode) and Request.Call
//     refuses before anything is made or started, naming the field.
//   - ErrorFor is the one classification of an error into an error object
//     (kind, field, outcome, feature, errno); StartFailure the one mapping
//     of a failed start to an exit status.
//   - The wire types (Request, Result, FSResult, Refusal, OutputEvent) are
//     the schemas' in docs/schema; tests in cmd/sbx keep the two equal.
package wire
