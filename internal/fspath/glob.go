package fspath

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode/utf8"
)

// Glob is a path pattern of a deny entry (deny_read, deny_write), as
// newer Codex profiles carry them: "**/.env", "/home/*/.ssh".
//
// Syntax, one path component at a time:
//
//   - "*" matches any run of characters within a component (names that
//     start with "." too, unlike a shell), "?" one character, "[a-z]" and
//     "[^a-z]" a class, "\x" the character x: path.Match's syntax;
//   - a component "**" matches any number of components, none included;
//     "**" inside a longer component is an error.
//
// An absolute pattern names paths from "/"; a relative one is matched
// below a root (Under): the call's cwd and each writable root. "." and
// ".." components and empty ones ("a//b") are errors: a pattern names
// paths as they are spelled once resolved, never a way to walk up.
type Glob struct {
	abs   bool
	comps []string
}

// MaxGlobLen bounds a pattern's length; longer ones are refused.
const MaxGlobLen = 4096

// IsGlob reports whether s has a wildcard ("*", "?" or "[") and so is a
// pattern rather than a literal path.
func IsGlob(s string) bool { return strings.ContainsAny(s, "*?[") }

// ParseGlob validates and parses a pattern. The errors say what is wrong
// with it; callers wrap them in a FieldError naming the field.
func ParseGlob(s string) (Glob, error) {
	switch {
	case s == "":
		return Glob{}, errors.New("empty pattern")
	case len(s) > MaxGlobLen:
		return Glob{}, fmt.Errorf("pattern longer than %d bytes", MaxGlobLen)
	case strings.ContainsRune(s, 0):
		return Glob{}, errors.New("pattern contains a NUL byte")
	case !utf8.ValidString(s):
		// Strings are exact (DESIGN.md invariant 9): the matcher compares
		// bytes, the regex Seatbelt gets runes, and an invalid byte would
		// mean one thing to each (FuzzGlobMatch found "/\xc9").
		return Glob{}, errors.New("pattern is not valid UTF-8")
	}
	g := Glob{abs: strings.HasPrefix(s, "/")}
	body := strings.TrimSuffix(strings.TrimPrefix(s, "/"), "/")
	if body == "" {
		return Glob{}, fmt.Errorf("%q names no path below /", s)
	}
	for _, c := range strings.Split(body, "/") {
		switch {
		case c == "":
			return Glob{}, fmt.Errorf("%q has an empty component", s)
		case c == "." || c == "..":
			return Glob{}, fmt.Errorf("%q has a %q component", s, c)
		case c == "**":
			if n := len(g.comps); n > 0 && g.comps[n-1] == "**" {
				continue // "**/**" is "**"
			}
		case strings.Contains(c, "**"):
			return Glob{}, fmt.Errorf("%q: ** must be a whole path component", s)
		default:
			if _, err := path.Match(c, ""); err != nil {
				return Glob{}, fmt.Errorf("%q: bad component %q: %w", s, c, err)
			}
			if err := checkClasses(c); err != nil {
				return Glob{}, fmt.Errorf("%q: bad component %q: %w", s, c, err)
			}
		}
		g.comps = append(g.comps, c)
	}
	return g, nil
}

// checkClasses refuses "\\" and "[" inside a character class: path.Match
// takes them, but their meaning differs between glob and regex bracket
// expressions, and a class is only worth having while it translates
// exactly (Regex).
func checkClasses(c string) error {
	for i := 0; i < len(c); i++ {
		switch c[i] {
		case '\\':
			i++
		case '[':
			j := strings.IndexByte(c[i+1:], ']')
			if j == 0 && strings.HasPrefix(c[i+1:], "]") || strings.ContainsAny(c[i+1:i+1+j], `\\[`) {
				return errors.New(`a character class may not hold "\\", "[" or a leading "]"`)
			}
			if strings.HasPrefix(c[i+1:], "^]") {
				return errors.New("empty character class")
			}
			i += j + 1
		}
	}
	return nil
}

// MustGlob is ParseGlob for patterns known to be valid (tests, tables).
func MustGlob(s string) Glob {
	g, err := ParseGlob(s)
	if err != nil {
		panic(err)
	}
	return g
}

// String is the canonical spelling: no trailing slash, "**/**" folded.
func (g Glob) String() string {
	s := strings.Join(g.comps, "/")
	if g.abs {
		return "/" + s
	}
	return s
}

// IsAbs reports whether the pattern is absolute.
func (g Glob) IsAbs() bool { return g.abs }

// HasWildcard reports whether any component is a wildcard (else the
// pattern names one path).
func (g Glob) HasWildcard() bool {
	for _, c := range g.comps {
		if IsGlob(c) {
			return true
		}
	}
	return false
}

// Under returns the relative pattern g anchored at root (absolute, clean);
// an absolute g is returned as it is.
func (g Glob) Under(root string) Glob {
	if g.abs {
		return g
	}
	out := Glob{abs: true}
	for _, c := range strings.Split(strings.TrimPrefix(root, "/"), "/") {
		if c != "" {
			// Literal components of a root are escaped, so that a root
			// with "*" in its name means itself.
			out.comps = append(out.comps, escapeGlob(c))
		}
	}
	out.comps = append(out.comps, g.comps...)
	return out
}

func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Prefix is the longest literal directory the pattern's matches lie in:
// where a walk for them starts ("/" when the first component is a
// wildcard). Only for an absolute pattern.
func (g Glob) Prefix() string {
	var lit []string
	for _, c := range g.comps[:len(g.comps)-1] {
		if IsGlob(c) || strings.Contains(c, `\`) {
			break
		}
		lit = append(lit, c)
	}
	return "/" + strings.Join(lit, "/")
}

// Match reports whether the absolute, clean path p matches the absolute
// pattern g. A relative g matches nothing: anchor it first (Under).
//
// "**" is matched as "*" is in a string, one component at a time: the last
// "**" seen is the only backtracking point, so the cost is at most the
// product of the two lengths, whatever the pattern.
func (g Glob) Match(p string) bool {
	if !g.abs || !strings.HasPrefix(p, "/") {
		return false
	}
	// Most patterns end in a literal name (**/.env): most paths fail on
	// their last component, which costs no split.
	if n := len(g.comps); n > 0 {
		if last := g.comps[n-1]; last != "**" && !IsGlob(last) && !strings.Contains(last, `\`) && p[strings.LastIndexByte(p, '/')+1:] != last {
			return false
		}
	}
	var pc []string
	if p != "/" {
		pc = strings.Split(p[1:], "/")
	}
	gc := g.comps
	i, j := 0, 0
	star, mark := -1, 0
	for i < len(pc) {
		switch {
		case j < len(gc) && gc[j] == "**":
			star, mark = j, i
			j++
		case j < len(gc) && matchComponent(gc[j], pc[i]):
			i++
			j++
		case star >= 0:
			// Let the last "**" take one more component.
			mark++
			i, j = mark, star+1
		default:
			return false
		}
	}
	for j < len(gc) && gc[j] == "**" {
		j++
	}
	return j == len(gc)
}

// matchComponent is path.Match of one component, through the name
// matcher (MatchName: a fast path for patterns whose only wildcard is
// "*", fuzzed against path.Match).
func matchComponent(pat, name string) bool { return MatchName(pat, name) }

// Regex is the pattern as an anchored POSIX extended regular expression
// over whole paths, for Seatbelt's (regex ...) filter. Only for an
// absolute pattern.
func (g Glob) Regex() string {
	var b strings.Builder
	b.WriteString("^")
	for _, c := range g.comps {
		if c == "**" {
			// Any number of whole components, each "/name"; never ".",
			// which engines disagree on for a newline.
			b.WriteString("(/[^/]+)*")
			continue
		}
		b.WriteString("/")
		b.WriteString(componentRegex(c))
	}
	if len(g.comps) == 0 {
		b.WriteString("/")
	}
	b.WriteString("$")
	return b.String()
}

// componentRegex translates one path.Match component; it never matches
// "/". c must be valid (ParseGlob checked it).
func componentRegex(c string) string {
	var b strings.Builder
	for i := 0; i < len(c); i++ {
		switch ch := c[i]; ch {
		case '*':
			b.WriteString("[^/]*")
		case '?':
			b.WriteString("[^/]")
		case '\\':
			i++
			b.WriteString(regexQuote(c[i]))
		case '[':
			// ParseGlob allows neither "\\" nor "[" in a class, so its
			// text means the same in a bracket expression.
			j := strings.IndexByte(c[i:], ']') + i
			body := c[i+1 : j]
			b.WriteByte('[')
			if neg, ok := strings.CutPrefix(body, "^"); ok {
				b.WriteString("^" + neg + "/")
			} else {
				b.WriteString(body)
			}
			b.WriteByte(']')
			i = j
		default:
			b.WriteString(regexQuote(ch))
		}
	}
	return b.String()
}

func regexQuote(ch byte) string {
	if strings.IndexByte(`.^$|()[]{}*+?\`, ch) >= 0 {
		return `\` + string(ch)
	}
	return string(ch)
}

// MayMatchBelow reports whether a path strictly below the absolute, clean
// directory dir could match the absolute pattern g: a walk for matches
// need not enter dir otherwise. It simulates the pattern as an automaton
// over dir's components (states: how much of the pattern is matched), so
// its cost is the product of the two lengths.
func (g Glob) MayMatchBelow(dir string) bool {
	if !g.abs {
		return false
	}
	states := g.closure(map[int]bool{0: true})
	if dir != "/" {
		for _, c := range strings.Split(strings.TrimPrefix(dir, "/"), "/") {
			next := map[int]bool{}
			for j := range states {
				switch {
				case j == len(g.comps):
				case g.comps[j] == "**":
					next[j] = true
				case matchComponent(g.comps[j], c):
					next[j+1] = true
				}
			}
			if states = g.closure(next); len(states) == 0 {
				return false
			}
		}
	}
	for j := range states {
		if j < len(g.comps) {
			return true
		}
	}
	return false
}

// closure adds to states the ones a "**" reaches by matching nothing.
func (g Glob) closure(states map[int]bool) map[int]bool {
	for j := 0; j < len(g.comps); j++ {
		if states[j] && g.comps[j] == "**" {
			states[j+1] = true
		}
	}
	return states
}

// ResolveGlobPrefix resolves the symlinks of an absolute pattern's literal
// prefix (Glob.Prefix); a relative one is returned as it is.
func ResolveGlobPrefix(g Glob) Glob {
	if !g.IsAbs() {
		return g
	}
	prefix := g.Prefix()
	r := ResolveExisting(prefix)
	if r == prefix {
		return g
	}
	rest := strings.TrimPrefix(strings.TrimPrefix(g.String(), prefix), "/")
	if out, err := ParseGlob(strings.TrimSuffix(r, "/") + "/" + rest); err == nil {
		return out.escapedPrefix(len(strings.Split(strings.Trim(r, "/"), "/")))
	}
	return g
}

// escapedPrefix escapes the wildcard characters of the first n components,
// which came from a resolved literal path.
func (g Glob) escapedPrefix(n int) Glob {
	out := Glob{abs: g.abs, comps: slices.Clone(g.comps)}
	for i := 0; i < n && i < len(out.comps); i++ {
		out.comps[i] = escapeGlob(out.comps[i])
	}
	return out
}

// MatchName is path.Match for one name (a path component; profiles' secret
// check uses it for environment variable names), with a fast path for
// patterns whose only wildcard is '*' (all the built-in ones): path.Match
// retries every split of a '*', which made the secret check the costliest
// step of a call's set-up (~130 µs for 35 variables).
func MatchName(pat, name string) bool {
	if strings.ContainsAny(pat, `?[\`) || strings.Contains(name, "/") {
		ok, _ := path.Match(pat, name)
		return ok
	}
	first, rest, star := strings.Cut(pat, "*")
	if !star {
		return pat == name
	}
	if !strings.HasPrefix(name, first) {
		return false
	}
	name = name[len(first):]
	for {
		mid, more, star := strings.Cut(rest, "*")
		if !star {
			// mid is the last literal: it must end the name.
			return strings.HasSuffix(name, mid)
		}
		i := strings.Index(name, mid)
		if i < 0 {
			return false
		}
		name, rest = name[i+len(mid):], more
	}
}
