//go:build linux

package integration

import (
	"encoding/json"
	"os"
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
		// As sbx run --mode danger-full-access --writable-root is: a
		// field that means nothing in the mode is refused (issue 28 §1;
		// this ran and exited 0).
		{"writable-root-danger", `{` + run + `, "sandbox_mode": "danger-full-access", "writable_roots": ["/nonexistent"]}`, "writable_roots"},
		{"network-danger", `{` + run + `, "sandbox_mode": "danger-full-access", "network_access": true}`, "network_access"},
		{"exclude-tmp-read-only", `{` + run + `, "exclude_tmp": true}`, "exclude_tmp"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, res := execJSON(t, ws, c.req)
			wantExecRefused(t, out, res, c.field)
			wantAbsent(marker)(t)
		})
	}
}

// deniedExec runs a workspace-write call that writes outside its roots and
// returns the request and the raw result; the retry needs the supervisor's
// denial.
func deniedExec(t *testing.T) (req map[string]any, res map[string]any, out string) {
	t.Helper()
	requireWriteRestriction(t)
	if !caps(t).supervised {
		Require(t, "denial-reports")
	}
	ws := workspace(t)
	dir := outsidePath(t)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out = filepath.Join(dir, "f")
	req = map[string]any{"command": []string{"sh", "-c", "echo x > " + out}, "cwd": ws,
		"sandbox_mode": "workspace-write", "call_id": "call-retry"}
	o := sbx(t, opts{args: []string{"exec"}, stdin: strings.NewReader(mustJSON(t, req))})
	if o.code != 0 || json.Unmarshal([]byte(o.stdout), &res) != nil {
		t.Fatalf("exit %d stdout %q stderr %q", o.code, o.stdout, o.stderr)
	}
	if res["exit_code"] == float64(0) || res["retry"] == nil {
		t.Fatalf("the write outside was not denied with a retry: %s", o.stdout)
	}
	wantAbsent(out)(t)
	return req, res, out
}

// wantExecRefused asserts an sbx exec refusal: exit 125, one line on
// stderr and the {"error": ...} on stdout, both naming field.
func wantExecRefused(t *testing.T, out outcome, res *report, field string) {
	t.Helper()
	if out.code != 125 {
		t.Errorf("exit %d, want 125", out.code)
	}
	oneLine(t, "stderr", out.stderr)
	if !strings.Contains(out.stderr, field) {
		t.Errorf("stderr does not name %q: %q", field, out.stderr)
	}
	if res == nil || !strings.Contains(res.Error, field) {
		t.Errorf("stdout: want {\"error\": ...} naming %q, got %.200q", field, out.stdout)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// execOK sends req and wants the command to exit 0.
func execOK(t *testing.T, req any) map[string]any {
	t.Helper()
	o := sbx(t, opts{args: []string{"exec"}, stdin: strings.NewReader(mustJSON(t, req))})
	var res map[string]any
	if o.code != 0 || json.Unmarshal([]byte(o.stdout), &res) != nil || res["exit_code"] != float64(0) {
		t.Fatalf("retry: exit %d stdout %s stderr %q", o.code, o.stdout, o.stderr)
	}
	return res
}

// TestExecRetryGrant: a runtime whose user approved the retry elsewhere
// adds retry.grant to grants.turn of the same request, sends it again
// unchanged otherwise (approval_policy still the default never), and the
// call goes through by grant.
func TestExecRetryGrant(t *testing.T) {
	req, res, out := deniedExec(t)
	grant := res["retry"].(map[string]any)["grant"]
	if grant == nil {
		t.Fatalf("retry without a grant: %v", res["retry"])
	}
	req["grants"] = map[string]any{"turn": grant}
	again := execOK(t, req)
	if via := again["permissions"].(map[string]any)["via"]; via != "standing" && via != "grant" {
		t.Errorf("permissions.via %v, want the grant to apply without asking", via)
	}
	if again["call_id"] != "call-retry" {
		t.Errorf("call_id %v, want call-retry", again["call_id"])
	}
	wantContent(out, "x\n")(t)
	// The same grant in grants.session works as well.
	os.Remove(out)
	req["grants"] = map[string]any{"session": grant}
	execOK(t, req)
	wantContent(out, "x\n")(t)
}

// TestExecRetryRequest: retry.request is the call asking for approval:
// with the justification filled in and an approval policy that asks an
// approver answering allowed-once, it goes through; under the default
// approval policy never it is refused as denied_by_policy.
func TestExecRetryRequest(t *testing.T) {
	_, res, out := deniedExec(t)
	retry, _ := res["retry"].(map[string]any)["request"].(map[string]any)
	if retry == nil || retry["justification"] != "" {
		t.Fatalf("retry.request %v, want one with justification \"\"", retry)
	}
	retry["justification"] = "write the output file"
	o := sbx(t, opts{args: []string{"exec"}, stdin: strings.NewReader(mustJSON(t, retry))})
	var refusal struct {
		ErrorDetail struct{ Kind, Outcome string } `json:"error_detail"`
	}
	json.Unmarshal([]byte(o.stdout), &refusal)
	if o.code != 125 || refusal.ErrorDetail.Kind != "denied_by_policy" || refusal.ErrorDetail.Outcome != "never" {
		t.Errorf("retry.request under approval policy never: exit %d %s, want 125 denied_by_policy never", o.code, o.stdout)
	}
	wantAbsent(out)(t)
	retry["approval_policy"], retry["approver"] = "on-request", []string{approver(t)}
	again := execOK(t, retry)
	if via := again["permissions"].(map[string]any)["via"]; via != "approval" {
		t.Errorf("permissions.via %v, want approval", via)
	}
	wantContent(out, "x\n")(t)
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
			wantExecRefused(t, out, res, c.field)
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

// TestExecFailedBothLaunches: a command that cannot be executed gives the
// same result whichever launch ran it (root's thread, the unprivileged
// stage, which finds out inside the sandbox and hands the errno back):
// exit 126, error_detail exec_failed with EACCES, nothing on stderr.
func TestExecFailedBothLaunches(t *testing.T) {
	ws := workspace(t)
	notExec := writeFile(t, filepath.Join(ws, "data.txt"), "not a program\n")
	for _, mode := range []string{"read-only", "workspace-write"} {
		t.Run(mode, func(t *testing.T) {
			req := map[string]any{"command": []string{notExec}, "cwd": ws, "sandbox_mode": mode}
			o := sbx(t, opts{args: []string{"exec"}, dir: ws, stdin: strings.NewReader(mustJSON(t, req))})
			var res struct {
				ExitCode    int    `json:"exit_code"`
				Stderr      string `json:"stderr"`
				Error       string `json:"error"`
				ErrorDetail struct {
					Kind, Errno string
				} `json:"error_detail"`
				Enforcement struct {
					Launch string `json:"launch"`
				} `json:"enforcement"`
			}
			if err := json.Unmarshal([]byte(o.stdout), &res); err != nil {
				t.Fatalf("exit %d: %v\n%s\n%s", o.code, err, o.stdout, o.stderr)
			}
			t.Logf("launch %s: exit_code %d error %q", res.Enforcement.Launch, res.ExitCode, res.Error)
			if o.code != 0 || res.ExitCode != 126 || res.ErrorDetail.Kind != "exec_failed" || res.ErrorDetail.Errno != "EACCES" || res.Stderr != "" {
				t.Errorf("exit %d, exit_code %d, error_detail %+v, stderr %q; want 0, 126, exec_failed EACCES, empty", o.code, res.ExitCode, res.ErrorDetail, res.Stderr)
			}
		})
	}
}
