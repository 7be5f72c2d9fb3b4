//go:build linux

package supervisor

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/policy"
)

// The supervisor's half of deny globs (enforce/linux's denyglob.go plans
// them): a rename that would bring a name a glob denies into existence.

// HasReadGlobs reports whether some deny pattern forbids reading: opens
// for reading are then supervised too.
func HasReadGlobs(pol policy.Policy) bool {
	for _, d := range pol.DenyGlobs {
		if d.Access == policy.DenyRead {
			return true
		}
	}
	return false
}

// renamedTree returns the refusal of renaming the directory from to to
// when a name inside it would match a deny pattern at its new place: a
// rename makes new names for the whole tree, and no mount covers them.
// Best effort, as every supervisor check: the tree is read after the
// command's call and can change under it.
func (s *Supervisor) renamedTree(from, to string) (refusal, bool) {
	if len(s.in.Policy.DenyGlobs) == 0 {
		return refusal{}, false
	}
	m := policy.NewDenyMatcher(s.in.Policy.DenyGlobs)
	n := 0
	var found refusal
	ok := false
	err := filepath.WalkDir(from, func(p string, e fs.DirEntry, err error) error {
		if err != nil || p == from {
			return nil
		}
		if n++; n > renamedTreeLimit {
			return errBigTree
		}
		dest := filepath.Join(to, strings.TrimPrefix(p, from+"/"))
		if d, match := m.Match(dest, false); match {
			found, ok = refusal{errno: unix.EACCES, reason: dest + " " + d.Reason()}, true
			return fs.SkipAll
		}
		return nil
	})
	if errors.Is(err, errBigTree) {
		return refusal{errno: unix.EACCES, reason: fmt.Sprintf("more than %d entries to check against the deny patterns", renamedTreeLimit)}, true
	}
	return found, ok
}

// renamedTreeLimit bounds the entries renamedTree visits; a larger tree is
// refused (fail closed) when there are deny patterns.
const renamedTreeLimit = 10000

var errBigTree = errors.New("tree too large")
