//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestProtectedNames: .git, .codex and .agents stay read-only in every
// writable root by default, existing or not (agent configuration a model
// could otherwise rewrite to outlive the call); --protect NAME adds one;
// --no-default-protect removes the defaults, which the report says. The
// neighbours of a protected name stay writable, and nothing is left behind.
func TestProtectedNames(t *testing.T) {
	c := caps(t)
	ws := workspace(t)
	agents := filepath.Join(ws, ".agents")
	if err := os.Mkdir(agents, 0o755); err != nil {
		t.Fatal(err)
	}
	codex := filepath.Join(ws, ".codex")
	kernelOnly := append([]string{"--no-denial-reports"}, wsOnly...)

	refused := func(t *testing.T, args []string, op, path string) {
		t.Helper()
		r, rep := probe(t, ws, args, op, path)
		if r.OK {
			t.Errorf("%s %s succeeded in a protected name", op, path)
		}
		// Making a directory is a "create" in the denial vocabulary.
		if c.supervised && !rep.denied("create", path) {
			t.Errorf("%s %s was refused, but the report lists no such denial: %+v", op, path, rep.Denials)
		}
		if got := rep.Enforcement.ProtectedNames; !slices.Equal(got, []string{".git", ".codex", ".agents", ".env"}[:len(got)]) || len(got) < 3 {
			t.Errorf("report protected_names %q, want the defaults first", got)
		}
	}
	t.Run("existing", func(t *testing.T) {
		if !c.namespaces && !c.supervised {
			t.Skip("without namespaces or the supervisor an existing carve-out is not protected (reported as mountns)")
		}
		refused(t, wsOnly, "create", filepath.Join(agents, "AGENTS.md"))
		if c.namespaces {
			t.Run("kernel-only", func(t *testing.T) {
				r, _ := probe(t, ws, kernelOnly, "create", filepath.Join(agents, "AGENTS.md"))
				want(t, r, "EROFS")
			})
		}
		wantAbsent(filepath.Join(agents, "AGENTS.md"))(t)
	})
	t.Run("missing", func(t *testing.T) {
		if !c.namespaces && !c.supervised {
			t.Skip("without namespaces or the supervisor a missing carve-out can be created (reported as carve-out-create)")
		}
		refused(t, wsOnly, "mkdir", codex)
		if c.namespaces {
			t.Run("kernel-only", func(t *testing.T) {
				r, _ := probe(t, ws, kernelOnly, "mkdir", codex)
				want(t, r, "EEXIST") // the placeholder, bound read-only
				r, _ = probe(t, ws, kernelOnly, "create", filepath.Join(codex, "config.toml"))
				want(t, r, "EROFS")
			})
		}
		wantAbsent(codex)(t)
		// Its neighbour is an ordinary name.
		r, _ := probe(t, ws, wsOnly, "mkdir", filepath.Join(ws, "codex"))
		want(t, r, "")
	})
	t.Run("protect", func(t *testing.T) {
		if !c.namespaces && !c.supervised {
			t.Skip("without namespaces or the supervisor a missing carve-out can be created (reported as carve-out-create)")
		}
		env := filepath.Join(ws, ".env")
		refused(t, append([]string{"--protect", ".env"}, wsOnly...), "create", env)
		wantAbsent(env)(t)
		r, _ := probe(t, ws, wsOnly, "create", env)
		want(t, r, "")
	})
	t.Run("no-default-protect", func(t *testing.T) {
		args := append([]string{"--no-default-protect"}, wsOnly...)
		r, rep := probe(t, ws, args, "mkdir", codex)
		want(t, r, "")
		r, _ = probe(t, ws, args, "create", filepath.Join(agents, "AGENTS.md"))
		want(t, r, "")
		if rep.Enforcement.ProtectedNames != nil {
			t.Errorf("report protected_names %q, want none", rep.Enforcement.ProtectedNames)
		}
		// .git alone, by name.
		r, rep = probe(t, ws, append([]string{"--protect", ".git"}, args...), "mkdir", filepath.Join(ws, ".git"))
		if c.namespaces || c.supervised {
			if r.OK {
				t.Errorf("mkdir .git succeeded with --protect .git")
			}
		}
		if got := rep.Enforcement.ProtectedNames; !slices.Equal(got, []string{".git"}) {
			t.Errorf("report protected_names %q, want [.git]", got)
		}
	})
	t.Run("exec", func(t *testing.T) {
		if !c.namespaces && !c.supervised {
			t.Skip("without namespaces or the supervisor a missing carve-out can be created (reported as carve-out-create)")
		}
		env := filepath.Join(ws, ".env")
		os.Remove(env) // the protect subtest made it
		req := `{"command": [` + jsonString(probeBin) + `, "create", ` + jsonString(env) + `], "cwd": ` + jsonString(ws) +
			`, "sandbox_mode": "workspace-write", "exclude_tmp": true, "protect": [".env"]}`
		out, res := execJSON(t, ws, req)
		if res == nil || !strings.Contains(res.Stdout, `"ok":false`) {
			t.Errorf("sbx exec with protect [.env]: the create was not refused: exit %d stdout %q stderr %q", out.code, out.stdout, out.stderr)
		}
		if res != nil && !slices.Contains(res.Enforcement.ProtectedNames, ".env") {
			t.Errorf("protected_names %q lack .env", res.Enforcement.ProtectedNames)
		}
		wantAbsent(env)(t)
		out, _ = execJSON(t, ws, `{"command": ["true"], "cwd": `+jsonString(ws)+`, "sandbox_mode": "workspace-write", "protect": ["a/b"]}`)
		if out.code != 125 || !strings.Contains(out.stdout+out.stderr, "protect[0]") {
			t.Errorf("protect [a/b]: exit %d, stdout %q; want 125 naming protect[0]", out.code, out.stdout)
		}
	})
	t.Run("bad", func(t *testing.T) {
		for _, tc := range []struct {
			args  []string
			field string
		}{
			{[]string{"--protect", "a/b"}, "--protect[0]"},
			{[]string{"--protect", ".."}, "--protect[0]"},
			{[]string{"--protect", ".ok", "--protect", ""}, "--protect[1]"},
			{[]string{"--mode", "danger-full-access", "--protect", ".x"}, "--protect"},
			{[]string{"--mode", "read-only", "--no-default-protect"}, "--no-default-protect"},
		} {
			marker := filepath.Join(ws, "ran")
			out := sbx(t, opts{dir: ws, args: append(append(append([]string{"run"}, wsOnlyUnless(tc.args)...), tc.args...), "--", probeBin, "create", marker)})
			if out.code != 125 || !strings.Contains(out.stderr, tc.field) {
				t.Errorf("%q: exit %d, stderr %q; want 125 naming %s", tc.args, out.code, out.stderr, tc.field)
			}
			wantAbsent(marker)(t)
		}
	})
}

// wsOnlyUnless is wsOnly unless args choose their own mode.
func wsOnlyUnless(args []string) []string {
	if slices.Contains(args, "--mode") {
		return nil
	}
	return wsOnly
}
