package fspath

import (
	"path"
	"regexp"
	"strings"
	"testing"
)

func TestParseGlob(t *testing.T) {
	tests := []struct {
		name, in, want, err string
	}{
		{"relative", "**/.env", "**/.env", ""},
		{"absolute", "/home/*/.ssh", "/home/*/.ssh", ""},
		{"trailing slash", "/home/*/.ssh/", "/home/*/.ssh", ""},
		{"double star folded", "a/**/**/b", "a/**/b", ""},
		{"class", "*.[ch]", "*.[ch]", ""},
		{"literal", "sub/.env", "sub/.env", ""},
		{"empty", "", "", "empty pattern"},
		{"root only", "/", "", "names no path"},
		{"empty component", "a//b", "", "empty component"},
		{"dot dot", "a/../b", "", `".." component`},
		{"dot", "./a", "", `"." component`},
		{"star star inside", "a**/b", "", "whole path component"},
		{"bad class", "[a-", "", "syntax error"},
		{"backslash in class", `[\]]`, "", "character class"},
		{"trailing backslash", `a\`, "", "syntax error"},
		{"NUL", "a\x00b", "", "NUL"},
		{"too long", strings.Repeat("a", MaxGlobLen+1), "", "longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := ParseGlob(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ParseGlob(%q) = %v, %v; want error containing %q", tt.in, g, err, tt.err)
				}
				return
			}
			if err != nil || g.String() != tt.want {
				t.Fatalf("ParseGlob(%q) = %q, %v; want %q", tt.in, g, err, tt.want)
			}
		})
	}
}

// globCases are shared by the matcher and the regex translation: both
// must give the same answer.
var globCases = []struct {
	pattern, path string
	want          bool
}{
	{"/w/**/.env", "/w/.env", true},
	{"/w/**/.env", "/w/sub/.env", true},
	{"/w/**/.env", "/w/a/b/c/.env", true},
	{"/w/**/.env", "/w/sub/env", false},
	{"/w/**/.env", "/w/sub/.env.example", false},
	{"/w/**/.env", "/w/.env/x", false},
	{"/w/**/.env", "/x/.env", false},
	{"/w/**/.env", "/wx/.env", false},
	{"/home/*/.ssh", "/home/u/.ssh", true},
	{"/home/*/.ssh", "/home/.ssh", false},
	{"/home/*/.ssh", "/home/u/v/.ssh", false},
	{"/w/*.key", "/w/.hidden.key", true},
	{"/w/*.key", "/w/a/b.key", false},
	{"/w/?.txt", "/w/a.txt", true},
	{"/w/?.txt", "/w/ab.txt", false},
	{"/w/*.[ch]", "/w/x.c", true},
	{"/w/*.[ch]", "/w/x.o", false},
	{"/w/[^a]", "/w/b", true},
	{"/w/[^a]", "/w/a", false},
	{"/w/secrets/**", "/w/secrets", true},
	{"/w/secrets/**", "/w/secrets/a/b", true},
	{"/w/secrets/**", "/w/secretsx", false},
	{"/**", "/anything/at/all", true},
	{"/w/**/a/**/b", "/w/x/a/y/z/b", true},
	{"/w/**/a/**/b", "/w/x/a/y/z/c", false},
	{`/w/\*`, "/w/*", true},
	{`/w/\*`, "/w/x", false},
	{"/w/a.b", "/w/aXb", false},
	{"/w/(x)", "/w/(x)", true},
}

func TestGlobMatch(t *testing.T) {
	for _, tt := range globCases {
		if got := MustGlob(tt.pattern).Match(tt.path); got != tt.want {
			t.Errorf("%q.Match(%q) = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
	if MustGlob("**/.env").Match("/w/.env") {
		t.Error("a relative pattern matched an absolute path without Under")
	}
}

func TestGlobRegex(t *testing.T) {
	for _, tt := range globCases {
		re := MustGlob(tt.pattern).Regex()
		got := regexp.MustCompilePOSIX(re).MatchString(tt.path)
		if got != tt.want {
			t.Errorf("%q as %q matches %q: %v, want %v", tt.pattern, re, tt.path, got, tt.want)
		}
	}
}

func TestGlobUnder(t *testing.T) {
	tests := []struct{ pattern, root, want string }{
		{"**/.env", "/w", "/w/**/.env"},
		{"sub/.env", "/w/x", "/w/x/sub/.env"},
		{"/abs/*", "/w", "/abs/*"},
		{"*.key", "/odd*root", `/odd\*root/*.key`},
	}
	for _, tt := range tests {
		g := MustGlob(tt.pattern).Under(tt.root)
		if g.String() != tt.want {
			t.Errorf("%q.Under(%q) = %q, want %q", tt.pattern, tt.root, g, tt.want)
		}
	}
	if !MustGlob("*.key").Under("/odd*root").Match("/odd*root/a.key") || MustGlob("*.key").Under("/odd*root").Match("/oddXroot/a.key") {
		t.Error("a root's own * is a wildcard")
	}
}

func TestGlobPrefix(t *testing.T) {
	tests := []struct{ pattern, want string }{
		{"/w/**/.env", "/w"},
		{"/home/*/.ssh", "/home"},
		{"/w/sub/.env", "/w/sub"},
		{"/**", "/"},
		{`/w/\*/x`, "/w"},
	}
	for _, tt := range tests {
		if got := MustGlob(tt.pattern).Prefix(); got != tt.want {
			t.Errorf("%q.Prefix() = %q, want %q", tt.pattern, got, tt.want)
		}
	}
}

// FuzzGlobMatch: the matcher never panics, and it agrees with the regex
// translation Seatbelt receives.
func FuzzGlobMatch(f *testing.F) {
	for _, c := range globCases {
		f.Add(c.pattern, c.path)
	}
	f.Fuzz(func(t *testing.T, pattern, p string) {
		g, err := ParseGlob(pattern)
		if err != nil || !g.IsAbs() || !strings.HasPrefix(p, "/") || strings.Contains(p, "//") || strings.HasSuffix(p, "/") || strings.ContainsAny(p, "\x00\n") {
			// Go's POSIX mode anchors ^ and $ at newlines: not Seatbelt's meaning.
			return
		}
		re, err := regexp.CompilePOSIX(g.Regex())
		if err != nil {
			t.Fatalf("%q: regex %q: %v", pattern, g.Regex(), err)
		}
		if a, b := g.Match(p), re.MatchString(p); a != b {
			t.Fatalf("%q vs %q: Match %v, regex %q %v", pattern, p, a, g.Regex(), b)
		}
	})
}

func TestGlobMayMatchBelow(t *testing.T) {
	tests := []struct {
		pattern, dir string
		want         bool
	}{
		{"/w/**/.env", "/w", true},
		{"/w/**/.env", "/w/a/b", true},
		{"/w/**/.env", "/x", false},
		{"/w/**/.env", "/", true},
		{"/home/*/.ssh", "/home", true},
		{"/home/*/.ssh", "/home/u", true},
		{"/home/*/.ssh", "/home/u/.ssh", false},
		{"/home/*/.ssh", "/home/u/other", false},
		{"/w/sub/.env", "/w/other", false},
		{"/w/sub/.env", "/w/sub", true},
		{"/w/secrets/**", "/w/secrets/x", true},
	}
	for _, tt := range tests {
		if got := MustGlob(tt.pattern).MayMatchBelow(tt.dir); got != tt.want {
			t.Errorf("%q.MayMatchBelow(%q) = %v, want %v", tt.pattern, tt.dir, got, tt.want)
		}
	}
}

func FuzzMatchName(f *testing.F) {
	f.Add("*TOKEN*", "GH_TOKEN")
	f.Add("A*B*", "AB")
	f.Fuzz(func(t *testing.T, p, n string) {
		want, err := path.Match(p, n)
		if err != nil {
			return
		}
		if got := MatchName(p, n); got != want {
			t.Errorf("MatchName(%q, %q) = %v, path.Match says %v", p, n, got, want)
		}
	})
}

// MatchName must agree with path.Match, which it replaces for speed.
func TestMatchName(t *testing.T) {
	pats := []string{"*TOKEN*", "TOKEN", "*KEY", "KEY*", "A*B*C", "*", "**", "A**B", "*A*A*", "", "X?Y", "[AB]*", `A\*`}
	names := []string{"", "TOKEN", "GH_TOKEN", "TOKENS", "KEY", "SSH_KEY", "KEYRING", "ABC", "AXBXC", "AC", "ABBC", "AA", "AXA", "A", "XZY", "BOB", "A*"}
	for _, p := range pats {
		for _, n := range names {
			want, _ := path.Match(p, n)
			if got := MatchName(p, n); got != want {
				t.Errorf("MatchName(%q, %q) = %v, path.Match says %v", p, n, got, want)
			}
		}
	}
}
