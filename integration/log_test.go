//go:build linux

package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/journal"
)

// writeSession writes a small session with the journal's own Writer: an
// approval asked and decided, a second one left pending, a turn left open.
func writeSession(t *testing.T, dir, id string) {
	t.Helper()
	w, err := journal.Open(dir, id)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, r := range []journal.Record{
		{Type: journal.TypeSessionOpened, Data: json.RawMessage(`{"cwd":"/w"}`)},
		{Type: journal.TypeTurnBegun, Data: json.RawMessage(`{"turn_id":"t1"}`)},
		{Type: journal.TypeApprovalAsked, Data: json.RawMessage(`{"approval_id":"a1","turn_id":"t1","tool_name":"shell","call_id":"c1","reason":"needs network"}`)},
		{Type: journal.TypeApprovalDecided, Data: json.RawMessage(`{"approval_id":"a1","outcome":"allowed-once"}`)},
		{Type: journal.TypeCallStarted, Data: json.RawMessage(`{"call_id":"c1"}`)},
		{Type: journal.TypeCallFinished, Data: json.RawMessage(`{"call_id":"c1","exit":0}`)},
		{Type: journal.TypeApprovalAsked, Data: json.RawMessage(`{"approval_id":"a2","turn_id":"t1","tool_name":"shell","call_id":"c2","reason":"r"}`)},
	} {
		if err := w.Append(r); err != nil {
			t.Fatal(err)
		}
	}
}

// logShowJSON is the --json output of sbx log show.
type logShowJSON struct {
	Sessions []struct {
		SessionID        string           `json:"session_id"`
		Records          []journal.Record `json:"records"`
		PendingApprovals []string         `json:"pending_approvals"`
		OpenTurns        []string         `json:"open_turns"`
	} `json:"sessions"`
	Problems []journal.Problem `json:"problems"`
}

// TestLogCommand runs sbx log show and verify on a good log (exit 0, every
// record, the pending approval and open turn), on the same log with a torn
// tail (exit 1, the torn record reported as dropped, the others shown), and
// with bad usage (exit 125 naming the problem).
func TestLogCommand(t *testing.T) {
	dir := t.TempDir()
	writeSession(t, dir, "s1")

	out := sbx(t, opts{args: []string{"log", "verify", dir}})
	if out.code != 0 || out.stdout != dir+": 1 session, 7 records: ok\n" {
		t.Fatalf("verify of a good log: exit %d\nstdout: %s\nstderr: %s", out.code, out.stdout, out.stderr)
	}
	out = sbx(t, opts{args: []string{"log", "show", "--json", dir}})
	var show logShowJSON
	if out.code != 0 || json.Unmarshal([]byte(out.stdout), &show) != nil {
		t.Fatalf("show --json: exit %d\nstdout: %s\nstderr: %s", out.code, out.stdout, out.stderr)
	}
	if len(show.Sessions) != 1 || len(show.Sessions[0].Records) != 7 || len(show.Problems) != 0 {
		t.Fatalf("show --json: %s", out.stdout)
	}
	s := show.Sessions[0]
	if s.SessionID != "s1" || s.Records[6].Seq != 7 || s.Records[3].Type != journal.TypeApprovalDecided ||
		strings.Join(s.PendingApprovals, ",") != "a2" || strings.Join(s.OpenTurns, ",") != "t1" {
		t.Errorf("show --json: %s", out.stdout)
	}
	out = sbx(t, opts{args: []string{"log", "show", dir}})
	for _, want := range []string{"session s1 (7 records)", "approval/decided", `{"approval_id":"a1","outcome":"allowed-once"}`, "pending: approval a2", "open: turn t1"} {
		if out.code != 0 || !strings.Contains(out.stdout, want) {
			t.Errorf("show: exit %d, no %q in\n%s", out.code, want, out.stdout)
		}
	}

	// A torn tail: the last record cut short, as a crash mid-append leaves it.
	path := filepath.Join(dir, "s1.log")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data[:len(data)-9], 0o600); err != nil {
		t.Fatal(err)
	}
	out = sbx(t, opts{args: []string{"log", "verify", dir}})
	if out.code != 1 || !strings.Contains(out.stdout, ": 1 session, 6 records: 1 problem\n") ||
		!strings.Contains(out.stdout, "problem: "+path+": offset ") || !strings.Contains(out.stdout, "torn: incomplete payload") ||
		!strings.Contains(out.stdout, "the last record is dropped") {
		t.Fatalf("verify of a torn log: exit %d\nstdout: %s\nstderr: %s", out.code, out.stdout, out.stderr)
	}
	out = sbx(t, opts{args: []string{"log", "verify", "--json", dir}})
	var verify struct {
		OK       bool              `json:"ok"`
		Sessions int               `json:"sessions"`
		Records  int               `json:"records"`
		Problems []journal.Problem `json:"problems"`
	}
	if out.code != 1 || json.Unmarshal([]byte(out.stdout), &verify) != nil || verify.OK || verify.Records != 6 ||
		len(verify.Problems) != 1 || verify.Problems[0].Kind != journal.ProblemTorn || verify.Problems[0].Effect != journal.EffectDropped {
		t.Fatalf("verify --json of a torn log: exit %d\nstdout: %s", out.code, out.stdout)
	}
	out = sbx(t, opts{args: []string{"log", "show", dir}})
	if out.code != 1 || !strings.Contains(out.stdout, "session s1 (6 records)") || strings.Contains(out.stdout, "a2") ||
		!strings.Contains(out.stdout, "problem: ") {
		t.Errorf("show of a torn log: exit %d\n%s", out.code, out.stdout)
	}
	if after, _ := os.ReadFile(path); len(after) != len(data)-9 {
		t.Error("sbx log changed the log")
	}

	// Bad usage.
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"log"}, "want a subcommand"},
		{[]string{"log", "rotate", dir}, `unknown subcommand "rotate"`},
		{[]string{"log", "verify"}, "want one DIR, got 0"},
		{[]string{"log", "verify", dir, dir}, "want one DIR, got 2"},
		{[]string{"log", "show", "--yaml", dir}, "yaml"},
		{[]string{"log", "verify", filepath.Join(dir, "missing")}, "no such file or directory"},
	} {
		out := sbx(t, opts{args: c.args})
		if out.code != 125 || !strings.Contains(out.stderr, c.msg) || out.stdout != "" {
			t.Errorf("sbx %q: exit %d, stderr %q; want 125 and %q", c.args, out.code, out.stderr, c.msg)
		}
		oneLine(t, strings.Join(c.args, " "), out.stderr)
	}
}
