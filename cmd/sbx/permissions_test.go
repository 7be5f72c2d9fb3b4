package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/profiles"
)

// approverLog is an approver program that appends each request it is shown
// to a log, one JSON line each, and answers outcome: the tests read the log
// to see whether, and with what, the approver was asked.
type approverLog struct{ prog, log string }

func newApprover(t *testing.T, outcome string) approverLog {
	t.Helper()
	dir := t.TempDir()
	a := approverLog{prog: filepath.Join(dir, "approve.sh"), log: filepath.Join(dir, "asked.jsonl")}
	script := "#!/bin/sh\ncat >> " + a.log + "\necho >> " + a.log + "\necho '{\"outcome\":\"" + outcome + "\"}'\n"
	if err := os.WriteFile(a.prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return a
}

// asked returns the requests the approver was shown.
func (a approverLog) asked(t *testing.T) []escalate.ApprovalRequest {
	t.Helper()
	data, err := os.ReadFile(a.log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []escalate.ApprovalRequest
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r escalate.ApprovalRequest
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("approver log line %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

func runMain(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(append([]string{"run"}, args...), Stdio{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

// Codex: additional_permissions under use_default require
// with_additional_permissions, unless the caller marks them its own.
func TestExecUseDefaultAdditionalNeedsPreauthorized(t *testing.T) {
	cwd := t.TempDir()
	base := `{"command":["/bin/true"],"cwd":"` + cwd + `","additional_permissions":{"file_system":{"read":["/usr"]}}`
	code, out, stderr := execMain(t, base+`}`)
	if code != ExitRefused || !strings.Contains(stderr, "additional_permissions: additional_permissions need sandbox_permissions with_additional_permissions") ||
		!strings.Contains(stderr, `"preauthorized": true`) {
		t.Fatalf("without preauthorized: exit %d, stderr %q; want a refusal naming with_additional_permissions", code, stderr)
	}
	code, out, stderr = execMain(t, base+`,"preauthorized":true}`)
	if code != 0 {
		t.Fatalf("preauthorized: exit %d: %s", code, stderr)
	}
	var res struct {
		Permissions struct {
			Preauthorized profiles.Profile `json:"preauthorized"`
		} `json:"permissions"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	if got := res.Permissions.Preauthorized.ReadPaths(); len(got) != 1 || got[0] != "/usr" {
		t.Errorf("permissions.preauthorized read %q, want [/usr]", got)
	}
	code, _, stderr = execMain(t, base+`,"preauthorized":true,"sandbox_permissions":"with_additional_permissions","justification":"j"}`)
	if code != ExitRefused || !strings.HasPrefix(stderr, "sbx exec: preauthorized: only with sandbox_permissions use_default") {
		t.Errorf("preauthorized with with_additional_permissions: exit %d, stderr %q", code, stderr)
	}
}

// Codex: under on-failure and untrusted a call may not ask for more; the
// approver is never called.
func TestExecOnlyOnRequestAsks(t *testing.T) {
	cwd := t.TempDir()
	for _, ap := range []string{"on-failure", "untrusted"} {
		for name, esc := range map[string]string{
			"additional": `"sandbox_permissions":"with_additional_permissions","justification":"j","additional_permissions":{"network":{"enabled":true}}`,
			"escalated":  `"sandbox_permissions":"require_escalated","justification":"j","escalate_to":"danger-full-access"`,
		} {
			a := newApprover(t, "allowed-once")
			code, out, stderr := execMain(t, `{"command":["/bin/true"],"cwd":"`+cwd+`",`+esc+`,"approval_policy":"`+ap+`","approver":["`+a.prog+`"]}`)
			if code != ExitRefused || !strings.Contains(stderr, "approval policy "+ap+": only approval policy on-request") {
				t.Errorf("%s %s: exit %d, stderr %q; want a refusal naming the policy", ap, name, code, stderr)
			}
			if !strings.Contains(string(out), `"outcome": "never"`) {
				t.Errorf("%s %s: %s; want outcome never", ap, name, out)
			}
			if n := len(a.asked(t)); n != 0 {
				t.Errorf("%s %s: the approver was asked %d times", ap, name, n)
			}
		}
	}
}

func TestRunRequireEscalatedNeedsTarget(t *testing.T) {
	code, _, stderr := runMain(t, "--sandbox-permissions", "require_escalated", "--justification", "j", "--", "/bin/true")
	if code != ExitRefused || !strings.Contains(stderr, "--escalate: required with --sandbox-permissions require_escalated: the target mode is missing") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// --network under with_additional_permissions is a request, shown to the
// approver, and valid alone.
func TestRunNetworkThroughApproval(t *testing.T) {
	a := newApprover(t, "rejected")
	code, _, stderr := runMain(t, "--cwd", t.TempDir(), "--sandbox-permissions", "with_additional_permissions", "--network",
		"--justification", "fetch", "--approver", a.prog, "--", "/bin/true")
	asked := a.asked(t)
	if code != ExitRefused || len(asked) != 1 {
		t.Fatalf("exit %d, asked %d, stderr %q; want one question, rejected", code, len(asked), stderr)
	}
	if p := asked[0].AdditionalPermissions; p == nil || !p.NetworkEnabled() {
		t.Errorf("the approver was shown %+v, want the network", asked[0])
	}
}

// The approver sees what the call would run with, marking what is new, with
// an approval id and the environment.
func TestExecApproverSeesMergedProfile(t *testing.T) {
	ws, granted, asked := t.TempDir(), t.TempDir(), t.TempDir()
	a := newApprover(t, "rejected")
	req := `{"command":["/bin/true"],"cwd":"` + ws + `","call_id":"c9","environment_id":"env7","sandbox_permissions":"with_additional_permissions",` +
		`"justification":"j","approval_policy":"on-request","approver":["` + a.prog + `"],` +
		`"grants":{"session":{"file_system":{"write":["` + granted + `"]}}},"additional_permissions":{"file_system":{"write":["` + asked + `"]}}}`
	if code, _, stderr := execMain(t, req); code != ExitRefused {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got := a.asked(t)
	if len(got) != 1 {
		t.Fatalf("asked %d times", len(got))
	}
	r := got[0]
	if r.ApprovalID == "" || r.EnvironmentID != "env7" || r.CallID != "c9" || r.Tool != "shell" {
		t.Errorf("request %+v: want an approval_id, environment_id env7, call_id c9, tool shell", r)
	}
	if r.MergedPermissions == nil || len(r.MergedPermissions.WritePaths()) != 2 {
		t.Errorf("merged_permissions %+v, want the grant and the request", r.MergedPermissions)
	}
	if r.NewPermissions == nil || len(r.NewPermissions.WritePaths()) != 1 || r.NewPermissions.WritePaths()[0] != asked {
		t.Errorf("new_permissions %+v, want only %s", r.NewPermissions, asked)
	}
}

func TestFSApprovalToolIsFS(t *testing.T) {
	ws, out := t.TempDir(), t.TempDir()
	a := newApprover(t, "rejected")
	var o, e bytes.Buffer
	code := Main([]string{"fs", "--cwd", ws, "--sandbox-permissions", "with_additional_permissions", "--allow-write", out,
		"--justification", "j", "--approver", a.prog, "--", "remove", out + "/x"}, Stdio{In: strings.NewReader(""), Out: &o, Err: &e})
	got := a.asked(t)
	if code != ExitRefused || len(got) != 1 || got[0].Tool != "fs" {
		t.Errorf("exit %d, asked %+v, stderr %q; want one question with tool fs", code, got, e.String())
	}
}

// The approver program is shown the command when it is what runs (the one
// question: what sbx serve's clients are shown too), and no command for an
// fs change or a shell spec, never a guess.
func TestApproverSeesCommand(t *testing.T) {
	a := newApprover(t, "rejected")
	runMain(t, "--cwd", t.TempDir(), "--sandbox-permissions", "with_additional_permissions", "--network",
		"--justification", "fetch", "--approver", a.prog, "--", "/bin/echo", "hi")
	ws, out := t.TempDir(), t.TempDir()
	var o, e bytes.Buffer
	Main([]string{"fs", "--cwd", ws, "--sandbox-permissions", "with_additional_permissions", "--allow-write", out,
		"--justification", "j", "--approver", a.prog, "--", "remove", out + "/x"}, Stdio{In: strings.NewReader(""), Out: &o, Err: &e})
	execMain(t, `{"shell":{"kind":"sh","script":"echo hi"},"cwd":"`+ws+`","sandbox_permissions":"with_additional_permissions",`+
		`"justification":"j","approval_policy":"on-request","approver":["`+a.prog+`"],"additional_permissions":{"network":{"enabled":true}}}`)
	got := a.asked(t)
	if len(got) != 3 {
		t.Fatalf("asked %+v, want three questions", got)
	}
	if c := got[0].Command; len(c) != 2 || c[0] != "/bin/echo" || c[1] != "hi" {
		t.Errorf("sbx run: command %q, want [/bin/echo hi]", c)
	}
	if got[1].Command != nil || got[2].Command != nil {
		t.Errorf("fs change %q, shell spec %q: want no command", got[1].Command, got[2].Command)
	}
}
