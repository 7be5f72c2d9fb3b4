package call

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/profiles"
)

// TestApplyGuardDenyPatterns: the existing matches of the guard's and the
// profile's patterns become guard paths (a mask for deny_read, a carve-out
// for deny_write), the anchored patterns reach the policy, the report names
// the pattern, and a danger-full-access call with a pattern is restricted.
func TestApplyGuardDenyPatterns(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(ws, "sub"), 0o755)
	for _, f := range []string{"sub/.env", "sub/key.pem", "sub/env"} {
		os.WriteFile(filepath.Join(ws, f), nil, 0o644)
	}
	final, err := policy.Build(policy.Request{Mode: profiles.WorkspaceWrite, Cwd: ws, ExcludeTmp: true, ExcludeTmpdir: true})
	if err != nil {
		t.Fatal(err)
	}
	guard := escalate.Guard{DenyReadGlobs: []string{"**/.env"}}
	add := profiles.Profile{FileSystem: &profiles.FileSystem{DenyWrite: []string{"**/*.pem"}}}
	a := applyGuard(guard, final, ws, add)
	if !slices.Contains(a.MaskRead, filepath.Join(ws, "sub/.env")) || slices.Contains(a.MaskRead, filepath.Join(ws, "sub/env")) {
		t.Errorf("mask_read %q", a.MaskRead)
	}
	if !slices.Contains(a.Policy.CarveOuts, filepath.Join(ws, "sub/key.pem")) {
		t.Errorf("read_only %q: the deny_write match is no carve-out", a.Policy.CarveOuts)
	}
	if len(a.Policy.DenyGlobs) != 2 {
		t.Errorf("deny_globs %+v", a.Policy.DenyGlobs)
	}
	named := false
	for _, r := range a.Removed {
		named = named || r.Path == filepath.Join(ws, "sub/key.pem") && strings.Contains(r.Reason, "deny_write pattern **/*.pem")
	}
	if !named {
		t.Errorf("removed %+v: want the pattern named", a.Removed)
	}
	full, err := policy.Build(policy.Request{Mode: profiles.DangerFullAccess, Cwd: ws})
	if err != nil {
		t.Fatal(err)
	}
	if a := applyGuard(escalate.Guard{}, full, ws, profiles.Profile{FileSystem: &profiles.FileSystem{DenyRead: []string{"nothing-matches-*"}}}); a.Policy.Unrestricted {
		t.Error("danger-full-access with a deny pattern stayed unrestricted")
	}
}
