package policy

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/fspath"
	"github.com/sbx-sandbox/sbx/internal/profiles"
)

// TestGitGrant: a granted .git is writable, its hooks, config, info,
// modules and worktrees stay carve-outs (missing or not), commondir only
// when it exists (a placeholder directory breaks git; GitAppeared lists it
// for removal after the call).
func TestGitGrant(t *testing.T) {
	ws := t.TempDir()
	git := filepath.Join(ws, ".git")
	if err := os.MkdirAll(filepath.Join(git, "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(git, "config"), nil, 0o644)
	os.WriteFile(filepath.Join(git, "config.worktree"), nil, 0o644)
	pol, err := Build(Request{Mode: profiles.WorkspaceWrite, Cwd: ws, ExcludeTmp: true, Additional: profiles.New(nil, nil, []string{git})})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(pol.CarveOuts, git) || !fspath.CoveredBy(git, pol.WriteRoots) {
		t.Errorf("carve-outs %q, write roots %q: want %s writable", pol.CarveOuts, pol.WriteRoots, git)
	}
	for _, name := range []string{"hooks", "config", "info", "modules", "worktrees", "config.worktree"} {
		if !slices.Contains(pol.CarveOuts, filepath.Join(git, name)) {
			t.Errorf("carve-outs %q lack %s", pol.CarveOuts, name)
		}
	}
	if slices.Contains(pol.CarveOuts, filepath.Join(git, "commondir")) {
		t.Errorf("a missing commondir is carved out (its placeholder breaks git)")
	}
	if got := GitAppeared(pol); !slices.Equal(got, []string{filepath.Join(git, "commondir")}) {
		t.Errorf("GitAppeared = %q, want the missing commondir", got)
	}
	// Without the grant .git stays one carve-out.
	pol, err = Build(Request{Mode: profiles.WorkspaceWrite, Cwd: ws, ExcludeTmp: true})
	if err != nil || !slices.Contains(pol.CarveOuts, git) || len(GitAppeared(pol)) != 0 {
		t.Errorf("no grant: %v, carve-outs %q", err, pol.CarveOuts)
	}
}
