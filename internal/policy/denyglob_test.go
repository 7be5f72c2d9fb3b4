package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/profiles"
)

// denyTree makes root/{.env, sub/.env, sub/env, deep/a/b/.env, link -> sub}.
func denyTree(t *testing.T) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"sub", "deep/a/b"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{".env", "sub/.env", "sub/env", "deep/a/b/.env"} {
		if err := os.WriteFile(filepath.Join(root, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(root, "sub"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestExpandDenies(t *testing.T) {
	root := denyTree(t)
	other := t.TempDir()
	pol := Policy{Mode: profiles.WorkspaceWrite, WriteRoots: []string{root, other, "/"}}
	exp := ExpandDenies(pol, root, []string{"**/.env"}, []string{"sub/env", "/nonexistent/*/x"}, DenyScanLimit)
	wantRead := []string{filepath.Join(root, ".env"), filepath.Join(root, "deep/a/b/.env"), filepath.Join(root, "sub/.env")}
	slices.Sort(exp.Read)
	if !slices.Equal(exp.Read, wantRead) {
		t.Errorf("read matches %q, want %q (symlinks not followed)", exp.Read, wantRead)
	}
	if !slices.Equal(exp.Write, []string{filepath.Join(root, "sub/env")}) {
		t.Errorf("write matches %q", exp.Write)
	}
	var pats []string
	for _, g := range exp.Globs {
		pats = append(pats, string(g.Access)+" "+g.Pattern)
	}
	// Relative patterns are anchored at the cwd and each write root but
	// "/"; an absolute one once.
	want := []string{"read " + root + "/**/.env", "read " + other + "/**/.env", "write " + root + "/sub/env", "write " + other + "/sub/env", "write /nonexistent/*/x"}
	if !slices.Equal(pats, want) {
		t.Errorf("anchored %q, want %q", pats, want)
	}
	if len(exp.Unscanned) != 0 {
		t.Errorf("unscanned %+v: a missing prefix is nothing to find", exp.Unscanned)
	}
}

// TestExpandDeniesBound: past the bound the pattern is reported, never
// skipped silently.
func TestExpandDeniesBound(t *testing.T) {
	root := denyTree(t)
	pol := Policy{Mode: profiles.WorkspaceWrite, WriteRoots: []string{root}}
	exp := ExpandDenies(pol, root, []string{"**/.env"}, nil, 3)
	if len(exp.Unscanned) != 1 || exp.Unscanned[0].Path != "**/.env" || !strings.Contains(exp.Unscanned[0].Reason, "more than 3") {
		t.Errorf("unscanned %+v, want **/.env past the bound of 3", exp.Unscanned)
	}
	// A pattern whose walk is pruned early stays within a small bound.
	exp = ExpandDenies(pol, root, []string{"sub/.env"}, nil, 3)
	if len(exp.Unscanned) != 0 || !slices.Equal(exp.Read, []string{filepath.Join(root, "sub/.env")}) {
		t.Errorf("sub/.env: read %q unscanned %+v", exp.Read, exp.Unscanned)
	}
}

// TestExpandDeniesUnreadable: a directory the walk cannot read is reported
// (a command running as the same user may still reach names inside it).
func TestExpandDeniesUnreadable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads every directory")
	}
	root := denyTree(t)
	locked := filepath.Join(root, "locked")
	if err := os.Mkdir(locked, 0o311); err != nil {
		t.Fatal(err)
	}
	exp := ExpandDenies(Policy{WriteRoots: []string{root}}, root, []string{"**/.env"}, nil, DenyScanLimit)
	if len(exp.Unscanned) != 1 || !strings.Contains(exp.Unscanned[0].Reason, locked) {
		t.Errorf("unscanned %+v, want %s reported", exp.Unscanned, locked)
	}
}

func TestMatchDenyGlobs(t *testing.T) {
	globs := []DenyGlob{
		{Pattern: "/w/**/.env", Given: "**/.env", Access: DenyWrite},
		{Pattern: "/w/**/secrets", Given: "**/secrets", Access: DenyRead},
	}
	tests := []struct {
		path  string
		reads bool
		want  string
	}{
		{"/w/a/.env", false, "**/.env"},
		{"/w/a/.env", true, ""}, // deny_write lets reading through
		{"/w/secrets/key", true, "**/secrets"},
		{"/w/secrets/key", false, "**/secrets"},
		{"/w/env", false, ""},
		{"/x/.env", false, ""},
	}
	for _, tt := range tests {
		d, ok := MatchDenyGlobs(globs, tt.path, tt.reads)
		if ok != (tt.want != "") || d.Given != tt.want {
			t.Errorf("MatchDenyGlobs(%q, reads %v) = %q %v, want %q", tt.path, tt.reads, d.Given, ok, tt.want)
		}
	}
}

// BenchmarkExpandDenies: the walk of a 5,100-entry workspace (100
// directories of 50 files) for **/.env.
func BenchmarkExpandDenies(b *testing.B) {
	root := b.TempDir()
	for d := 0; d < 100; d++ {
		dir := filepath.Join(root, "d"+strconv.Itoa(d))
		if err := os.Mkdir(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := 0; f < 50; f++ {
			if err := os.WriteFile(filepath.Join(dir, "f"+strconv.Itoa(f)), nil, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	pol := Policy{WriteRoots: []string{root}}
	b.ResetTimer()
	for b.Loop() {
		ExpandDenies(pol, root, []string{"**/.env"}, nil, DenyScanLimit)
	}
}
