//go:build linux

package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// The corpus of `sbx fs`: changes the sandbox allows, changes it denies
// (exit 3, error.kind "denied", the denial and a retry hint that, applied,
// makes the same call succeed) and changes that fail for their own reasons
// (exit 1, "failed", no denial), each with the file system checked
// afterwards. What a denied change gives depends on the kernel: with the
// supervisor the denial is reported; with Landlock alone the change fails
// with EACCES and no evidence, which is "failed"; with neither the tests
// that need a restriction go through Require.

// fsRun is one `sbx fs --json` call: the outcome, the report and the fs
// fields of the result.
type fsRun struct {
	out   outcome
	rep   *report
	OK    bool   `json:"ok"`
	Op    string `json:"op"`
	Error *struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	} `json:"error"`
	Retry *struct {
		SandboxPermissions    string `json:"sandbox_permissions"`
		EscalateTo            string `json:"escalate_to"`
		AdditionalPermissions struct {
			FileSystem struct {
				Write []string `json:"write"`
			} `json:"file_system"`
		} `json:"additional_permissions"`
		Argv    []string       `json:"argv"`
		Request map[string]any `json:"request"`
	} `json:"retry"`
}

// sbxFS runs `sbx fs --cwd ws --json FLAGS... OPARGS...` with stdin.
func sbxFS(t *testing.T, ws string, flags []string, stdin string, opArgs ...string) *fsRun {
	t.Helper()
	args := append(append([]string{"fs", "--cwd", ws, "--json"}, flags...), opArgs...)
	return decodeFS(t, sbx(t, opts{args: args, dir: ws, stdin: strings.NewReader(stdin)}))
}

func decodeFS(t *testing.T, out outcome) *fsRun {
	t.Helper()
	if strings.TrimSpace(out.stdout) == "" {
		t.Fatalf("no result (exit %d): %s", out.code, out.stderr)
	}
	r := &fsRun{out: out}
	if err := json.Unmarshal([]byte(out.stdout), r); err != nil {
		t.Fatalf("result: %v\n%s", err, out.stdout)
	}
	// The report's own error field is a string (why a command did not
	// start); an fs result's is the object read above.
	var m map[string]json.RawMessage
	json.Unmarshal([]byte(out.stdout), &m)
	delete(m, "error")
	b, _ := json.Marshal(m)
	r.rep = decodeReport(t, b)
	t.Logf("exit %d ok %t error %+v denials %+v", out.code, r.OK, r.Error, r.rep.Denials)
	return r
}

// wantOK asserts the change was made: exit 0, ok, no error, no denial.
func (r *fsRun) wantOK(t *testing.T) {
	t.Helper()
	if r.out.code != 0 || !r.OK || r.Error != nil || len(r.rep.Denials) != 0 || r.rep.ExitCode != 0 {
		t.Errorf("want done: exit %d (exit_code %d) ok %t error %+v denials %+v\nstderr: %s", r.out.code, r.rep.ExitCode, r.OK, r.Error, r.rep.Denials, r.out.stderr)
	}
}

// wantFailed asserts an ordinary failure: exit 1, kind failed, the
// message containing msg, no denial and no retry.
func (r *fsRun) wantFailed(t *testing.T, msg string) {
	t.Helper()
	if r.out.code != 1 || r.OK || r.Error == nil || r.Error.Kind != "failed" || r.rep.ExitCode != 1 {
		t.Errorf("want failed: exit %d (exit_code %d) ok %t error %+v", r.out.code, r.rep.ExitCode, r.OK, r.Error)
		return
	}
	if !strings.Contains(r.Error.Message, msg) {
		t.Errorf("message %q does not contain %q", r.Error.Message, msg)
	}
	if len(r.rep.Denials) != 0 || r.Retry != nil {
		t.Errorf("an ordinary failure with denials %+v, retry %+v", r.rep.Denials, r.Retry)
	}
}

// denialMatch says whether a denial is the one a case expects: the exact
// path, or (for the temp file of a write) a name that starts so.
type denialMatch struct {
	op, path   string
	pathPrefix bool
}

// tempOf is the denial of the temp file a write makes next to path.
func tempOf(path string) denialMatch {
	return denialMatch{op: "create", path: filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".sbx-"), pathPrefix: true}
}

func (m denialMatch) in(ds []denial) bool {
	return slices.ContainsFunc(ds, func(d denial) bool {
		return d.Operation == m.op && (d.Path == m.path || m.pathPrefix && strings.HasPrefix(d.Path, m.path))
	})
}

// wantRefused asserts a change the sandbox refuses, as this kernel reports
// it: with the supervisor exit 3, kind denied, the denial m, a retry hint;
// without it exit 1, kind failed, no denial (nothing to show it was the
// sandbox), the message with the errno.
func (r *fsRun) wantRefused(t *testing.T, m denialMatch) {
	t.Helper()
	if !caps(t).supervised {
		r.wantFailed(t, "")
		return
	}
	if r.out.code != 3 || r.OK || r.Error == nil || r.Error.Kind != "denied" || r.rep.ExitCode != 3 {
		t.Errorf("want denied: exit %d (exit_code %d) ok %t error %+v\nstderr: %s", r.out.code, r.rep.ExitCode, r.OK, r.Error, r.out.stderr)
	}
	if !m.in(r.rep.Denials) {
		t.Errorf("denials %+v, want %s of %s", r.rep.Denials, m.op, m.path)
	}
	if r.Retry == nil || r.Retry.SandboxPermissions == "" {
		t.Errorf("a denial without a retry hint: %+v", r.Retry)
	}
}

// retryGrants asserts the retry asks for with_additional_permissions
// writing exactly path among its paths.
func (r *fsRun) retryGrants(t *testing.T, path string) {
	t.Helper()
	if !caps(t).supervised {
		return
	}
	if r.Retry == nil || r.Retry.SandboxPermissions != "with_additional_permissions" || !slices.Contains(r.Retry.AdditionalPermissions.FileSystem.Write, path) {
		t.Errorf("retry %+v, want with_additional_permissions writing %s", r.Retry, path)
	}
}

// approver writes a program that approves every request.
func approver(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "approve.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\ncat >/dev/null\necho '{\"outcome\":\"allowed-once\"}'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// applyRetry runs the retry argv of r (an `sbx fs` command line) with the
// justification filled in and an approver, and the same stdin; it must
// succeed.
func (r *fsRun) applyRetry(t *testing.T, ws, stdin string) *fsRun {
	t.Helper()
	if r.Retry == nil || len(r.Retry.Argv) < 3 || r.Retry.Argv[0] != "sbx" || r.Retry.Argv[1] != "fs" {
		t.Fatalf("retry argv %+v, want sbx fs ...", r.Retry)
	}
	argv := slices.Clone(r.Retry.Argv[1:])
	dash := slices.Index(argv, "--")
	if dash < 0 {
		t.Fatalf("retry argv %q has no --", argv)
	}
	for i := range argv[:dash] {
		if argv[i] == "--justification" {
			argv[i+1] = "the retry hint of the fs corpus"
		}
	}
	argv = slices.Insert(argv, dash, "--approver", approver(t))
	t.Logf("retry: %q", argv)
	again := decodeFS(t, sbx(t, opts{args: argv, dir: ws, stdin: strings.NewReader(stdin)}))
	again.wantOK(t)
	return again
}

// noSideFiles asserts no temp or backup file of sbx fs is left in dir.
func noSideFiles(t *testing.T, dirs ...string) {
	t.Helper()
	for _, dir := range dirs {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if strings.Contains(e.Name(), ".sbx-") {
				t.Errorf("left behind: %s", filepath.Join(dir, e.Name()))
			}
		}
	}
}

// umask is the process's umask, which sbx and its helper inherit.
func umask() os.FileMode {
	m := syscall.Umask(0)
	syscall.Umask(m)
	return os.FileMode(m)
}

func wantMode(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != mode {
		t.Errorf("%s: mode %v (err %v), want %v", path, fi.Mode().Perm(), err, mode)
	}
}

// TestFSAllowed: every operation in a workspace-write cwd.
func TestFSAllowed(t *testing.T) {
	ws := workspace(t)
	write := func(name, content string) string { return writeFile(t, filepath.Join(ws, name), content) }
	steps := []struct {
		name  string
		stdin string
		args  []string
		check func(t *testing.T)
	}{
		{"write new", "one\n", []string{"write", "new.txt"}, func(t *testing.T) {
			wantContent(filepath.Join(ws, "new.txt"), "one\n")(t)
			wantMode(t, filepath.Join(ws, "new.txt"), 0o644&^umask())
		}},
		{"write keeps mode", "two\n", []string{"write", "exec.sh"}, func(t *testing.T) {
			wantContent(filepath.Join(ws, "exec.sh"), "two\n")(t)
			wantMode(t, filepath.Join(ws, "exec.sh"), 0o750)
		}},
		{"append", "more\n", []string{"append", "new.txt"}, func(t *testing.T) { wantContent(filepath.Join(ws, "new.txt"), "one\nmore\n")(t) }},
		{"mkdir", "", []string{"mkdir", "d"}, func(t *testing.T) { wantMode(t, filepath.Join(ws, "d"), 0o777&^umask()) }},
		{"mkdir -p", "", []string{"mkdir", "-p", "d/e/f"}, func(t *testing.T) { wantMode(t, filepath.Join(ws, "d/e/f"), 0o777&^umask()) }},
		{"copy", "", []string{"copy", "new.txt", "d/copy.txt"}, func(t *testing.T) { wantContent(filepath.Join(ws, "d/copy.txt"), "one\nmore\n")(t) }},
		{"move", "", []string{"move", "d/copy.txt", "d/e/moved.txt"}, func(t *testing.T) {
			wantAbsent(filepath.Join(ws, "d/copy.txt"))(t)
			wantContent(filepath.Join(ws, "d/e/moved.txt"), "one\nmore\n")(t)
		}},
		{"chmod", "", []string{"chmod", "600", "new.txt"}, func(t *testing.T) { wantMode(t, filepath.Join(ws, "new.txt"), 0o600) }},
		{"remove", "", []string{"remove", "old.txt"}, func(t *testing.T) { wantAbsent(filepath.Join(ws, "old.txt"))(t) }},
		{"remove -r", "", []string{"remove", "-r", "d"}, func(t *testing.T) { wantAbsent(filepath.Join(ws, "d"))(t) }},
		{"apply-patch", "diff --git a/new.txt b/new.txt\n--- a/new.txt\n+++ b/new.txt\n@@ -1,2 +1,2 @@\n one\n-more\n+patched\n" +
			"diff --git a/sub/created.txt b/sub/created.txt\nnew file mode 100644\n--- /dev/null\n+++ b/sub/created.txt\n@@ -0,0 +1 @@\n+created\n" +
			"diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\n",
			[]string{"apply-patch"}, func(t *testing.T) {
				wantContent(filepath.Join(ws, "new.txt"), "one\npatched\n")(t)
				wantMode(t, filepath.Join(ws, "new.txt"), 0o600)
				wantContent(filepath.Join(ws, "sub/created.txt"), "created\n")(t)
				wantAbsent(filepath.Join(ws, "gone.txt"))(t)
			}},
	}
	write("old.txt", "old\n")
	write("gone.txt", "gone\n")
	if err := os.Chmod(write("exec.sh", "one\n"), 0o750); err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			r := sbxFS(t, ws, wsOnly, s.stdin, s.args...)
			r.wantOK(t)
			if r.Op != s.args[0] {
				t.Errorf("op %q, want %q", r.Op, s.args[0])
			}
			s.check(t)
			noSideFiles(t, ws, filepath.Join(ws, "sub"))
		})
	}
}

// fsDenial is one change the sandbox refuses: setup prepares the
// workspace ws and says what to run and what to check.
type fsDenial struct {
	name  string
	flags []string
	stdin string
	setup func(t *testing.T, ws string) fsDenialSetup
}

type fsDenialSetup struct {
	args   []string
	denial denialMatch
	// grant is the path the retry must ask to write.
	grant string
	// unchanged checks the refused change left everything as it was;
	// retried, when set, that the applied retry made it.
	unchanged, retried func(*testing.T)
}

// TestFSDenied: changes outside what the mode allows, each refused with
// nothing changed and, with the supervisor, the retry hint applied.
func TestFSDenied(t *testing.T) {
	requireWriteRestriction(t)
	cases := []fsDenial{
		{"write outside the roots", wsWrite, "content\n", func(t *testing.T, ws string) fsDenialSetup {
			out := varTmpDir(t)
			target := filepath.Join(out, "f")
			return fsDenialSetup{[]string{"write", target}, tempOf(target), out,
				func(t *testing.T) { wantAbsent(target)(t); noSideFiles(t, out) }, wantContent(target, "content\n")}
		}},
		{"overwrite outside the roots", wsWrite, "new\n", func(t *testing.T, ws string) fsDenialSetup {
			// The policy lets the call create nothing beside the file, so
			// it is written in place: the refusal and the retry are the
			// file's alone, and the retry keeps its mode.
			target := writeFile(t, filepath.Join(varTmpDir(t), "f"), "old\n")
			if err := os.Chmod(target, 0o640); err != nil {
				t.Fatal(err)
			}
			return fsDenialSetup{[]string{"write", target}, denialMatch{op: "write", path: target}, target,
				wantContent(target, "old\n"), func(t *testing.T) { wantContent(target, "new\n")(t); wantMode(t, target, 0o640) }}
		}},
		{"append outside the roots", wsWrite, "b\n", func(t *testing.T, ws string) fsDenialSetup {
			target := writeFile(t, filepath.Join(varTmpDir(t), "log"), "a\n")
			return fsDenialSetup{[]string{"append", target}, denialMatch{op: "write", path: target}, target,
				wantContent(target, "a\n"), wantContent(target, "a\nb\n")}
		}},
		{"remove outside the roots", wsWrite, "", func(t *testing.T, ws string) fsDenialSetup {
			out := varTmpDir(t)
			target := writeFile(t, filepath.Join(out, "keep"), "k\n")
			return fsDenialSetup{[]string{"remove", target}, denialMatch{op: "remove", path: target}, out,
				wantContent(target, "k\n"), wantAbsent(target)}
		}},
		{"create in read-only mode", readOnly, "x\n", func(t *testing.T, ws string) fsDenialSetup {
			target := filepath.Join(ws, "new.txt")
			return fsDenialSetup{[]string{"write", "new.txt"}, tempOf(target), ws,
				func(t *testing.T) { wantAbsent(target)(t); noSideFiles(t, ws) }, wantContent(target, "x\n")}
		}},
		{"mkdir in read-only mode", readOnly, "", func(t *testing.T, ws string) fsDenialSetup {
			return fsDenialSetup{[]string{"mkdir", "sub"}, denialMatch{op: "create", path: filepath.Join(ws, "sub")}, ws,
				wantAbsent(filepath.Join(ws, "sub")), nil}
		}},
		{"move across roots", wsWrite, "", func(t *testing.T, ws string) fsDenialSetup {
			out := varTmpDir(t)
			src := writeFile(t, filepath.Join(ws, "src.txt"), "moving\n")
			dst := filepath.Join(out, "dst.txt")
			return fsDenialSetup{[]string{"move", "src.txt", dst}, denialMatch{op: "rename", path: dst}, out,
				func(t *testing.T) { wantContent(src, "moving\n")(t); wantAbsent(dst)(t) },
				func(t *testing.T) { wantAbsent(src)(t); wantContent(dst, "moving\n")(t) }}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ws := workspace(t)
			s := tc.setup(t, ws)
			r := sbxFS(t, ws, tc.flags, tc.stdin, s.args...)
			r.wantRefused(t, s.denial)
			s.unchanged(t)
			r.retryGrants(t, s.grant)
			if caps(t).supervised && s.retried != nil {
				r.applyRetry(t, ws, tc.stdin)
				s.retried(t)
			}
		})
	}
}

// TestFSDeniedByKernel: the refusals whose outcome depends most on what
// the kernel offers.
func TestFSDeniedByKernel(t *testing.T) {
	requireWriteRestriction(t)
	c := caps(t)
	t.Run("write into .git", func(t *testing.T) {
		ws := workspace(t)
		dotGit(t, ws)
		config := filepath.Join(ws, ".git", "config")
		r := sbxFS(t, ws, wsWrite, "[evil]\n", "write", config)
		switch {
		case c.supervised:
			// Nothing can be created in .git, so the file is written in
			// place, and that write is what the supervisor refuses.
			r.wantRefused(t, denialMatch{op: "write", path: config})
			if r.Retry == nil || r.Retry.SandboxPermissions != "require_escalated" || r.Retry.EscalateTo != "danger-full-access" {
				t.Errorf("retry %+v, want require_escalated to danger-full-access (nothing widens past a carve-out)", r.Retry)
			}
		case c.namespaces:
			// The read-only bind mount refuses it, without evidence.
			r.wantFailed(t, "read-only file system")
		default:
			// No supervisor, no mount namespace: .git is writable, and
			// the report says so.
			r.wantOK(t)
			if r.rep.degraded("mountns") == "" {
				t.Errorf("a writable .git without a mountns downgrade: %+v", r.rep.Degraded)
			}
			return
		}
		wantContent(config, "[core]\n\trepositoryformatversion = 0\n")(t)
		noSideFiles(t, filepath.Join(ws, ".git"))
	})
	t.Run("chmod outside the roots", func(t *testing.T) {
		ws := workspace(t)
		target := writeFile(t, filepath.Join(varTmpDir(t), "f"), "f\n")
		r := sbxFS(t, ws, wsWrite, "", "chmod", "700", target)
		switch {
		case !c.supervised && c.abi == 0 && c.namespaces:
			// The read-only mounts that stand in for Landlock refuse it,
			// without evidence.
			r.wantFailed(t, "read-only file system")
			wantMode(t, target, 0o644)
			return
		case !c.supervised:
			// IMPORTANT: Landlock does not restrict chmod; only the
			// supervisor does (internal/enforce/linux/seccomp/seccomp.go), and the report
			// says file-attributes is degraded.
			r.wantOK(t)
			wantMode(t, target, 0o700)
			return
		}
		r.wantRefused(t, denialMatch{op: "chmod", path: target})
		wantMode(t, target, 0o644)
		r.retryGrants(t, target)
	})
}

// TestFSApplyPatchDenied: a patch of three files, two outside the
// writable roots (a change to a file in one directory, a new file in a new
// directory of another), is refused as a whole: no file changes, nothing is
// left behind, every refusal is reported at once, the retry names the
// outside file (written in place: nothing can be created beside it) and the
// directory the new one is made in, and the retry applies the whole patch.
func TestFSApplyPatchDenied(t *testing.T) {
	requireWriteRestriction(t)
	ws, out1, out2 := workspace(t), varTmpDir(t), varTmpDir(t)
	inside := writeFile(t, filepath.Join(ws, "in.txt"), "in 1\nin 2\n")
	outside := writeFile(t, filepath.Join(out1, "out.txt"), "out 1\nout 2\n")
	created := filepath.Join(out2, "sub", "new.txt")
	rel := func(p string) string {
		r, err := filepath.Rel(ws, p)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	patch := "diff --git a/in.txt b/in.txt\n--- a/in.txt\n+++ b/in.txt\n@@ -1,2 +1,2 @@\n in 1\n-in 2\n+in two\n" +
		"--- a/" + rel(outside) + "\n+++ b/" + rel(outside) + "\n@@ -1,2 +1,2 @@\n-out 1\n+out one\n out 2\n" +
		"--- /dev/null\n+++ b/" + rel(created) + "\n@@ -0,0 +1 @@\n+new\n"
	unchanged := func(t *testing.T) {
		t.Helper()
		wantContent(inside, "in 1\nin 2\n")(t)
		wantContent(outside, "out 1\nout 2\n")(t)
		wantAbsent(filepath.Dir(created))(t)
		noSideFiles(t, ws, out1, out2)
	}
	r := sbxFS(t, ws, wsWrite, patch, "apply-patch")
	r.wantRefused(t, denialMatch{op: "write", path: outside})
	unchanged(t)
	if !caps(t).supervised {
		return
	}
	if m := (denialMatch{op: "create", path: filepath.Dir(created)}); !m.in(r.rep.Denials) {
		t.Errorf("denials %+v, want also the create of %s", r.rep.Denials, m.path)
	}
	r.retryGrants(t, outside)
	r.retryGrants(t, out2)

	// The human form says the same: the message, the denials, the retry.
	h := sbx(t, opts{args: []string{"fs", "--cwd", ws, "--mode", "workspace-write", "apply-patch"}, dir: ws, stdin: strings.NewReader(patch)})
	lines := strings.Split(strings.TrimSpace(h.stderr), "\n")
	if h.code != 3 || h.stdout != "" || !strings.HasPrefix(lines[0], "sbx fs: write "+rel(outside)+": permission denied") ||
		!slices.ContainsFunc(lines, func(l string) bool {
			return strings.HasPrefix(l, "sbx: retry: sbx fs ") && strings.HasSuffix(l, " -- apply-patch")
		}) {
		t.Errorf("human: exit %d stdout %q stderr:\n%s", h.code, h.stdout, h.stderr)
	}
	unchanged(t)

	r.applyRetry(t, ws, patch)
	wantContent(inside, "in 1\nin two\n")(t)
	wantContent(outside, "out one\nout 2\n")(t)
	wantContent(created, "new\n")(t)
	noSideFiles(t, ws, out1, out2, filepath.Dir(created))
}

// TestFSFailed: failures that are not the sandbox's: exit 1, kind failed,
// the message as the system call or the patch gave it, no denial.
func TestFSFailed(t *testing.T) {
	t.Run("remove missing", func(t *testing.T) {
		ws := workspace(t)
		r := sbxFS(t, ws, wsWrite, "", "remove", "missing.txt")
		r.wantFailed(t, "remove missing.txt: no such file or directory")
		if r.Error != nil && r.Error.Message != "remove missing.txt: no such file or directory" {
			t.Errorf("message %q, want it unchanged", r.Error.Message)
		}
		// The human form: the same message, one line, nothing else.
		h := sbx(t, opts{args: []string{"fs", "--cwd", ws, "--mode", "workspace-write", "remove", "missing.txt"}, dir: ws})
		if h.code != 1 || h.stderr != "sbx fs: remove missing.txt: no such file or directory\n" || h.stdout != "" {
			t.Errorf("human: exit %d stdout %q stderr %q", h.code, h.stdout, h.stderr)
		}
	})
	t.Run("patch does not apply", func(t *testing.T) {
		ws := workspace(t)
		a := writeFile(t, filepath.Join(ws, "a.txt"), "a\n")
		b := writeFile(t, filepath.Join(ws, "b.txt"), "b\n")
		patch := "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+A\n--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-not b\n+B\n"
		r := sbxFS(t, ws, wsWrite, patch, "apply-patch")
		r.wantFailed(t, "b.txt: hunk 1 (@@ -1 +1 @@) does not apply")
		wantContent(a, "a\n")(t)
		wantContent(b, "b\n")(t)
		noSideFiles(t, ws)
	})
	t.Run("malformed patch", func(t *testing.T) {
		ws := workspace(t)
		r := sbxFS(t, ws, wsWrite, "this is not a diff\n", "apply-patch")
		r.wantFailed(t, "no file in the patch")
	})
	t.Run("write without the parent", func(t *testing.T) {
		ws := workspace(t)
		r := sbxFS(t, ws, wsWrite, "x", "write", "no/such/dir/f")
		r.wantFailed(t, "write no/such/dir/f: no such file or directory")
	})
	t.Run("file permissions", func(t *testing.T) { fsFilePermissions(t) })
}

// nobody is the uid (and gid) root runs sbx as to be an unprivileged user.
const nobody = 65534

// fsFilePermissions: an unprivileged user writing a file its permissions
// forbid, in a directory the sandbox grants, fails as an ordinary failure.
// As root the test makes a root-owned 0600 file in a 0777 directory and
// runs sbx as uid 65534; as a user it makes its own 0444 file in a 0555
// directory.
func fsFilePermissions(t *testing.T) {
	dir := varTmpDir(t)
	target := filepath.Join(dir, "f")
	if err := os.WriteFile(target, []byte("original\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--mode", "read-only", "--allow-write", dir}
	var r *fsRun
	if isRoot() {
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(sbxBin, append(append([]string{"fs", "--cwd", dir, "--json"}, flags...), "write", target)...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		cmd.Dir = dir
		cmd.Env = append(baseEnv(), "HOME="+dir)
		cmd.Stdin = strings.NewReader("overwritten\n")
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if _, ok := err.(*exec.ExitError); err != nil && !ok {
			t.Fatalf("sbx as uid %d: %v", nobody, err)
		}
		r = decodeFS(t, outcome{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()})
	} else {
		if err := os.Chmod(target, 0o444); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o755) })
		r = sbxFS(t, workspace(t), flags, "overwritten\n", "write", target)
	}
	r.wantFailed(t, "permission denied")
	wantContent(target, "original\n")(t)
	noSideFiles(t, dir)
}

// TestFSExec: an "fs" request to sbx exec gives the same result, and its
// retry request, with a justification and an approver, succeeds.
func TestFSExec(t *testing.T) {
	ws, out := workspace(t), varTmpDir(t)
	target := filepath.Join(out, "f")
	req := map[string]any{"cwd": ws, "sandbox_mode": "workspace-write", "fs": map[string]any{"op": "write", "path": "in-ws.txt", "content": "hi\n"}}
	b, _ := json.Marshal(req)
	r := decodeFS(t, sbx(t, opts{args: []string{"exec"}, dir: ws, stdin: strings.NewReader(string(b))}))
	if r.out.code != 0 || !r.OK || r.Op != "write" || r.rep.ExitCode != 0 {
		t.Errorf("exec fs write: exit %d ok %t op %q exit_code %d", r.out.code, r.OK, r.Op, r.rep.ExitCode)
	}
	wantContent(filepath.Join(ws, "in-ws.txt"), "hi\n")(t)

	requireWriteRestriction(t)
	req["fs"] = map[string]any{"op": "write", "path": target, "content": "out\n"}
	b, _ = json.Marshal(req)
	r = decodeFS(t, sbx(t, opts{args: []string{"exec"}, dir: ws, stdin: strings.NewReader(string(b))}))
	if r.out.code != 0 {
		t.Fatalf("sbx exec exit %d, want 0 (the outcome is in the result): %s", r.out.code, r.out.stderr)
	}
	r.out.code = r.rep.ExitCode
	r.wantRefused(t, tempOf(target))
	wantAbsent(target)(t)
	if !caps(t).supervised {
		return
	}
	retry := r.Retry.Request
	if retry == nil {
		t.Fatalf("no retry request: %+v", r.Retry)
	}
	retry["justification"], retry["approver"], retry["approval_policy"] = "the retry of the fs corpus", []string{approver(t)}, "on-request"
	b, _ = json.Marshal(retry)
	again := decodeFS(t, sbx(t, opts{args: []string{"exec"}, dir: ws, stdin: strings.NewReader(string(b))}))
	again.wantOK(t)
	wantContent(target, "out\n")(t)
}
