package call

import (
	"os"

	"github.com/sbx-sandbox/sbx/report"
)

// GitGrantSource is the Source of a denial SettleGitGrant reports.
const GitGrantSource = "after-call"

// SettleGitGrant runs once the call's tree is dead (no process of it can
// race it): for each .git the call was granted writable, a file git reads
// only when present (policy.GitKeptIfPresent) that the call made is removed
// and reported as a refused create. The kernel could not refuse it during
// the call: the placeholder that would have stopped it breaks git.
func (p *Prepared) SettleGitGrant() []report.Denial {
	var out []report.Denial
	for _, f := range p.gitWatch {
		if _, err := os.Lstat(f); err != nil {
			continue
		}
		reason := "inside the granted .git, kept from being made: git would read it outside the sandbox; removed after the call"
		// RemoveAll unlinks a symbolic link rather than following it.
		if err := os.RemoveAll(f); err != nil {
			reason = "inside the granted .git, made by the call; removing it failed: " + err.Error()
		}
		out = append(out, report.Denial{Operation: "create", Path: f, Source: GitGrantSource, Confidence: report.ConfidenceObserved, Count: 1, Reason: reason})
	}
	return out
}
