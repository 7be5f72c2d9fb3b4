//go:build linux

package integration

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// execJSON runs `sbx exec` with req on stdin.
func execJSON(t *testing.T, dir, req string) (outcome, *report) {
	t.Helper()
	out := sbx(t, opts{args: []string{"exec"}, dir: dir, stdin: strings.NewReader(req)})
	if strings.TrimSpace(out.stdout) == "" {
		return out, nil
	}
	return out, decodeReport(t, []byte(out.stdout))
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestExec: one JSON request in, one JSON result out, with the command's
// output captured and the sandbox applied as for sbx run.
func TestExec(t *testing.T) {
	requireWriteRestriction(t)
	c := caps(t)
	ws := workspace(t)
	outside := outsidePath(t)
	req := `{"command": ["sh", "-c", "echo out; echo err >&2; echo x > in-ws.txt; echo x > ` + outside + ` || exit 3"],
		"cwd": ` + jsonString(ws) + `, "sandbox_mode": "workspace-write"}`
	out, res := execJSON(t, t.TempDir(), req)
	if res == nil {
		t.Fatalf("no result; exit %d stderr %q", out.code, out.stderr)
	}
	if out.code == 125 {
		t.Fatalf("exit 125: %s", out.stderr)
	}
	if res.ExitCode != 3 || res.Mode != "workspace-write" {
		t.Errorf("exit_code %d mode %q, want 3 (the write outside failed), workspace-write", res.ExitCode, res.Mode)
	}
	if res.Stdout != "out\n" || !strings.HasPrefix(res.Stderr, "err\n") || !strings.Contains(res.Stderr, "Permission denied") {
		t.Errorf("stdout %q stderr %q, want out and err plus the shell's Permission denied", res.Stdout, res.Stderr)
	}
	if (res.Enforcement.Landlock == nil) != (c.abi == 0) || res.TimedOut {
		t.Errorf("enforcement %+v timed_out %t (Landlock ABI %d)", res.Enforcement, res.TimedOut, c.abi)
	}
	wantContent(filepath.Join(ws, "in-ws.txt"), "x\n")(t)
	wantAbsent(outside)(t)
}

func TestExecTimeout(t *testing.T) {
	ws := workspace(t)
	out, res := execJSON(t, ws, `{"command": ["sleep", "30"], "cwd": `+jsonString(ws)+`, "timeout_ms": 300}`)
	if res == nil {
		t.Fatalf("no result; exit %d stderr %q", out.code, out.stderr)
	}
	if !res.TimedOut || res.KilledBy != "timeout" || res.ExitCode != 137 {
		t.Errorf("timed_out %t killed_by %q exit_code %d, want true, timeout, 137", res.TimedOut, res.KilledBy, res.ExitCode)
	}
}

// TestExecBadInput: refusals are exit 125, one stderr line naming the
// field, and a JSON {"error": ...} on stdout; the command never runs.
func TestExecBadInput(t *testing.T) {
	ws := workspace(t)
	marker := filepath.Join(ws, "marker")
	run := `"command": ["touch", ` + jsonString(marker) + `], "cwd": ` + jsonString(ws)
	cases := []struct {
		name, req, field string
	}{
		{"nested-unknown-field", `{` + run + `, "additional_permissions": {"file_system": {"wirte": ["x"]}}}`,
			"additional_permissions.file_system.wirte"},
		{"top-level-unknown-field", `{` + run + `, "sandbox_mdoe": "read-only"}`, "sandbox_mdoe"},
		{"unknown-mode", `{` + run + `, "sandbox_mode": "full-access"}`, "sandbox_mode"},
		{"wrong-type", `{` + run + `, "network_access": "yes"}`, "network_access"},
		{"missing-cwd", `{"command": ["touch", ` + jsonString(marker) + `]}`, "cwd"},
		{"empty-command", `{"command": [], "cwd": ` + jsonString(ws) + `}`, "command"},
		{"negative-timeout", `{` + run + `, "timeout_ms": -1}`, "timeout_ms"},
		{"malformed-json", `{` + run + `,}`, "JSON"},
		{"truncated-json", `{` + run, "JSON"},
		{"empty-input", ``, "JSON"},
		{"trailing-data", `{` + run + `} {}`, "trailing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, res := execJSON(t, ws, c.req)
			if out.code != 125 {
				t.Errorf("exit %d, want 125", out.code)
			}
			oneLine(t, "stderr", out.stderr)
			if !strings.Contains(out.stderr, c.field) {
				t.Errorf("stderr does not name %q: %q", c.field, out.stderr)
			}
			if res == nil || !strings.Contains(res.Error, c.field) {
				t.Errorf("stdout: want {\"error\": ...} naming %q, got %q", c.field, out.stdout)
			}
			wantAbsent(marker)(t)
		})
	}
}

// TestExecExactKeys: the escapes of encoding/json's case folding and
// last-duplicate-wins (DESIGN.md invariant 4), sent to the real binary. The
// command creates a file, which read-only (the default mode) forbids: read
// as encoding/json alone reads them, most of these requests widen the
// sandbox so that it would. Each is refused with exit 125 naming the field,
// and the file is never made.
func TestExecExactKeys(t *testing.T) {
	ws := workspace(t)
	// RUN in a request is the command and cwd, with a marker of its own.
	const run = "RUN"
	answer := func(body string) string {
		return `, "sandbox_permissions": "require_escalated", "escalate_to": "danger-full-access", "justification": "x",
			"approval_policy": "on-request", "approver": ["sh", "-c", ` + jsonString("echo '"+body+"'") + `]`
	}
	cases := []struct {
		name, req, field string
	}{
		{"case-variant", `{` + run + `, "SANDBOX_MODE": "danger-full-access"}`, "SANDBOX_MODE: unknown field"},
		{"duplicate", `{` + run + `, "sandbox_mode": "read-only", "sandbox_mode": "danger-full-access"}`, "sandbox_mode: duplicate key"},
		{"nested-duplicate", `{` + run + `, "additional_permissions": {"file_system": {"write": [], "write": ["/"]}}}`,
			"additional_permissions.file_system.write: duplicate key"},
		{"network-without-enabled", `{` + run + `, "additional_permissions": {"network": {}}}`, "additional_permissions.network.enabled: required"},
		{"top-level-array", `[{` + run + `, "sandbox_mode": "danger-full-access"}]`, "expected a JSON object"},
		{"approver-duplicate-outcome", `{` + run + answer(`{"outcome":"denied","outcome":"allowed-once"}`) + `}`, "outcome: duplicate key"},
		{"approver-case-variant", `{` + run + answer(`{"OUTCOME":"allowed-once"}`) + `}`, "OUTCOME: unknown field"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			marker := filepath.Join(ws, c.name)
			req := strings.Replace(c.req, run, `"command": ["touch", `+jsonString(marker)+`], "cwd": `+jsonString(ws), 1)
			out, res := execJSON(t, ws, req)
			if out.code != 125 {
				t.Errorf("exit %d, want 125", out.code)
			}
			oneLine(t, "stderr", out.stderr)
			if !strings.Contains(out.stderr, c.field) {
				t.Errorf("stderr does not name %q: %q", c.field, out.stderr)
			}
			if res == nil || !strings.Contains(res.Error, c.field) {
				t.Errorf("stdout: want {\"error\": ...} naming %q, got %.200q", c.field, out.stdout)
			}
			wantAbsent(marker)(t)
		})
	}
}

// TestExecRequestTooLarge: stdin past the request limit is refused when the
// limit is reached, not after reading it all.
func TestExecRequestTooLarge(t *testing.T) {
	ws := workspace(t)
	marker := filepath.Join(ws, "marker")
	req := `{"command": ["touch", ` + jsonString(marker) + `], "cwd": ` + jsonString(ws) + `, "sandbox_mode": "danger-full-access", "stdin": "` +
		strings.Repeat("x", 17<<20) + `"}`
	out, res := execJSON(t, ws, req)
	if out.code != 125 || !strings.Contains(out.stderr, "16777216 bytes") {
		t.Errorf("exit %d stderr %q, want 125 naming the limit of 16777216 bytes", out.code, out.stderr)
	}
	if res == nil || res.Error == "" {
		t.Errorf("stdout: want a refusal, got %q", out.stdout)
	}
	wantAbsent(marker)(t)
}
