package call

import (
	"os"
	"path/filepath"

	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// GitGrantSource is the Source of a denial SettleGitGrant reports.
const GitGrantSource = "after-call"

// gitWatch is a file a granted .git must not keep (policy.GitAppeared),
// with the .git directory as it was before the call: the command may have
// renamed it, or a parent inside a writable root, and left a symbolic link
// in its place.
type gitWatch struct {
	path string
	git  os.FileInfo
}

func watchGit(pol policy.Policy) []gitWatch {
	var out []gitWatch
	for _, p := range policy.GitAppeared(pol) {
		if fi, err := os.Lstat(filepath.Dir(p)); err == nil {
			out = append(out, gitWatch{path: p, git: fi})
		}
	}
	return out
}

// SettleGitGrant runs once the call's tree is dead (no process of it can
// race it): for each .git the call was granted writable, a file git reads
// only when present (policy.GitKeptIfPresent) that the call made is removed
// and reported as a refused create. The kernel could not refuse it during
// the call: the placeholder that would have stopped it breaks git. The
// removal goes through an os.Root on that .git, checked to be the same
// directory as before the call, so that it never reaches outside it.
func (p *Prepared) SettleGitGrant() []report.Denial {
	var out []report.Denial
	for _, w := range p.gitWatch {
		root, err := os.OpenRoot(filepath.Dir(w.path))
		if err != nil {
			continue // the .git is gone: nothing of it to read later
		}
		name := filepath.Base(w.path)
		now, err := root.Stat(".")
		if err != nil || !os.SameFile(now, w.git) {
			root.Close()
			continue // another directory now: not the granted .git
		}
		if _, err := root.Lstat(name); err != nil {
			root.Close()
			continue
		}
		reason := "inside the granted .git, kept from being made: git would read it outside the sandbox; removed after the call"
		if err := root.RemoveAll(name); err != nil {
			reason = "inside the granted .git, made by the call; removing it failed: " + err.Error()
		}
		root.Close()
		out = append(out, report.Denial{Operation: "create", Path: w.path, Source: GitGrantSource, Confidence: report.ConfidenceObserved, Count: 1, Reason: reason})
	}
	return out
}
