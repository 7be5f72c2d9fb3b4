//go:build linux

package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// badInputs is the corpus of bad input to the sbx CLI, tried as a new user
// would: each is refused with exit 125 and a message naming what is wrong,
// and nothing runs. In args and stdin, @M is a marker file the command would
// create and @W the workspace (sbx's cwd). A run case without --report of
// its own gets --report @W/report.json, which must not be created either.
var badInputs = []struct {
	name  string
	args  []string
	stdin string // for sbx exec
	msg   string // a fragment of stderr
}{
	// Refused before this corpus existed.
	{name: "unknown-flag", args: runTouch("--bogus-flag"), msg: "bogus-flag"},
	{name: "unknown-mode", args: runTouch("--mode", "full-access"), msg: "full-access"},
	{name: "missing-command", args: []string{"run", "--"}, msg: "command"},
	{name: "bad-pty-size", args: runTouch("--pty", "--pty-size", "30by90"), msg: "--pty-size"},
	{name: "pty-size-without-pty", args: runTouch("--pty-size", "30x90"), msg: "--pty-size"},
	{name: "unknown-require", args: runTouch("--require", "no-such-feature"), msg: "no-such-feature"},
	{name: "missing-cwd", args: runTouch("--cwd", "@W/does/not/exist"), msg: "cwd"},
	{name: "exec-bad-json", args: []string{"exec"}, stdin: `{"command": ["touch", "@M"], "cwd": "@W",}`, msg: "malformed JSON"},
	{name: "exec-unknown-field", args: []string{"exec"}, stdin: `{"command": ["touch", "@M"], "cwd": "@W", "sandbox_mdoe": "read-only"}`, msg: "sandbox_mdoe: unknown field"},
	{name: "memory-below-1MiB", args: runTouch("--memory", "100"), msg: "--memory: 100 is below 1 MiB"},

	// --report is opened (made) before anything runs.
	{name: "report-dir-missing", args: runTouch("--report", "/no/such/dir/r.json"), msg: "--report: cannot write /no/such/dir/r.json"},

	// A flag that takes one value, given twice.
	{name: "mode-twice", args: runTouch("--mode", "read-only", "--mode", "danger-full-access"), msg: "--mode given twice"},
	{name: "network-twice", args: runTouch("--network", "--network"), msg: "--network given twice"},
	{name: "cwd-twice", args: runTouch("--cwd", "@W", "--cwd", "/"), msg: "--cwd given twice"},
	{name: "timeout-twice", args: runTouch("--timeout", "1s", "--timeout", "2s"), msg: "--timeout given twice"},
	{name: "c-twice", args: []string{"run", "--shell", "sh", "-c", "touch @M", "-c", "touch @M"}, msg: "-c given twice"},
	{name: "explain-mode-twice", args: []string{"explain", "--mode", "read-only", "--mode", "workspace-write"}, msg: "--mode given twice"},
	{name: "fs-mode-twice", args: []string{"fs", "--mode", "workspace-write", "--mode", "danger-full-access", "mkdir", "@M"}, msg: "--mode given twice"},
	{name: "probe-json-twice", args: []string{"probe", "--json", "--json"}, msg: "--json given twice"},
	{name: "doctor-json-twice", args: []string{"doctor", "--json", "--json"}, msg: "--json given twice"},

	// Limits: 0 is not "no limit", and a value out of range is refused
	// before a cgroup is made.
	{name: "memory-zero", args: runTouch("--memory", "0"), msg: "--memory: must be greater than 0; leave the flag out for no limit"},
	{name: "pids-zero", args: runTouch("--pids", "0"), msg: "--pids: must be greater than 0"},
	{name: "cpus-zero", args: runTouch("--cpus", "0"), msg: "--cpus: must be greater than 0"},
	{name: "cpus-huge", args: runTouch("--cpus", "1e9"), msg: "--cpus: 1e+09 is out of range: give a number of cores from 0.01 to"},
	{name: "pids-huge", args: runTouch("--pids", "99999999"), msg: "--pids: 99999999 is more than the kernel's limit"},
	{name: "timeout-huge", args: runTouch("--timeout", "99999999h"), msg: "8760h"},
	{name: "timeout-zero", args: runTouch("--timeout", "0"), msg: "--timeout: must be greater than 0"},
	{name: "exec-memory-zero", args: []string{"exec"}, stdin: execReq(`"limits": {"memory_bytes": 0}`), msg: "limits.memory_bytes: must be greater than 0; leave the field out"},
	{name: "exec-pids-zero", args: []string{"exec"}, stdin: execReq(`"limits": {"pids": 0}`), msg: "limits.pids: must be greater than 0"},
	{name: "exec-cpus-huge", args: []string{"exec"}, stdin: execReq(`"limits": {"cpus": 1e9}`), msg: "limits.cpus: 1e+09 is out of range"},
	{name: "exec-pids-huge", args: []string{"exec"}, stdin: execReq(`"limits": {"pids": 99999999}`), msg: "limits.pids: 99999999 is more than"},
	{name: "exec-timeout-huge", args: []string{"exec"}, stdin: execReq(`"timeout_ms": 99999999999999`), msg: "timeout_ms: out of range"},

	// Flags that would change nothing in the call.
	{name: "exclude-tmp-read-only", args: runTouch("--exclude-tmp"), msg: "--exclude-tmp: only valid with --mode workspace-write"},
	{name: "exclude-tmpdir-danger", args: runTouch("--mode", "danger-full-access", "--exclude-tmpdir"), msg: "--exclude-tmpdir: only valid with --mode workspace-write"},
	{name: "writable-root-danger", args: runTouch("--mode", "danger-full-access", "--writable-root", "@W"), msg: "--writable-root: only valid with --mode workspace-write"},
	{name: "read-only-without-roots", args: runTouch("--read-only", "x"), msg: "--read-only"},
	{name: "network-danger", args: runTouch("--mode", "danger-full-access", "--network"), msg: "--network: no effect in danger-full-access"},
	{name: "allow-write-danger", args: runTouch("--mode", "danger-full-access", "--allow-write", "@W"), msg: "--allow-write: no effect in danger-full-access"},
	{name: "no-denial-reports-danger", args: runTouch("--mode", "danger-full-access", "--no-denial-reports"), msg: "--no-denial-reports: no effect"},
	{name: "login-without-shell", args: runTouch("--login"), msg: "--login: only valid with --shell"},
	{name: "c-without-shell", args: runTouch("-c", "touch @M"), msg: "-c: only valid with --shell"},
	{name: "env-allow-clean", args: runTouch("--env-mode", "clean", "--env-allow", "FOO"), msg: "--env-allow: no effect with --env-mode clean"},
	{name: "env-allow-inherit-plain-name", args: runTouch("--env-allow", "EDITOR"), msg: "--env-allow: EDITOR is inherited anyway"},
	{name: "probe-shell", args: []string{"probe", "--shell", "sh", "-c", "touch @M"}, msg: "--shell: sbx probe runs its own probes"},

	// Positional arguments where none are taken.
	{name: "bare-sbx", args: []string{}, msg: "Usage:"},
	{name: "doctor-extra", args: []string{"doctor", "extra"}, msg: `unexpected argument "extra"`},
	{name: "explain-extra", args: []string{"explain", "touch", "@M"}, msg: `unexpected argument "touch"`},

	// E2BIG is the input's fault, not a command that cannot be executed.
	{name: "exec-env-1MB", args: []string{"exec"}, stdin: execReq(`"env": {"X": "` + strings.Repeat("x", 1<<20) + `"}`), msg: "exceed the kernel's limit (E2BIG)"},
	// A request past sbx exec's limit is refused before it is all read.
	{name: "exec-request-50MB", args: []string{"exec"}, stdin: execReq(`"env": {"X": "` + strings.Repeat("x", 50<<20) + `"}`), msg: "longer than 16777216 bytes"},
	{name: "exec-arg-200KB", args: []string{"exec"}, stdin: `{"command": ["sh", "-c", "touch @M", "` + strings.Repeat("x", 200<<10) + `"], "cwd": "@W"}`, msg: "exceed the kernel's limit (E2BIG)"},

	// Strings are exact (issue 27 §4): a NUL, invalid UTF-8 and an empty
	// path are refused naming the field, never cleaned into another.
	{name: "exec-cwd-nul", args: []string{"exec"}, stdin: `{"command": ["touch", "@M"], "cwd": "@W\u0000/../../../OUT", "sandbox_mode": "workspace-write"}`, msg: "cwd: contains a NUL byte"},
	{name: "exec-argv-nul", args: []string{"exec"}, stdin: `{"command": ["sh", "-c", "touch @M", "x\u0000y"], "cwd": "@W", "sandbox_mode": "workspace-write"}`, msg: "command[3]: contains a NUL byte"},
	{name: "exec-env-nul", args: []string{"exec"}, stdin: execReq(`"env": {"A": "x\u0000y"}`), msg: "env.A: contains a NUL byte"},
	{name: "exec-domain-nul", args: []string{"exec"}, stdin: execReq(`"resolve": ["a.com\u0000:443:127.0.0.1"]`), msg: "resolve[0]: contains a NUL byte"},
	{name: "exec-argv-utf8", args: []string{"exec"}, stdin: "{\"command\": [\"sh\", \"-c\", \"touch @M\", \"m53\xff\"], \"cwd\": \"@W\", \"sandbox_mode\": \"workspace-write\"}", msg: "command[3]: is not valid UTF-8"},
	{name: "exec-argv-surrogate", args: []string{"exec"}, stdin: `{"command": ["sh", "-c", "touch @M", "\udc00"], "cwd": "@W", "sandbox_mode": "workspace-write"}`, msg: "command[3]: is not valid UTF-8"},
	{name: "exec-fs-content-utf8", args: []string{"exec"}, stdin: "{\"fs\": {\"op\": \"write\", \"path\": \"@M\", \"content\": \"\xff\"}, \"cwd\": \"@W\", \"sandbox_mode\": \"workspace-write\"}", msg: "fs.content: is not valid UTF-8"},
	{name: "exec-fs-path-utf8", args: []string{"exec"}, stdin: "{\"fs\": {\"op\": \"write\", \"path\": \"@M\xff\", \"content\": \"x\"}, \"cwd\": \"@W\", \"sandbox_mode\": \"workspace-write\"}", msg: "fs.path: is not valid UTF-8"},
	{name: "exec-empty-writable-root", args: []string{"exec"}, stdin: execReq(`"writable_roots": [""]`), msg: "writable_roots[0]: empty path"},
	{name: "fs-path-utf8", args: []string{"fs", "--json", "--mode", "workspace-write", "mkdir", "@M\xff"}, msg: "is not valid UTF-8"},
	{name: "run-empty-cwd", args: runTouch("--mode", "workspace-write", "--cwd", ""), msg: "--cwd: empty path"},
	{name: "run-empty-writable-root", args: runTouch("--mode", "workspace-write", "--writable-root", ""), msg: "--writable-root[0]: empty path"},
	{name: "run-empty-allow-write", args: runTouch("--allow-write", ""), msg: "--allow-write[0]: empty path"},
	{name: "run-empty-report", args: runTouch("--report", ""), msg: "--report: empty path"},
}

// runTouch is `sbx run FLAGS -- touch @M`.
func runTouch(flags ...string) []string {
	return append(append([]string{"run"}, flags...), "--", "touch", "@M")
}

// execReq is an exec request that would create @M, with more fields.
func execReq(fields string) string {
	return `{"command": ["touch", "@M"], "cwd": "@W", "sandbox_mode": "workspace-write", ` + fields + `}`
}

func TestBadInputCorpus(t *testing.T) {
	for _, c := range badInputs {
		t.Run(c.name, func(t *testing.T) {
			ws := workspace(t)
			marker := filepath.Join(ws, "marker")
			fill := strings.NewReplacer("@M", marker, "@W", ws)
			var args []string
			for _, a := range c.args {
				args = append(args, fill.Replace(a))
			}
			report := filepath.Join(ws, "report.json")
			if len(args) > 0 && args[0] == "run" && !strings.Contains(strings.Join(c.args, " "), "--report") {
				args = append([]string{"run", "--report", report}, args[1:]...)
			}
			o := opts{args: args, dir: ws}
			if c.stdin != "" {
				o.stdin = strings.NewReader(fill.Replace(c.stdin))
			}
			out := sbx(t, o)
			stderr := out.stderr
			if len(stderr) > 2000 {
				stderr = stderr[:2000] + "..."
			}
			if out.code != 125 {
				t.Errorf("exit %d, want 125\nstderr: %s", out.code, stderr)
			}
			if !strings.Contains(out.stderr, c.msg) {
				t.Errorf("stderr does not say %q: %s", c.msg, stderr)
			}
			if len(args) > 0 { // bare sbx prints the usage, many lines
				oneLine(t, "stderr", out.stderr)
			}
			if len(args) > 0 && args[0] == "exec" {
				var res struct{ Error string }
				if err := json.Unmarshal([]byte(out.stdout), &res); err != nil || !strings.Contains(res.Error, c.msg) {
					t.Errorf("stdout: want {\"error\": ...} saying %q, got %.300q", c.msg, out.stdout)
				}
			}
			wantAbsent(marker)(t)
			wantAbsent(report)(t)
			if m, _ := filepath.Glob(marker + "*"); len(m) > 0 {
				t.Errorf("the command ran: %q", m) // a marker name changed on the way
			}
			if m, _ := filepath.Glob(filepath.Join(ws, ".sbx-probe-*")); len(m) > 0 {
				t.Errorf("probe left %q", m)
			}
		})
	}
}

// TestReportPathReplaced: the report goes to the file sbx opened before the
// command started. A command that replaces the report path with a symlink
// cannot make sbx (root, or a user the sandbox keeps from writing there)
// write the report over a file outside the writable roots.
func TestReportPathReplaced(t *testing.T) {
	ws := workspace(t)
	victim := filepath.Join(t.TempDir(), "victim")
	writeFile(t, victim, "precious\n")
	report := filepath.Join(ws, "report.json")
	out := sbx(t, opts{dir: ws, args: append(append([]string{"run", "--cwd", ws, "--report", report}, wsOnly...),
		"--", "sh", "-c", `rm -f "$1" && ln -s "$2" "$1"`, "sh", report, victim)})
	if out.code != 0 {
		t.Fatalf("exit %d, want 0\nstderr: %s", out.code, out.stderr)
	}
	wantContent(victim, "precious\n")(t)
	if !strings.Contains(out.stderr, "replaced while the command ran") {
		t.Errorf("stderr does not say the report path was replaced: %q", out.stderr)
	}
	if _, err := os.Lstat(report); err != nil {
		t.Errorf("the command's symlink is gone: %v", err)
	}
}

// TestServeBadStrings: exec over sbx serve refuses the strings sbx exec
// refuses (issue 27 §4), as invalid_params naming the field, and runs
// nothing.
func TestServeBadStrings(t *testing.T) {
	s := startServer(t)
	s.ok("initialize", nil)
	ws := workspace(t)
	turn := s.session("s", ws, map[string]any{"sandbox_mode": "workspace-write", "approval_policy": "never"})
	marker := filepath.Join(ws, "marker")
	for i, c := range []struct{ params, field string }{
		{`"cwd": "` + ws + `\u0000/../../../OUT", "command": ["touch", "` + marker + `"]`, "cwd"},
		{`"cwd": "` + ws + `", "command": ["sh", "-c", "touch ` + marker + `", "m53` + "\xff" + `"]`, "command[3]"},
		{`"cwd": "` + ws + `", "command": ["touch", "` + marker + `"], "env": {"A\u0000": "1"}}`, `env["A\x00"]`},
		{`"cwd": "` + ws + `", "command": ["touch", "` + marker + `"], "writable_roots": [""]`, "writable_roots[0]"},
	} {
		id := strconv.Itoa(1000 + i)
		line := `{"jsonrpc": "2.0", "id": ` + id + `, "method": "exec", "params": {"session_id": "s", "turn_id": "` + turn +
			`", "call_id": "bad-` + id + `", ` + c.params + `}}`
		line = strings.Replace(line, "}}}", "}}", 1) // the env case closes its own object
		code, kind, data := rpcError(t, s.get(s.line(id, line)))
		if code != -32602 || !strings.Contains(fmt.Sprint(data), c.field) {
			t.Errorf("%s: code %d, kind %s, data %v; want -32602 (invalid_params) naming %s", c.field, code, kind, data, c.field)
		}
	}
	if m, _ := filepath.Glob(marker + "*"); len(m) > 0 {
		t.Errorf("a refused call ran: %q", m)
	}
}
