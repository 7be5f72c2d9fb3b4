package policy

import (
	"os"
	"path/filepath"
	"slices"
)

// GitKeptReadOnly are the entries of a repository's .git that stay
// read-only when that .git is granted writable (GitGrant): each makes git
// run code, or read a configuration that does, the next time anyone uses
// the repository outside the sandbox. git add and git commit write none of
// them (they write index, objects, refs, logs, HEAD, COMMIT_EDITMSG,
// ORIG_HEAD). Each is carved out whether it exists or not (a missing one
// is a read-only empty directory during the call, which git reads as
// empty).
var GitKeptReadOnly = []struct{ Name, Why string }{
	{"hooks", "scripts git runs on commit, checkout, push"},
	{"config", "core.hooksPath, core.fsmonitor, filter and diff drivers: commands git runs"},
	{"info", "attributes naming drivers; sparse-checkout"},
	{"modules", "submodules' own .git: their hooks and config"},
	{"worktrees", "linked worktrees' metadata: their commondir and config"},
}

// GitKeptIfPresent are files of a .git that git reads only when they
// exist, and refuses when they are a directory: carved out when they
// exist; a missing one cannot be (an empty placeholder directory breaks
// every git command), so the caller removes one that appeared once the
// call's tree is dead (GitAppeared).
//
// IMPORTANT: during the call a command granted a .git can create these;
// only the check after the call (call.SettleGitGrant) takes them away, and
// a process that outlives the call's tree is not part of the model.
var GitKeptIfPresent = []struct{ Name, Why string }{
	{"commondir", "points git at another directory's config and hooks"},
	{"config.worktree", "per-worktree configuration (extensions.worktreeConfig)"},
}

// GitGrant reports whether w, a granted write path, is a repository's .git
// directory: it is then writable with GitKeptReadOnly carved out, instead
// of a read-only carve-out as a whole.
func GitGrant(w string) bool {
	if filepath.Base(w) != ".git" {
		return false
	}
	fi, err := os.Lstat(w)
	return err == nil && fi.IsDir()
}

// GitAppeared returns, for each .git that pol grants writable (narrowGit:
// its hooks are a carve-out and it is not), the GitKeptIfPresent files it
// does not have: the ones to remove if the call makes them.
func GitAppeared(pol Policy) []string {
	var out []string
	for _, c := range pol.CarveOuts {
		g := filepath.Dir(c)
		if filepath.Base(c) != "hooks" || filepath.Base(g) != ".git" || slices.Contains(pol.CarveOuts, g) || !GitGrant(g) {
			continue
		}
		for _, k := range GitKeptIfPresent {
			if p := filepath.Join(g, k.Name); !lexists(p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// narrowGit replaces, in carveOuts, each repository .git that is granted
// writable (GitGrant) by its GitKeptReadOnly entries and its existing
// GitKeptIfPresent ones.
func narrowGit(carveOuts []string, write []string) []string {
	var granted []string
	for _, w := range write {
		if GitGrant(w) {
			granted = append(granted, w)
		}
	}
	if len(granted) == 0 {
		return carveOuts
	}
	out := slices.DeleteFunc(slices.Clone(carveOuts), func(c string) bool {
		if slices.Contains(granted, c) {
			return true
		}
		r, err := filepath.EvalSymlinks(c)
		return err == nil && slices.Contains(granted, r)
	})
	for _, g := range granted {
		for _, k := range GitKeptReadOnly {
			if p := filepath.Join(g, k.Name); !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
		for _, k := range GitKeptIfPresent {
			if p := filepath.Join(g, k.Name); lexists(p) && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

func lexists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
