package escalate

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/sbx-sandbox/sbx/internal/fspath"
	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/report"
	"github.com/sbx-sandbox/sbx/internal/tools"
)

// stableGrant returns what to grant so that target (a path that must be
// writable, outside the writable roots) is, or why nothing is offered. The
// grant is stable, so that one approval lets the whole operation through
// now and the next time, and one a person would grant:
//
//   - inside a tool's cache or state root (tools.Table, placed by the call's
//     environment), or a missing directory on the way to one: that root,
//     whole, even when it does not exist yet (sbx creates it on approval:
//     call.Prepare);
//   - elsewhere, the nearest existing directory (or the file written),
//     climbing past hash-named, dated and temporary names, which differ on
//     the next run;
//   - never HOME, one of its ancestors or "/", and never a place whose
//     contents run later outside the sandbox (a directory on PATH, a shell
//     startup file, git's global configuration: tools.Roots.Never).
func stableGrant(target, denied string, command []string, roots tools.Roots) (grant, refused string) {
	g := ""
	if r, ok := roots.Root(target); ok {
		g = r.Path
	} else if r, ok := roots.Root(denied); ok && denied != "" {
		// Making the root itself (mkdir $GOCACHE).
		g = r.Path
	} else if r, ok := onTheWay(denied, command, roots); ok {
		g = r.Path
	} else {
		g = nearestExisting(target)
		for unstableName(filepath.Base(g)) && !tooWide(filepath.Dir(g), roots.Home) {
			g = filepath.Dir(g)
		}
	}
	if tooWide(g, roots.Home) {
		what := "the whole file system"
		if g != "/" {
			what = "the whole home directory " + roots.Home
		}
		if g != "/" && g != roots.Home {
			what = g + ", a parent of the home directory"
		}
		return "", "the only grant that lets " + target + " through is " + what + ": not offered; grant a directory inside it"
	}
	if n, ok := roots.Never(g); ok {
		return "", "not offered: granting " + g + " lets the command write " + n.Path + " (" + n.Tool + "), whose contents run later outside the sandbox"
	}
	return g, ""
}

// onTheWay returns the table root that creating denied was a step towards
// (mkdir ~/.cache for ~/.cache/go-build): the only one below it, or the only
// one of the tools the command names (commandTools).
func onTheWay(denied string, command []string, roots tools.Roots) (tools.Root, bool) {
	below := roots.Below(denied)
	if len(below) == 1 {
		return below[0], true
	}
	var mine []tools.Root
	for _, r := range below {
		if slices.Contains(command, r.Tool) {
			mine = append(mine, r)
		}
	}
	if len(mine) == 1 {
		return mine[0], true
	}
	return tools.Root{}, false
}

// shells are the programs whose -c script commandTools reads; prefixes
// are the words that come before a simple command's program in one.
var (
	shells   = []string{"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh"}
	prefixes = []string{"if", "then", "else", "elif", "do", "while", "until", "time", "exec", "command", "env", "nice"}
)

// commandTools returns the tool names argv runs: its program's base name,
// without a version suffix (pip3, python3.11), with a python's -m module
// (python -m pip), and, when that program is a
// shell given a script with -c (a runtime's `bash -lc "go build ./..."`),
// the program of each simple command of the script (split at ; & | ( ) { }
// ! and newlines; past NAME=value assignments and prefixes such as env),
// named the same way. A name that is no tool of the table matches no root,
// so a word taken wrongly from a script can only narrow onTheWay's choice
// (or leave it ambiguous), never widen a grant.
func commandTools(argv []string) []string {
	if len(argv) == 0 {
		return nil
	}
	name := func(w string) string { return strings.TrimRight(filepath.Base(w), "0123456789.") }
	out := []string{name(argv[0])}
	if out[0] == "python" {
		// python -m pip: the module is the tool (an -m among the
		// options, before a script or the module's own arguments).
		for i := 1; i < len(argv)-1 && strings.HasPrefix(argv[i], "-"); i++ {
			if argv[i] == "-m" {
				return append(out, argv[i+1])
			}
		}
		return out
	}
	if !slices.Contains(shells, filepath.Base(argv[0])) {
		return out
	}
	script := ""
	for i := 1; i < len(argv)-1; i++ {
		f := argv[i]
		if !strings.HasPrefix(f, "-") || strings.HasPrefix(f, "--") {
			break
		}
		if strings.Contains(f[1:], "c") {
			script = argv[i+1]
			break
		}
	}
	for _, simple := range strings.FieldsFunc(script, func(r rune) bool { return strings.ContainsRune(";&|(){}!\n", r) }) {
		for _, w := range strings.Fields(simple) {
			if slices.Contains(prefixes, w) || (strings.Contains(w, "=") && !strings.HasPrefix(w, "=")) || strings.HasPrefix(w, "-") {
				continue
			}
			out = append(out, name(w))
			break
		}
	}
	return out
}

// tooWide reports whether granting p would grant the whole home directory
// or more.
func tooWide(p, home string) bool {
	return p == "/" || (home != "" && fspath.Within(home, p))
}

// Compiled on first use, not at package init: every sbx process (each
// `sbx run`, the stage) would otherwise pay ~0.1-0.3 ms for them (#31).
var (
	hexName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{2}$|^[0-9a-f]{8,}(-[a-z])?$`) })
	datedRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(19|20)\d\d[-_.][01]\d[-_.][0-3]\d|(^|\D)(19|20)\d\d[01]\d[0-3]\d(\D|$)`)
	})
	// A name that is only "tmp" or "temp" is not picked afresh: /tmp,
	// /var/tmp, a project's tmp/ are where temporary names are made, and
	// climbing past them granted /var for a file in /var/tmp/tmp_x.
	tempName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)^\.?(tmp|temp)[._-]|.\.(tmp|temp)$|^\.#|~$`) })
)

// unstableName reports whether a file name is one a tool picks afresh
// (a content hash, a date, a temporary name): granting it would not help
// the next run.
func unstableName(name string) bool {
	return hexName().MatchString(name) || datedRe().MatchString(name) || tempName().MatchString(name)
}

// gitNarrowable reports whether denial d, inside the read-only carve-out
// c, is a write into a repository's .git that the narrow grant lets
// through: c is an existing .git directory (policy.GitGrant) and d is in
// none of the entries that stay read-only under that grant.
func gitNarrowable(d report.Denial, c string) bool {
	if !policy.GitGrant(c) || d.Path == c {
		return false
	}
	for _, k := range policy.GitKeptReadOnly {
		if fspath.Within(d.Path, filepath.Join(c, k.Name)) {
			return false
		}
	}
	for _, k := range policy.GitKeptIfPresent {
		if fspath.Within(d.Path, filepath.Join(c, k.Name)) {
			return false
		}
	}
	return true
}

// withGitAlternative gives r, which opens gitDirs, the risk in its reason
// and the escalation as its alternative (Retry.Alternatives).
func withGitAlternative(r Retry, gitDirs, gitReasons []string) Retry {
	var kept []string
	for _, k := range policy.GitKeptReadOnly {
		kept = append(kept, k.Name)
	}
	for _, k := range policy.GitKeptIfPresent {
		kept = append(kept, k.Name)
	}
	r.Reason = "grants " + strings.Join(gitDirs, ", ") + " writable for this call, with " + strings.Join(kept, ", ") +
		" kept read-only (git add and git commit write none of them): the command can still rewrite this repository's index, objects, refs and history; the alternative is danger-full-access"
	sp, mode, empty := profiles.RequireEscalated, profiles.DangerFullAccess, ""
	var reasons []string
	for _, g := range gitReasons {
		reasons = append(reasons, g+": additional permissions cannot widen past a carve-out (the narrow grant opens it, with its hooks and configuration read-only)")
	}
	esc := Retry{SandboxPermissions: &sp, EscalateTo: &mode, Justification: &empty, Reason: strings.Join(dedupe(reasons), "; ")}
	r.Alternatives = []Retry{r, esc}
	return r
}
