package profiles

import (
	"fmt"
	"slices"

	"github.com/sbx-sandbox/sbx/internal/fspath"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// DenyReadPatterns returns file_system.deny_read: patterns (Glob) of paths
// that may be neither read nor written.
func (p Profile) DenyReadPatterns() []string {
	if p.FileSystem == nil {
		return nil
	}
	return p.FileSystem.DenyRead
}

// DenyWritePatterns returns file_system.deny_write: patterns of paths that
// may not be written.
func (p Profile) DenyWritePatterns() []string {
	if p.FileSystem == nil {
		return nil
	}
	return p.FileSystem.DenyWrite
}

// HasDenies reports whether the profile carries deny patterns.
func (p Profile) HasDenies() bool {
	return len(p.DenyReadPatterns()) > 0 || len(p.DenyWritePatterns()) > 0
}

// normalizeDenies validates the deny patterns of p and spells them
// canonically (ParseGlob). An absolute pattern's literal prefix is
// resolved (symlinks), as a path's is: the kernel enforces the object.
// Relative patterns stay relative: they are matched below the call's cwd
// and each writable root (policy.ExpandDenies).
func normalizeDenies(p Profile) (read, write []string, err error) {
	if read, err = canonicalGlobs(p.DenyReadPatterns(), "file_system.deny_read"); err != nil {
		return nil, nil, err
	}
	if write, err = canonicalGlobs(p.DenyWritePatterns(), "file_system.deny_write"); err != nil {
		return nil, nil, err
	}
	return read, write, nil
}

// canonicalGlobs validates patterns and returns their canonical
// spellings, absolute ones with their literal prefix resolved. Errors are
// *strictjson.FieldError naming field[i].
func canonicalGlobs(patterns []string, field string) ([]string, error) {
	var out []string
	for i, s := range patterns {
		g, err := fspath.ParseGlob(s)
		if err != nil {
			return nil, &strictjson.FieldError{Field: fmt.Sprintf("%s[%d]", field, i), Err: err}
		}
		out = append(out, fspath.ResolveGlobPrefix(g).String())
	}
	return out, nil
}

// withDeniesOf returns p with the union of the deny patterns of from.
func withDeniesOf(p Profile, from ...Profile) Profile {
	var read, write []string
	for _, f := range from {
		read = append(read, f.DenyReadPatterns()...)
		write = append(write, f.DenyWritePatterns()...)
	}
	return withDenies(p, read, write)
}

// withDenies returns p with the deny patterns set, sorted and without
// repeats; a deny_write pattern that is also a deny_read one is dropped
// (deny_read forbids writing too).
func withDenies(p Profile, read, write []string) Profile {
	read = sortedUnique(read)
	var w []string
	for _, s := range sortedUnique(write) {
		if !slices.Contains(read, s) {
			w = append(w, s)
		}
	}
	if len(read) == 0 && len(w) == 0 {
		return p
	}
	fs := FileSystem{}
	if p.FileSystem != nil {
		fs = *p.FileSystem
	}
	fs.DenyRead, fs.DenyWrite = read, w
	p.FileSystem = &fs
	return p
}

func sortedUnique(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}
