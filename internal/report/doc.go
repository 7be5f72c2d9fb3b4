// Package report is the vocabulary every part of sbx shares about one call:
// what it was limited to (Limits), what was enforced (Enforcement), what
// could not be and why (Downgrade, named by a Feature), what the sandbox
// refused (Denial, Address) and how it ended (Report, Resources). It is the
// ground floor: it imports no other sbx package, so the policy side
// (escalate, call) reads denials without depending on any mechanism.
//
// Guarantees: a backend never degrades silently. Every feature it could not
// apply is a Downgrade in the report, and a caller that required the
// feature gets ErrNotSupported (wrapped in an UnsupportedFeatureError)
// instead of a run.
package report
