package call

import (
	"slices"

	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/profiles"
)

// applyGuard applies the guard to final, with the deny patterns of the
// guard and of add (the call's effective additional permissions: the
// caller's own, the grants and the request) expanded first: their existing
// matches below cwd and the write roots become guard paths (masked for
// deny_read, read-only for deny_write), and the anchored patterns go to the
// backend in Policy.DenyGlobs, which refuses creating new matches where it
// can. A deny only narrows: whoever it came from, it is applied as the
// guard is, last.
func applyGuard(guard escalate.Guard, final policy.Policy, cwd string, add profiles.Profile) escalate.Applied {
	read := append(slices.Clone(guard.DenyReadGlobs), add.DenyReadPatterns()...)
	write := append(slices.Clone(guard.DenyWriteGlobs), add.DenyWritePatterns()...)
	if len(read) == 0 && len(write) == 0 {
		return guard.Apply(final)
	}
	exp := policy.ExpandDenies(final, cwd, read, write, policy.DenyScanLimit)
	g := guard.WithPaths(exp.Read, exp.Write)
	// Kept so that the guard is not empty (a danger-full-access policy
	// must lose Unrestricted for the backend to refuse new matches).
	g.DenyReadGlobs, g.DenyWriteGlobs = read, write
	a := g.Apply(final)
	a.Policy.DenyGlobs, a.Policy.DenyUnscanned = exp.Globs, exp.Unscanned
	// The report says which pattern took a path away, not "the guard",
	// where the guard did not name the path itself.
	for i, r := range a.Removed {
		d, ok := exp.Source[r.Path]
		if ok && !slices.Contains(guard.DenyRead, r.Path) && !slices.Contains(guard.DenyWrite, r.Path) {
			a.Removed[i].Reason = r.What + ": " + d.Reason()
		}
	}
	return a
}
