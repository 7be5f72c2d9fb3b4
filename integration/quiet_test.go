//go:build linux

package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// quietRetry is the report's retry as the fields this file judges, nil when
// the report has none.
func quietRetry(t *testing.T, rep *report) map[string]json.RawMessage {
	t.Helper()
	raw, ok := rep.raw["retry"]
	if !ok || string(raw) == "null" {
		return nil
	}
	var r map[string]json.RawMessage
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("retry %s: %v", raw, err)
	}
	return r
}

// TestQuietOnSuccess is issue 29's first case: a command that exits 0
// though the sandbox refused an optional write (git status and its
// index.lock) carries no retry, so a runtime that follows every retry asks
// its user for nothing; its denials stay listed, each tolerated (it did not
// fail the call). --retry-on-success (retry_on_success through sbx serve)
// asks for the retry all the same, and a command that fails gets it
// without asking. On the old code the first case had a retry (fails there).
func TestQuietOnSuccess(t *testing.T) {
	c := caps(t)
	outside := outsideDir(t)
	ws := workspace(t)
	if err := os.Mkdir(filepath.Join(ws, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Both optional writes are refused: the index lock in the existing
	// .git (kept read-only), and a file outside the writable roots.
	lock, other := filepath.Join(ws, ".git", "index.lock"), filepath.Join(outside, "state")
	script := func(exit string) []string {
		return []string{"/bin/sh", "-c", `echo > .git/index.lock 2>/dev/null; echo > "$1" 2>/dev/null; echo inside > inside.txt; exit ` + exit, "sh", other}
	}
	for _, tc := range []struct {
		name      string
		flags     []string
		exit      string
		wantRetry bool
	}{
		{"exit 0: no retry", nil, "0", false},
		{"exit 0, --retry-on-success: the retry", []string{"--retry-on-success"}, "0", true},
		{"exit 1: the retry", nil, "1", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(filepath.Join(ws, "inside.txt"))
			out, rep := run(t, ws, append(append([]string{}, wsWrite...), tc.flags...), script(tc.exit)...)
			if out.code != map[string]int{"0": 0, "1": 1}[tc.exit] {
				t.Fatalf("exit %d, want %s\nstderr: %s", out.code, tc.exit, out.stderr)
			}
			// What is allowed still works, what is not stays refused.
			wantContent(filepath.Join(ws, "inside.txt"), "inside\n")(t)
			wantAbsent(lock)(t)
			wantAbsent(other)(t)
			if !c.supervised {
				// No supervisor: nothing is reported, so nothing retries.
				if r := quietRetry(t, rep); r != nil {
					t.Errorf("a retry without denials: %s", rep.raw["retry"])
				}
				return
			}
			if !rep.denied("create", lock) || !rep.denied("create", other) {
				t.Fatalf("denials %+v, want the creates of %s and %s", rep.Denials, lock, other)
			}
			for _, d := range rep.Denials {
				if d.Tolerated != (tc.exit == "0") {
					t.Errorf("denial %+v: tolerated %v, want %v (the call exited %s)", d, d.Tolerated, tc.exit == "0", tc.exit)
				}
			}
			r := quietRetry(t, rep)
			if !tc.wantRetry {
				if r != nil {
					t.Errorf("a command that exited 0 has a retry: %s", rep.raw["retry"])
				}
				return
			}
			if r == nil || r["sandbox_permissions"] == nil {
				t.Errorf("retry %s, want one that asks for something", rep.raw["retry"])
			}
		})
	}
}

// TestQuietGitStatus runs git status itself in a repository under
// workspace-write: it exits 0, whatever it was refused (its index lock,
// when it refreshes the index), and carries no retry.
func TestQuietGitStatus(t *testing.T) {
	ws := workspace(t)
	gitRepo(t, ws)
	if err := os.WriteFile(filepath.Join(ws, "new.txt"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, rep := run(t, ws, wsWrite, "git", "-c", "safe.directory=*", "status", "--short")
	if out.code != 0 {
		t.Fatalf("git status: exit %d\nstderr: %s", out.code, out.stderr)
	}
	if out.stdout != "?? new.txt\n" {
		t.Errorf("git status: %q, want the untracked file", out.stdout)
	}
	for _, d := range rep.Denials {
		if !d.Tolerated {
			t.Errorf("denial %+v of a call that exited 0 is not tolerated", d)
		}
	}
	if r := quietRetry(t, rep); r != nil {
		t.Errorf("git status exited 0 with a retry: %s", rep.raw["retry"])
	}
}

// TestQuietExec is TestQuietOnSuccess through `sbx exec` (its own JSON
// path, not serve's): a request that exits 0 with a refused write has no
// retry, and "retry_on_success": true gives it, as a request to send again
// that keeps the key.
func TestQuietExec(t *testing.T) {
	c := caps(t)
	ws := workspace(t)
	other := filepath.Join(outsideDir(t), "state")
	req := func(extra string) string {
		return `{"command": ["sh", "-c", "echo > \"$1\" 2>/dev/null; echo ok", "sh", ` + jsonString(other) + `],
			"cwd": ` + jsonString(ws) + `, "sandbox_mode": "workspace-write"` + extra + `}`
	}
	for _, tc := range []struct {
		name, extra string
		wantRetry   bool
	}{
		{"no retry", "", false},
		{"retry_on_success", `, "retry_on_success": true`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, res := execJSON(t, ws, req(tc.extra))
			if res == nil || out.code != 0 {
				t.Fatalf("exit %d, stdout %s, stderr %s", out.code, out.stdout, out.stderr)
			}
			wantAbsent(other)(t)
			if !c.supervised {
				return
			}
			if !res.denied("create", other) || !res.Denials[0].Tolerated {
				t.Fatalf("denials %+v, want a tolerated create of %s", res.Denials, other)
			}
			r := quietRetry(t, res)
			if !tc.wantRetry {
				if r != nil {
					t.Errorf("a request that exited 0 has a retry: %s", res.raw["retry"])
				}
				return
			}
			var request map[string]any
			if r == nil || json.Unmarshal(r["request"], &request) != nil || request["retry_on_success"] != true {
				t.Errorf("retry %s, want a request that keeps retry_on_success", res.raw["retry"])
			}
		})
	}
}
