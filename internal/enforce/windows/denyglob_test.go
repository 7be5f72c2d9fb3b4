package windows

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// TestCompileDenyGlobs: an existing deny_write match is a deny ACE as any
// carve-out; creating new matches is reported, and so is an unscanned
// pattern.
func TestCompileDenyGlobs(t *testing.T) {
	root, _, _ := project(t)
	pol := build(t, policy.Request{Mode: profiles.WorkspaceWrite, Cwd: root})
	exp := policy.ExpandDenies(pol, root, nil, []string{".git"}, policy.DenyScanLimit)
	pol.CarveOuts = append(pol.CarveOuts, exp.Write...)
	pol.DenyGlobs = exp.Globs
	pol.DenyUnscanned = []policy.SkippedPath{{Path: "**/.env", Reason: "too many entries"}}
	p, err := Compile(pol, Options{CallSID: sid})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(p.Downgrades, func(d report.Downgrade) bool { return d.Feature == "deny-glob-create" })
	if i < 0 || !strings.Contains(p.Downgrades[i].Reason, filepath.Join(root, ".git")) {
		t.Errorf("downgrades %v: want deny-glob-create naming the anchored pattern", p.Downgrades)
	}
	if !slices.Contains(features(p.Downgrades), "deny-glob-scan") {
		t.Errorf("downgrades %v: want deny-glob-scan", p.Downgrades)
	}
	if !slices.ContainsFunc(p.ACEs, func(a ACE) bool { return a.Kind == Deny && a.Path == filepath.Join(root, ".git") }) {
		t.Errorf("ACEs %v: want a deny ACE for the existing match", p.ACEs)
	}
}
