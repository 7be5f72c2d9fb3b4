// Package sandbox is sbx for programs written in Go: one call of the JSON
// contract (docs/json.md) run under the OS sandbox, as `sbx exec` runs it,
// without a process of sbx in between.
//
// A Request is a command (or one file-system change, FS) and the
// permissions it runs with; Run runs it and returns a Response: a Result
// with the report (what was enforced and degraded, the Denials, the
// exact-retry hint), the exit status and the output. Its fields are the
// contract's keys with Go types, and a Result marshals to the JSON
// `sbx exec` prints. Decode reads a request from that JSON, strictly. Every
// error is a *Refusal (nothing ran), carrying the kind, field and message
// of the contract's error object. It runs calls through the same run stage
// as `sbx exec` and `sbx serve`, so the guarantees are theirs
// (docs/security.md).
//
// A program that uses it calls Main first thing in its main function: an
// unprivileged call re-executes the program itself as the sandbox's stage
// (in a new user namespace), and a file-system change re-executes it as the
// helper that makes the change inside the sandbox. Main runs those and
// exits; in the program's own start it returns at once. Importing the
// package locks no thread: its init locks the main one only in the stage
// (as runc's init does), where Go's inits run on it.
//
//	func main() {
//		sandbox.Main()
//		...
//		res, err := sandbox.Run(ctx, &sandbox.Request{
//			Command:     []string{"make", "test"},
//			Cwd:         dir,
//			SandboxMode: new(sandbox.WorkspaceWrite),
//		}, sandbox.Options{})
//		var ref *sandbox.Refusal
//		if errors.As(err, &ref) { ... ref.Kind, ref.Field ... }
//		for _, d := range res.Result.Denials { ... d.Operation, d.Path ... }
//	}
//
// An Approver in Options answers the call's approval questions in-process.
// The report types (Report, Denial, Downgrade, Feature, Permissions,
// RetryHint, ...) are sbx's own, named here as aliases: every type a
// result holds can be named through this package.
package sandbox
