package fspath

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// ResolvePath makes raw absolute against cwd, cleans it and resolves the
// symlinks of its longest existing prefix.
func ResolvePath(raw, cwd string) (string, error) {
	if raw == "" {
		return "", errors.New("empty path")
	}
	if strings.ContainsRune(raw, 0) {
		return "", errors.New("path contains a NUL byte")
	}
	p := raw
	if !filepath.IsAbs(p) {
		p = filepath.Join(cwd, p)
	}
	return ResolveExisting(filepath.Clean(p)), nil
}

// ResolveExisting resolves symlinks in the longest prefix of p that exists
// and appends the rest unchanged.
//
// The prefix is found by bisection: if a prefix does not resolve, no longer
// one does, and each EvalSymlinks costs a walk of the whole prefix, so trying
// every prefix from the longest down was quadratic in the number of
// components (a 20,000-component path in a guard file took 2.4 s, and the
// fuzzer found inputs that took longer).
func ResolveExisting(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	clean := filepath.Clean(p)
	root := "."
	if filepath.IsAbs(clean) {
		root = "/"
	}
	comps := strings.Split(strings.TrimPrefix(clean, "/"), "/")
	prefix := func(k int) string { return filepath.Join(append([]string{root}, comps[:k]...)...) }
	// Invariant: prefix(hi) does not resolve; prefix(lo) does, or lo is 0.
	lo, hi := 0, len(comps)
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if _, err := filepath.EvalSymlinks(prefix(mid)); err == nil {
			lo = mid
		} else {
			hi = mid
		}
	}
	r, err := filepath.EvalSymlinks(prefix(lo))
	if err != nil {
		return p
	}
	return filepath.Join(append([]string{r}, comps[lo:]...)...)
}

// Within reports whether p is base or below it. Both must be clean and absolute.
//
// IMPORTANT: it compares names, not files (DESIGN.md invariant 5). A hard
// link of a file under base, made elsewhere before the call, is not within
// base here; and a path resolved (ResolvePath) before the launch names what
// the file system held then. Only the kernel's rules, compiled from the
// same resolved lists, hold against a link or a swap made later.
func Within(p, base string) bool {
	if base == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == base || strings.HasPrefix(p, base+"/")
}

// CoveredBy reports whether p is within any of bases.
func CoveredBy(p string, bases []string) bool {
	for _, b := range bases {
		if Within(p, b) {
			return true
		}
	}
	return false
}

// WritableUnder reports whether p is inside one of writeRoots and none of
// carveOuts (the read-only paths inside them): whether a standing policy
// with those roots lets p be written. Every layer that asks it (the guard,
// the ladder's Missing, a grant's survival) asks here, so they agree with
// the rules compiled from the same lists.
func WritableUnder(p string, writeRoots, carveOuts []string) bool {
	return CoveredBy(p, writeRoots) && !CoveredBy(p, carveOuts)
}

// Exists reports whether path names an existing object (following symlinks).
func Exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
