package policy

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/sbx-sandbox/sbx/internal/fspath"
)

// DenyAccess is what a deny pattern forbids.
type DenyAccess string

const (
	// DenyRead: neither read nor written (deny_read).
	DenyRead DenyAccess = "read"
	// DenyWrite: not written (deny_write).
	DenyWrite DenyAccess = "write"
)

// DenyGlob is one deny pattern anchored at an absolute root.
type DenyGlob struct {
	// Pattern is absolute (fspath.Glob syntax).
	Pattern string `json:"pattern"`
	// Given is the pattern as the guard or profile spelt it ("**/.env"),
	// for denial reasons.
	Given  string     `json:"given"`
	Access DenyAccess `json:"access"`
}

// Glob parses Pattern (valid by construction).
func (d DenyGlob) Glob() fspath.Glob { return fspath.MustGlob(d.Pattern) }

// Reason is the text of a denial by d.
func (d DenyGlob) Reason() string {
	return fmt.Sprintf("matches the deny_%s pattern %s", d.Access, d.Given)
}

// DenyScanLimit bounds the directory entries ExpandDenies visits for one
// call, over all its patterns. Past it the pattern is reported unscanned
// (DenyUnscanned), never skipped silently.
const DenyScanLimit = 20000

// DenyExpansion is what ExpandDenies found.
type DenyExpansion struct {
	// Globs are the patterns anchored at absolute roots, for the backends.
	Globs []DenyGlob
	// Read and Write are the existing paths that match (resolved), to
	// mask and to make read-only as guard paths are.
	Read, Write []string
	// Unscanned are the given patterns whose matches were not all found,
	// and why.
	Unscanned []SkippedPath
	// Source maps each path of Read and Write to the pattern that found it.
	Source map[string]DenyGlob
}

// ExpandDenies anchors the deny patterns read and write (canonical, as
// profiles.Normalize spells them) and finds their existing matches: an
// absolute pattern from "/", a relative one below cwd and each write root
// of pol but "/" (danger-full-access writes everywhere: a relative pattern
// is then matched below the cwd only, or the walk would be the whole
// file system). The walk does not follow symlinks (a match that is a
// symlink is resolved: the kernel enforces its target), does not enter
// a directory below which nothing can match, and visits at most limit
// entries in all.
//
// IMPORTANT: the matches are those of launch time. A name created during
// the call (or after the walk) is not masked by any mount: only the
// supervisor, where it runs, refuses creating it (best effort).
func ExpandDenies(pol Policy, cwd string, read, write []string, limit int) DenyExpansion {
	var roots []string
	for _, r := range append([]string{cwd}, pol.WriteRoots...) {
		if r != "/" && !slices.Contains(roots, r) {
			roots = append(roots, r)
		}
	}
	var out DenyExpansion
	anchor := func(given string, a DenyAccess) {
		g, err := fspath.ParseGlob(given)
		if err != nil {
			return // canonical input: cannot happen
		}
		bases := roots
		if g.IsAbs() {
			bases = []string{"/"}
		}
		for _, b := range bases {
			d := DenyGlob{Pattern: g.Under(b).String(), Given: given, Access: a}
			if !slices.ContainsFunc(out.Globs, func(o DenyGlob) bool { return o.Pattern == d.Pattern && o.Access == a }) {
				out.Globs = append(out.Globs, d)
			}
		}
	}
	for _, s := range read {
		anchor(s, DenyRead)
	}
	for _, s := range write {
		anchor(s, DenyWrite)
	}
	budget := limit
	for _, d := range out.Globs {
		found, why := walkGlob(d.Glob(), &budget, limit)
		if why != "" && !slices.ContainsFunc(out.Unscanned, func(u SkippedPath) bool { return u.Path == d.Given }) {
			out.Unscanned = append(out.Unscanned, SkippedPath{Path: d.Given, Reason: why})
		}
		for _, f := range found {
			if out.Source == nil {
				out.Source = map[string]DenyGlob{}
			}
			if _, seen := out.Source[f]; !seen || d.Access == DenyRead {
				out.Source[f] = d
			}
			if d.Access == DenyRead {
				out.Read = append(out.Read, f)
			} else {
				out.Write = append(out.Write, f)
			}
		}
	}
	return out
}

// errBudget ends a walk that used up its budget.
var errBudget = errors.New("budget")

// walkGlob returns the existing paths that match g, resolved, and why not
// all could be found ("" when they were).
func walkGlob(g fspath.Glob, budget *int, limit int) (found []string, why string) {
	start := g.Prefix()
	err := filepath.WalkDir(start, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if p == start && errors.Is(err, fs.ErrNotExist) {
				return nil // nothing to find; creation is the backend's
			}
			if why == "" {
				why = fmt.Sprintf("%s could not be read: %v", p, err)
			}
			return nil
		}
		if *budget <= 0 {
			return errBudget
		}
		*budget--
		if g.Match(p) {
			found = append(found, fspath.ResolveExisting(p))
			if e.IsDir() {
				return fs.SkipDir // masked or read-only whole
			}
			return nil
		}
		if e.IsDir() && !g.MayMatchBelow(p) {
			return fs.SkipDir
		}
		return nil
	})
	if errors.Is(err, errBudget) {
		why = fmt.Sprintf("more than %d directory entries to search for the call's deny patterns (stopped in %s)", limit, start)
	}
	return found, why
}

// DenyGlobAt returns the deny pattern of pol that covers path (absolute,
// clean): one that matches it or a directory above it. With reads true
// only deny_read patterns count (deny_write lets reading through).
func (pol Policy) DenyGlobAt(path string, reads bool) (DenyGlob, bool) {
	return MatchDenyGlobs(pol.DenyGlobs, path, reads)
}

// MatchDenyGlobs is DenyGlobAt over globs.
func MatchDenyGlobs(globs []DenyGlob, path string, reads bool) (DenyGlob, bool) {
	return NewDenyMatcher(globs).Match(path, reads)
}

// DenyMatcher is a list of deny patterns parsed once, for a checker that
// asks for every path (the supervisor).
type DenyMatcher struct {
	globs  []DenyGlob
	parsed []fspath.Glob
}

// NewDenyMatcher parses globs (valid by construction).
func NewDenyMatcher(globs []DenyGlob) DenyMatcher {
	m := DenyMatcher{globs: globs}
	for _, d := range globs {
		m.parsed = append(m.parsed, d.Glob())
	}
	return m
}

// Match returns the pattern that covers path (absolute, clean): one that
// matches it or a directory above it. With reads true only deny_read
// patterns count.
func (m DenyMatcher) Match(path string, reads bool) (DenyGlob, bool) {
	for i, d := range m.globs {
		if reads && d.Access != DenyRead {
			continue
		}
		for p := path; ; p = filepath.Dir(p) {
			if m.parsed[i].Match(p) {
				return d, true
			}
			if p == "/" || p == "." {
				break
			}
		}
	}
	return DenyGlob{}, false
}
