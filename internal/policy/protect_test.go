package policy

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// TestProtectedNames: every writable root keeps .git, .codex and .agents
// read-only by default, existing or not (a missing one is a carve-out the
// backend protects against creation); --protect adds a name, and
// --no-default-protect removes the defaults, which Policy.ProtectedNames
// says.
func TestProtectedNames(t *testing.T) {
	ws := t.TempDir()
	if err := os.Mkdir(filepath.Join(ws, ".agents"), 0o755); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	join := func(dir string, names ...string) []string {
		var out []string
		for _, n := range names {
			out = append(out, filepath.Join(dir, n))
		}
		return out
	}
	tests := []struct {
		name      string
		req       Request
		wantNames []string
		wantRO    []string
	}{
		{"defaults", Request{}, DefaultProtected, join(ws, ".git", ".codex", ".agents")},
		{"protect adds, without repeats", Request{Protect: []string{".env", ".git", ".env"}},
			[]string{".git", ".codex", ".agents", ".env"}, join(ws, ".git", ".codex", ".agents", ".env")},
		{"no defaults", Request{NoDefaultProtect: true}, nil, nil},
		{"no defaults, one name", Request{NoDefaultProtect: true, Protect: []string{".codex"}}, []string{".codex"}, join(ws, ".codex")},
		{"every writable root", Request{WritableRoots: []string{other}},
			DefaultProtected, append(join(ws, ".git", ".codex", ".agents"), join(other, ".git", ".codex", ".agents")...)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req
			req.Mode, req.Cwd, req.ExcludeTmp = profiles.WorkspaceWrite, ws, true
			pol, err := Build(req)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(pol.ProtectedNames, tc.wantNames) {
				t.Errorf("protected names %q, want %q", pol.ProtectedNames, tc.wantNames)
			}
			if !slices.Equal(pol.CarveOuts, tc.wantRO) {
				t.Errorf("read-only %q, want %q", pol.CarveOuts, tc.wantRO)
			}
		})
	}
	for _, bad := range []string{"", ".", "..", "a/b", "/abs", "x\x00y"} {
		_, err := Build(Request{Mode: profiles.WorkspaceWrite, Cwd: ws, ExcludeTmp: true, Protect: []string{".ok", bad}})
		var fe *strictjson.FieldError
		if !errors.As(err, &fe) || fe.Field != "protect[1]" {
			t.Errorf("protect %q: error %v, want a FieldError naming protect[1]", bad, err)
		}
	}
	// Read-only mode has no writable root, so nothing to protect.
	pol, err := Build(Request{Mode: profiles.ReadOnly, Cwd: ws})
	if err != nil || len(pol.CarveOuts) != 0 {
		t.Errorf("read-only mode: read-only %q, err %v; want none", pol.CarveOuts, err)
	}
}
