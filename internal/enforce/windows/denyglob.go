package windows

import (
	"strings"

	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// denyGlobDowngrades reports what Windows cannot do for the policy's deny
// patterns. Their existing matches are already in ReadOnly (deny_write:
// a deny ACE, as any carve-out) and Masked (deny_read: not enforced, the
// mask downgrade); a name created during the call has no ACE: there is no
// path rule and no supervisor here.
//
// IMPORTANT: new names matching a deny pattern can be created, and read.
func denyGlobDowngrades(pol policy.Policy) []report.Downgrade {
	var out []report.Downgrade
	if len(pol.DenyGlobs) > 0 {
		var pats []string
		for _, d := range pol.DenyGlobs {
			pats = append(pats, d.Pattern)
		}
		out = append(out, report.Downgrade{Feature: report.FeatureDenyGlobCreate,
			Reason: "new names matching the deny patterns " + strings.Join(pats, ", ") + " are not prevented from being created (Windows: existing matches only)"})
	}
	for _, u := range pol.DenyUnscanned {
		out = append(out, report.Downgrade{Feature: report.FeatureDenyGlobScan, Reason: "deny pattern " + u.Path + ": " + u.Reason + "; matches not found are not protected"})
	}
	return out
}
