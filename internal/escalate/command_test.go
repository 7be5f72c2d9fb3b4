package escalate

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sbx-sandbox/sbx/internal/profiles"
)

// script writes an approver program running body under /bin/sh.
func script(t *testing.T, body string) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("approver scripts need /bin/sh")
	}
	path := filepath.Join(t.TempDir(), "approver")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func req() ApprovalRequest {
	m := profiles.DangerFullAccess
	return ApprovalRequest{CallID: "c1", Tool: "shell", TargetMode: &m, Justification: "why", Cwd: repo}
}

func TestCommandApproverDenials(t *testing.T) {
	tests := []struct {
		name string
		body string
		want error
	}{
		{"garbage", `echo 'sure, go ahead'`, ErrMalformedAnswer},
		{"nothing on stdout", `exit 0`, ErrMalformedAnswer},
		{"unknown field", `echo '{"outcome":"allowed-once","scope":"session"}'`, ErrMalformedAnswer},
		{"trailing data", `echo '{"outcome":"allowed-once"} {"outcome":"allowed-once"}'`, ErrMalformedAnswer},
		{"missing outcome", `echo '{}'`, ErrMalformedAnswer},
		{"duplicate outcome, allowed last", `echo '{"outcome":"denied","outcome":"allowed-once"}'`, ErrMalformedAnswer},
		{"case variant of outcome", `echo '{"OUTCOME":"allowed-once"}'`, ErrMalformedAnswer},
		{"outcome not a string", `echo '{"outcome":true}'`, ErrMalformedAnswer},
		{"non-zero exit even with allowed", `echo '{"outcome":"allowed-once"}'; exit 3`, ErrApproverFailed},
		{"crash", `kill -9 $$`, ErrApproverFailed},
		{"timeout", `exec sleep 5`, ErrTimeout},
		{"timeout with a child holding stdout", `sleep 5`, ErrTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := CommandApprover{Argv: []string{script(t, tt.body)}, Timeout: 200 * time.Millisecond}
			start := time.Now()
			_, err := a.Approve(context.Background(), req())
			if !errors.Is(err, tt.want) || !errors.Is(err, ErrDenied) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("took %s: the timeout did not end it", d)
			}
		})
	}
	t.Run("no such program", func(t *testing.T) {
		a := CommandApprover{Argv: []string{filepath.Join(t.TempDir(), "missing")}}
		if _, err := a.Approve(context.Background(), req()); !errors.Is(err, ErrApproverFailed) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("empty argv", func(t *testing.T) {
		if _, err := (CommandApprover{}).Approve(context.Background(), req()); !errors.Is(err, ErrNoApprover) {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestParseAnswerExact: an answer is exact JSON (DESIGN.md invariant 4);
// encoding/json alone took the last duplicate and folded the case, so both
// of these approved.
func TestParseAnswerExact(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"duplicate outcome", `{"outcome":"denied","outcome":"allowed-once"}`, "outcome: duplicate key"},
		{"duplicate of the same value", `{"outcome":"allowed-once","outcome":"allowed-once"}`, "outcome: duplicate key"},
		{"upper case", `{"OUTCOME":"allowed-once"}`, "OUTCOME: unknown field (did you mean outcome?)"},
		{"mixed case", `{"Outcome":"allowed-once"}`, "Outcome: unknown field (did you mean outcome?)"},
		{"array", `[{"outcome":"allowed-once"}]`, "expected a JSON object, got JSON array"},
		{"null outcome", `{"outcome":null}`, "outcome: missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseAnswer([]byte(tt.in))
			if !errors.Is(err, ErrMalformedAnswer) || !errors.Is(err, ErrDenied) {
				t.Fatalf("parseAnswer(%s) = %q, %v; want ErrMalformedAnswer", tt.in, o, err)
			}
			if got := err.Error(); !strings.HasSuffix(got, tt.want) {
				t.Errorf("err = %q, want it to end in %q", got, tt.want)
			}
		})
	}
	if o, err := parseAnswer([]byte(`{"outcome":"allowed-once"}`)); err != nil || o != AllowedOnce {
		t.Errorf("exact answer = %q, %v; want allowed-once", o, err)
	}
}

func TestCommandApproverOutcomes(t *testing.T) {
	for _, o := range []Outcome{AllowedOnce, Rejected, Cancelled, Unavailable, "maybe"} {
		t.Run(string(o), func(t *testing.T) {
			a := CommandApprover{Argv: []string{script(t, `echo '{"outcome":"`+string(o)+`"}'`)}}
			got, err := a.Approve(context.Background(), req())
			if err != nil || got != o {
				t.Fatalf("got %q, %v", got, err)
			}
		})
	}
	// Through Decide, the unknown one is a denial.
	a := CommandApprover{Argv: []string{script(t, `echo '{"outcome":"maybe"}'`)}}
	if _, err := Decide(context.Background(), escalation(), profiles.ApprovalOnRequest, a); !errors.Is(err, ErrUnknownOutcome) {
		t.Fatalf("Decide: %v", err)
	}
}

func TestCommandApproverRequestOnStdin(t *testing.T) {
	dir := t.TempDir()
	saved := filepath.Join(dir, "request.json")
	a := CommandApprover{Argv: []string{script(t, `cat > "$1"; echo '{"outcome":"allowed-once"}'`), saved}}
	c := additional()
	c.EnvironmentID = "e1"
	dec, err := Decide(context.Background(), c, profiles.ApprovalOnRequest, a)
	if err != nil || dec.Via != ViaApproval {
		t.Fatalf("%+v, %v", dec, err)
	}
	data, err := os.ReadFile(saved)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	// approval_id is fresh per question: 32 hex digits.
	if id, _ := got["approval_id"].(string); len(id) != 32 {
		t.Errorf("approval_id %q, want 32 hex digits", id)
	}
	delete(got, "approval_id")
	out := map[string]any{"file_system": map[string]any{"write": []any{"/sbx-test/out"}}}
	want := map[string]any{
		"call_id": "c2", "environment_id": "e1", "tool": "apply_patch", "justification": "write the output", "cwd": repo,
		"standing_mode":          "workspace-write",
		"additional_permissions": out, "merged_permissions": out, "new_permissions": out,
	}
	if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
		t.Fatalf("request\n got %s\nwant %s", g, w)
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
