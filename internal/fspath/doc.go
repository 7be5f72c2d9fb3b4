// Package fspath is the path algebra the policy and the backends share:
// resolving a request's path against its cwd and the symlinks of its
// longest existing prefix (ResolvePath, ResolveExisting), containment of
// clean absolute paths (Within, CoveredBy, WritableUnder), and the deny
// patterns of a profile (Glob: "**/.env", "/home/*/.ssh").
//
//	fspath.Within("/w/.git/config", "/w/.git")                 // true
//	fspath.WritableUnder("/w/.git/x", []string{"/w"}, []string{"/w/.git"}) // false
//	g, err := fspath.ParseGlob("**/.env")
//	g.Under("/w").Match("/w/a/.env") // true
//
// Guarantees: containment is by whole components ("/wx" is not within
// "/w"); a pattern names paths as they are spelled once resolved, never a
// way to walk up ("." and ".." components are refused). Paths name files,
// not inodes (DESIGN.md invariant 5): nothing here can see a hard link.
// The package holds no policy (what may be read or written is decided in
// profiles and policy) and is pure Go.
package fspath
