//go:build linux

package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// denyGuard writes a guard with deny_read and deny_write entries.
func denyGuard(t *testing.T, read, write []string) string {
	t.Helper()
	b, err := json.Marshal(map[string][]string{"deny_read": read, "deny_write": write})
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, filepath.Join(t.TempDir(), "guard.json"), string(b))
}

// globWorkspace is a workspace with sub/.env (a secret), its neighbour
// sub/env and an empty directory other/.
func globWorkspace(t *testing.T) (ws, env, plain string) {
	t.Helper()
	ws = workspace(t)
	for _, d := range []string{"sub", "other"} {
		if err := os.Mkdir(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env = writeFile(t, filepath.Join(ws, "sub", ".env"), "secret\n")
	plain = writeFile(t, filepath.Join(ws, "sub", "env"), "plain\n")
	return ws, env, plain
}

// TestDenyGlobExisting: a relative deny pattern (**/.env) of the guard
// covers the existing matches under the workspace as a guard path does:
// deny_read hides sub/.env (it reads empty, or is refused by the
// supervisor without a mount namespace) and forbids writing it; deny_write
// lets it be read but not written. The neighbour sub/env stays readable
// and writable.
func TestDenyGlobExisting(t *testing.T) {
	c := caps(t)
	for _, access := range []string{"read", "write"} {
		t.Run("deny_"+access, func(t *testing.T) {
			if !c.namespaces && !c.supervised {
				t.Skip("without namespaces or the supervisor an existing match is not protected (reported as mask or mountns)")
			}
			ws, env, plain := globWorkspace(t)
			read, write := []string{"**/.env"}, []string(nil)
			if access == "write" {
				read, write = nil, read
			}
			flags := append(append([]string{}, wsOnly...), "--guard", denyGuard(t, read, write))
			r, rep := probe(t, ws, flags, "read", env)
			switch {
			case access == "write":
				want(t, r, "")
				if r.Detail != "read 7 bytes" {
					t.Errorf("read %s under deny_write: %s, want its 7 bytes", env, r.Detail)
				}
			case c.namespaces:
				want(t, r, "")
				if r.Detail != "read 0 bytes" {
					t.Errorf("read %s: %s, want 0 bytes (masked)", env, r.Detail)
				}
			default:
				want(t, r, "EACCES")
				if !strings.Contains(rep.degraded("mask"), env) {
					t.Errorf("degraded %+v, want mask naming %s", rep.Degraded, env)
				}
			}
			r, _ = probe(t, ws, flags, "write", env)
			if r.OK {
				t.Errorf("wrote %s under deny_%s", env, access)
			}
			r, _ = probe(t, ws, flags, "read", plain)
			want(t, r, "")
			if r.Detail != "read 6 bytes" {
				t.Errorf("read %s: %s, want its 6 bytes", plain, r.Detail)
			}
			r, _ = probe(t, ws, flags, "write", plain)
			want(t, r, "")
			wantContent(env, "secret\n")(t)
		})
	}
}

// TestDenyGlobCreate: no mount covers a name that does not exist yet. The
// supervisor refuses creating other/.env (EACCES, the denial names the
// pattern, the retry asks for nothing), renaming, hard-linking or
// symlinking a file to it, and renaming
// a directory that holds a .env into the workspace; the report says
// deny-glob-create is best effort, and --require deny-glob-create refuses
// to run. Without the supervisor the downgrade says creation is not
// prevented. other/env is an ordinary name.
func TestDenyGlobCreate(t *testing.T) {
	c := caps(t)
	ws, _, _ := globWorkspace(t)
	for _, access := range []string{"read", "write"} {
		t.Run("deny_"+access, func(t *testing.T) {
			read, write := []string{"**/.env"}, []string(nil)
			if access == "write" {
				read, write = nil, read
			}
			flags := append(append([]string{}, wsOnly...), "--guard", denyGuard(t, read, write))
			target := filepath.Join(ws, "other", ".env")
			r, rep := probe(t, ws, flags, "create", target)
			reason := rep.degraded("deny-glob-create")
			if !c.supervised {
				want(t, r, "")
				if !strings.Contains(reason, "not prevented") {
					t.Errorf("deny-glob-create %q, want: not prevented", reason)
				}
				os.Remove(target)
				return
			}
			want(t, r, "EACCES")
			wantAbsent(target)(t)
			if !strings.Contains(reason, "best effort") || !strings.Contains(reason, filepath.Join(ws, "**/.env")) {
				t.Errorf("deny-glob-create %q, want best effort naming the anchored pattern", reason)
			}
			if len(rep.Denials) != 1 || rep.Denials[0].Path != target || !strings.Contains(rep.Denials[0].Reason, "deny_"+access+" pattern **/.env") {
				t.Errorf("denials %+v, want the create of %s naming the pattern", rep.Denials, target)
			}
			if retry := rep.raw["retry"]; len(retry) > 0 && (strings.Contains(string(retry), "additional_permissions") || strings.Contains(string(retry), "escalate_to")) {
				t.Errorf("retry %s widens past a deny pattern", retry)
			}
			r, _ = probe(t, ws, flags, "create", filepath.Join(ws, "other", "env-"+access))
			want(t, r, "")
			// A rename makes the name as well.
			src := writeFile(t, filepath.Join(ws, "other", "src-"+access), "x\n")
			r, _ = probe(t, ws, flags, "rename", src, target)
			want(t, r, "EACCES")
			wantAbsent(target)(t)
			// And a hard link or a symlink.
			for _, op := range []string{"link", "symlink"} {
				r, _ = probe(t, ws, flags, op, src, target)
				want(t, r, "EACCES")
				wantAbsent(target)(t)
			}
			// So does renaming a directory that holds one.
			tree := filepath.Join(ws, "tree-"+access)
			if err := os.Mkdir(tree, 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(tree, ".env"), "x\n")
			r, _ = probe(t, ws, flags, "rename", tree, filepath.Join(ws, "other", "moved-"+access))
			want(t, r, "EACCES")
			wantAbsent(filepath.Join(ws, "other", "moved-"+access))(t)

			out, _ := run(t, ws, append(append([]string{}, flags...), "--require", "deny-glob-create"), "true")
			if out.code != 125 || !strings.Contains(out.stderr, "deny-glob-create") {
				t.Errorf("--require deny-glob-create: exit %d (%s), want 125 naming it", out.code, out.stderr)
			}
		})
	}
}

// TestDenyGlobProfile: the same patterns in a permission profile of sbx
// exec (file_system.deny_read), which need no approval (a deny only
// narrows); a bad pattern is refused with 125 naming the field, in the
// profile and in the guard.
func TestDenyGlobProfile(t *testing.T) {
	c := caps(t)
	ws, env, plain := globWorkspace(t)
	req := func(deny string) string {
		return `{"command": [` + jsonString(probeBin) + `, "read", ` + jsonString(env) + `], "cwd": ` + jsonString(ws) + `,
			"sandbox_mode": "workspace-write", "preauthorized": true,
			"additional_permissions": {"file_system": {"deny_read": [` + deny + `]}}}`
	}
	t.Run("masked", func(t *testing.T) {
		if !c.namespaces && !c.supervised {
			t.Skip("without namespaces or the supervisor an existing match is not protected")
		}
		out, res := execJSON(t, ws, req(`"**/.env"`))
		if res == nil || out.code == 125 {
			t.Fatalf("exit %d: %s", out.code, out.stderr)
		}
		if c.namespaces && !strings.Contains(res.Stdout, "read 0 bytes") || !c.namespaces && !strings.Contains(res.Stdout, "EACCES") {
			t.Errorf("read of %s under deny_read: %s", env, res.Stdout)
		}
		wantContent(plain, "plain\n")(t)
	})
	t.Run("bad-profile-pattern", func(t *testing.T) {
		out, _ := execJSON(t, ws, req(`"ok", "[a-"`))
		if out.code != 125 || !strings.Contains(out.stdout+out.stderr, "file_system.deny_read[1]") {
			t.Errorf("exit %d (%s %s), want 125 naming file_system.deny_read[1]", out.code, out.stdout, out.stderr)
		}
	})
	t.Run("bad-guard-pattern", func(t *testing.T) {
		flags := append(append([]string{}, wsOnly...), "--guard", denyGuard(t, nil, []string{"/etc", "a/**b"}))
		out, _ := run(t, ws, flags, "true")
		if out.code != 125 || !strings.Contains(out.stderr, "deny_write[1]") {
			t.Errorf("exit %d (%s), want 125 naming deny_write[1]", out.code, out.stderr)
		}
	})
}

// TestDenyGlobScanBound: a workspace with more entries than the walk's
// bound is never skipped silently: the report names the pattern as
// deny-glob-scan, and --require deny-glob-scan refuses to run. The walk
// prunes: a pattern whose literal part names one directory (sub/*.env) does not walk
// the rest, and reports nothing.
func TestDenyGlobScanBound(t *testing.T) {
	ws := workspace(t)
	many := filepath.Join(ws, "many")
	if err := os.Mkdir(many, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 0; i <= 20000; i++ {
		f, err := os.Create(filepath.Join(many, "f"+strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	flags := append(append([]string{}, wsOnly...), "--guard", denyGuard(t, []string{"**/.env"}, nil))
	out, rep := run(t, ws, flags, "true")
	if out.code != 0 || rep == nil {
		t.Fatalf("exit %d: %s", out.code, out.stderr)
	}
	if reason := rep.degraded("deny-glob-scan"); !strings.Contains(reason, "**/.env") || !strings.Contains(reason, "20000") {
		t.Errorf("deny-glob-scan %q, want it naming **/.env and the bound", reason)
	}
	out, _ = run(t, ws, append(append([]string{}, flags...), "--require", "deny-glob-scan"), "true")
	if out.code != 125 || !strings.Contains(out.stderr, "deny-glob-scan") {
		t.Errorf("--require deny-glob-scan: exit %d (%s), want 125", out.code, out.stderr)
	}
	flags = append(append([]string{}, wsOnly...), "--guard", denyGuard(t, []string{"sub/*.env"}, nil))
	out, rep = run(t, ws, flags, "true")
	if out.code != 0 || rep == nil || rep.degraded("deny-glob-scan") != "" {
		t.Errorf("sub/*.env: exit %d, degraded %+v: the walk did not prune", out.code, rep)
	}
}
