//go:build linux

package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunStrictReview: `sbx run --grants FILE` applies sticky grants
// without asking; with --strict-review the approver is asked even though
// the grants cover the call, and its answer decides (a rejection runs
// nothing). --strict-review without --grants would change nothing and is
// refused.
func TestRunStrictReview(t *testing.T) {
	ws := workspace(t)
	out := outsidePath(t)
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	grants := filepath.Join(t.TempDir(), "grants.json")
	g := `{"turn": {"file_system": {"write": [` + jsonString(out) + `]}}}`
	if err := os.WriteFile(grants, []byte(g), 0o644); err != nil {
		t.Fatal(err)
	}
	// The approver records what it was asked, then answers.
	approverFor := func(t *testing.T, outcome string) (argv, asked string) {
		dir := t.TempDir()
		asked = filepath.Join(dir, "asked.json")
		p := filepath.Join(dir, "approve.sh")
		script := "#!/bin/sh\ncat >" + asked + "\necho '{\"outcome\":\"" + outcome + "\"}'\n"
		if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		return p, asked
	}
	via := func(t *testing.T, rep *report) string {
		t.Helper()
		var perms struct {
			Via string `json:"via"`
		}
		if rep == nil || json.Unmarshal(rep.raw["permissions"], &perms) != nil {
			t.Fatalf("no permissions in the report: %+v", rep)
		}
		return perms.Via
	}
	base := append([]string{"--grants", grants}, wsOnly...)

	t.Run("covered-no-ask", func(t *testing.T) {
		approve, asked := approverFor(t, "allowed-once")
		target := filepath.Join(out, "plain")
		o, rep := run(t, ws, append([]string{"--approver", approve}, base...), "touch", target)
		if o.code != 0 {
			t.Fatalf("exit %d, want 0: %s", o.code, o.stderr)
		}
		if _, err := os.Stat(target); err != nil {
			t.Errorf("the command did not run: %v", err)
		}
		if _, err := os.Stat(asked); err == nil {
			t.Error("the approver was asked about a call the grants cover")
		}
		if v := via(t, rep); v != "grant" {
			t.Errorf("via %q, want grant", v)
		}
	})
	t.Run("strict-asks", func(t *testing.T) {
		approve, asked := approverFor(t, "allowed-once")
		target := filepath.Join(out, "strict")
		o, rep := run(t, ws, append([]string{"--strict-review", "--approver", approve}, base...), "touch", target)
		if o.code != 0 {
			t.Fatalf("exit %d, want 0: %s", o.code, o.stderr)
		}
		if _, err := os.Stat(target); err != nil {
			t.Errorf("the command did not run: %v", err)
		}
		b, err := os.ReadFile(asked)
		if err != nil {
			t.Fatalf("the approver was not asked under --strict-review: %v", err)
		}
		if !strings.Contains(string(b), jsonString(out)) {
			t.Errorf("the approver was not shown the grant it reviews: %s", b)
		}
		if v := via(t, rep); v != "approval" {
			t.Errorf("via %q, want approval", v)
		}
	})
	t.Run("strict-rejected", func(t *testing.T) {
		approve, asked := approverFor(t, "rejected")
		target := filepath.Join(out, "rejected")
		o, _ := run(t, ws, append([]string{"--strict-review", "--approver", approve}, base...), "touch", target)
		if o.code == 0 {
			t.Fatal("a call the approver rejected ran")
		}
		if _, err := os.Stat(asked); err != nil {
			t.Errorf("the approver was not asked: %v", err)
		}
		wantAbsent(target)(t)
	})
	t.Run("strict-without-grants", func(t *testing.T) {
		o, _ := run(t, ws, append([]string{"--strict-review"}, wsOnly...), "true")
		if o.code != 125 || !strings.Contains(o.stderr, "--strict-review") {
			t.Errorf("exit %d (%s), want 125 naming --strict-review", o.code, o.stderr)
		}
	})
	t.Run("bad-grants", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "bad.json")
		os.WriteFile(bad, []byte(`{"turn": {}, "TURN": {}}`), 0o644)
		o, _ := run(t, ws, append([]string{"--grants", bad}, wsOnly...), "true")
		if o.code != 125 || !strings.Contains(o.stderr, "--grants") {
			t.Errorf("exit %d (%s), want 125 naming --grants", o.code, o.stderr)
		}
	})
}
