//go:build linux

package linux

import (
	"strings"

	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// compileDenyGlobs reports what the mounts cannot do for the policy's deny
// patterns. Their existing matches are already masks and read-only
// carve-outs (policy.ExpandDenies put them in Masked and ReadOnly), the
// kernel's walls. A name made during the call is not: no mount covers a
// path that does not exist, and a pattern names infinitely many. The
// supervisor refuses creating or renaming to a matching name, and opening
// one (deny_read) or writing one (deny_write) that no mask covers.
//
// IMPORTANT: that is best effort (the path is read from the command's
// memory, and a racing thread can change it after the check), so the
// deny-glob-create downgrade stays even with the supervisor, and
// --require deny-glob-create refuses to run.
func (p *Plan) compileDenyGlobs(pol policy.Policy) {
	if len(pol.DenyGlobs) > 0 {
		var pats []string
		for _, d := range pol.DenyGlobs {
			pats = append(pats, d.Pattern)
		}
		list := strings.Join(pats, ", ")
		plain := report.Downgrade{Feature: report.FeatureDenyGlobCreate,
			Reason: "new names matching the deny patterns " + list + " are not prevented from being created (no seccomp supervisor)"}
		p.addDowngrade(report.Downgrade{Feature: report.FeatureDenyGlobCreate,
			Reason: "the seccomp supervisor refuses creating names that match the deny patterns " + list + ", best effort: a racing thread can change the path after the check"}, plain)
	}
	for _, u := range pol.DenyUnscanned {
		plain := report.Downgrade{Feature: report.FeatureDenyGlobScan,
			Reason: "deny pattern " + u.Path + ": " + u.Reason + "; matches not found are not masked"}
		p.addDowngrade(report.Downgrade{Feature: report.FeatureDenyGlobScan,
			Reason: plain.Reason + " (the seccomp supervisor refuses the accesses to them it sees, best effort)"}, plain)
	}
}

// addDowngrade records d, or plain when there is no supervisor (or it
// could not be set up at launch).
func (p *Plan) addDowngrade(d, plain report.Downgrade) {
	if p.Supervise == SuperviseOff {
		p.Downgrades = append(p.Downgrades, plain)
		return
	}
	p.addSupervised(d, plain)
}
