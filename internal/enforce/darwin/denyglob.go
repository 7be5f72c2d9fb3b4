package darwin

import (
	"strings"

	"github.com/sbx-sandbox/sbx/internal/fspath"
	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// seatbeltGlob is a deny pattern as the profile states it.
type seatbeltGlob struct {
	regex  string
	access policy.DenyAccess
	given  string
}

// canonicalGlobs translates the policy's anchored deny patterns into
// regexes over the paths Seatbelt sees (the literal prefix canonicalised as
// every other path is: /tmp is /private/tmp). Seatbelt checks a path
// against them at each access, in the kernel, so unlike mounts they cover
// names made during the call too and need no walk; the existing matches in
// Masked and ReadOnly are denied by their own rules besides.
//
// A pattern with a double quote cannot be written in an SBPL regex
// literal: it is left out and reported (its existing matches are still
// denied as paths).
func canonicalGlobs(pol policy.Policy, m PathMode) ([]seatbeltGlob, []report.Downgrade) {
	var out []seatbeltGlob
	var down []report.Downgrade
	for _, d := range pol.DenyGlobs {
		g := d.Glob()
		prefix := g.Prefix()
		c, err := canonical(prefix, m)
		if err == nil && c != prefix {
			rest := strings.TrimPrefix(strings.TrimPrefix(d.Pattern, prefix), "/")
			if cg, perr := fspath.ParseGlob(strings.TrimSuffix(c, "/") + "/" + rest); perr == nil {
				g = cg
			}
		}
		// A matching directory is denied with all it holds, as on Linux
		// (a mask or carve-out covers a whole tree).
		re := strings.TrimSuffix(g.Regex(), "$") + "(/[^/]+)*$"
		if strings.ContainsAny(re, "\"\n") {
			down = append(down, report.Downgrade{Feature: report.FeatureDenyGlobCreate,
				Reason: "deny pattern " + d.Pattern + " cannot be written as a Seatbelt regex: only its existing matches are denied"})
			continue
		}
		out = append(out, seatbeltGlob{regex: re, access: d.Access, given: d.Given})
	}
	return out, down
}

// writeDenyGlobs states the deny patterns, after every allow (the last
// matching rule decides): deny_read forbids reading, writing and running a
// matching path, deny_write writing it.
func writeDenyGlobs(w *profileWriter, globs []seatbeltGlob) {
	w.comment("== deny patterns: matching paths, existing or made during the call (last: they win)")
	for _, g := range globs {
		w.comment("deny_%s %s", g.access, g.given)
		ops := "file-write*"
		if g.access == policy.DenyRead {
			ops = "file-read* file-write* process-exec"
		}
		w.line("(deny " + ops + " (regex #\"" + g.regex + "\"))")
	}
}
