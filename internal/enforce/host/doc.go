// Package host runs one call on the backend of the operating system sbx was
// built for: it compiles the Policy, checks required features, starts the
// command, forwards signals, enforces the timeout and fills the Report.
//
//	rep, err := host.Run(ctx, host.Call{Policy: pol, Cmd: cmd})
//
// Guarantees: nothing runs when a required feature is missing or the plan
// cannot be applied; the command never runs less restricted than its Plan.
//
// Run (host.go) is the same steps on every OS over a small backend, one per
// OS in host_<os>.go, which holds only what differs: how the plan is
// compiled and admitted, how the command starts and is waited for, and what
// the backend measured and saw.
package host
