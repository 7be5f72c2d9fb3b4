// Package darwin is the macOS backend: it compiles a policy.Policy into a
// Seatbelt (SBPL) profile and runs the command under it with
// /usr/bin/sandbox-exec.
//
//	plan, err := darwin.Compile(pol, darwin.DefaultOptions())
//	fmt.Print(plan.String()) // the profile and its -D parameters
//	proc, err := darwin.Start(plan, enforce.Command{Path: "/bin/sh", Argv: []string{"sh", "-c", "make"}})
//
// The compiler (Compile, Plan, the rule tables, the log-line parser) is pure
// Go with no build tag, so its golden tests run on every OS. Launching,
// denial collection and the doctor are darwin-only (_darwin.go files).
//
// Guarantees:
//   - The profile starts from (deny default); everything it allows is in a
//     rule table below with the reason it is needed, or comes from the Policy.
//   - No path from the Policy is pasted into the profile text: each is a
//     parameter (-D NAME=VALUE) the profile names with (param "NAME"), so a
//     path containing quotes or parentheses cannot change the profile.
//   - Paths are canonicalised the way Seatbelt matches them (/tmp is
//     /private/tmp); guard-masked paths are denied last, so no allow widens
//     past them.
//   - danger-full-access runs the command directly: no profile at all.
//   - sandbox-exec is always /usr/bin/sandbox-exec, never looked up in PATH.
//
// IMPORTANT: this backend was written and golden-tested on Linux. The profile
// text has not been run by sandbox-exec here, and the launcher, the
// log-stream denial collector and the doctor have only been compiled
// (GOOS=darwin). Each unverified behaviour is marked IMPORTANT where it lives;
// docs/platforms.md says how to verify on Apple hardware.
package darwin
