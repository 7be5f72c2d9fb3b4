// Package enforce holds what every platform backend reports in the same
// shape: what was enforced, what was degraded and why, and the denials seen.
// The backends live in enforce/<os>; they compile a policy.Policy into a Plan,
// launch it, and fill a Report.
//
// Guarantees: a backend never degrades silently. Every feature it could not
// apply is a Downgrade in the report, and a caller that required the feature
// gets ErrNotSupported (wrapped in an UnsupportedFeatureError) instead of a run.
package enforce
