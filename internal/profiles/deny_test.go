package profiles

import (
	"slices"
	"strings"
	"testing"
)

func TestDenyPatternsNormalize(t *testing.T) {
	tests := []struct {
		name      string
		json      string
		read, wrt []string
		err       string
	}{
		{"relative and absolute", `{"file_system": {"deny_read": ["**/.env", "/home/*/.ssh/"], "deny_write": ["*.lock"]}}`,
			[]string{"**/.env", "/home/*/.ssh"}, []string{"*.lock"}, ""},
		{"repeats folded, deny_read wins", `{"file_system": {"deny_read": ["**/.env", "**/.env"], "deny_write": ["**/.env"]}}`,
			[]string{"**/.env"}, nil, ""},
		{"bad read pattern", `{"file_system": {"deny_read": ["ok", "[a-"]}}`, nil, nil, "file_system.deny_read[1]"},
		{"bad write pattern", `{"file_system": {"deny_write": ["a/../b"]}}`, nil, nil, "file_system.deny_write[0]"},
		{"empty pattern", `{"file_system": {"deny_write": [""]}}`, nil, nil, "file_system.deny_write[0]: empty pattern"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := DecodeProfile([]byte(tt.json))
			if err == nil {
				p, err = p.Normalize("/")
			}
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.DenyReadPatterns(), tt.read) || !slices.Equal(p.DenyWritePatterns(), tt.wrt) {
				t.Errorf("deny_read %q deny_write %q, want %q %q", p.DenyReadPatterns(), p.DenyWritePatterns(), tt.read, tt.wrt)
			}
			if !p.IsEmpty() {
				t.Errorf("a profile of denies only asks for something: %+v", p)
			}
		})
	}
}

func TestDenyPatternsStrictDecode(t *testing.T) {
	for _, in := range []string{
		`{"file_system": {"deny_read": ["a"], "deny_read": ["b"]}}`,
		`{"file_system": {"DENY_READ": ["a"]}}`,
		`{"file_system": {"deny_reads": ["a"]}}`,
		`{"file_system": {"deny_read": "a"}}`,
	} {
		if _, err := DecodeProfile([]byte(in)); err == nil {
			t.Errorf("%s decoded", in)
		}
	}
}

// TestDenyPatternsOnlyNarrow: merging and intersecting keep every deny
// of every side, and denies never add a path to read or write.
func TestDenyPatternsOnlyNarrow(t *testing.T) {
	a := Profile{FileSystem: &FileSystem{Write: []string{"/w"}, DenyRead: []string{"**/.env"}}}
	b := Profile{FileSystem: &FileSystem{DenyWrite: []string{"/w/*.lock"}, DenyRead: []string{"/home/*/.ssh"}}}
	m := Merge(a, b)
	if !slices.Equal(m.DenyReadPatterns(), []string{"**/.env", "/home/*/.ssh"}) || !slices.Equal(m.DenyWritePatterns(), []string{"/w/*.lock"}) {
		t.Errorf("Merge denies %+v", m.FileSystem)
	}
	if !slices.Equal(m.WritePaths(), []string{"/w"}) || len(m.ReadPaths()) != 0 {
		t.Errorf("Merge paths %+v", m.FileSystem)
	}
	requested := Profile{FileSystem: &FileSystem{Write: []string{"/w"}, DenyRead: []string{"**/.env"}}}
	granted := Profile{FileSystem: &FileSystem{Write: []string{"/w"}, DenyWrite: []string{"*.pem"}}}
	in := Intersect(requested, granted)
	if !slices.Equal(in.DenyReadPatterns(), []string{"**/.env"}) || !slices.Equal(in.DenyWritePatterns(), []string{"*.pem"}) {
		t.Errorf("Intersect dropped a deny: %+v", in.FileSystem)
	}
	// A grant of denies only grants nothing.
	if g := Intersect(requested, b); len(g.WritePaths()) != 0 || !g.IsEmpty() {
		t.Errorf("Intersect with a deny-only grant granted %+v", g.FileSystem)
	}
}
