package serve

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/journal"
	"github.com/sbx-sandbox/sbx/internal/profiles"
)

// replayed is what a server's logs would replay as.
func replayed(logs *MemLogs, ids ...string) []journal.Session {
	var out []journal.Session
	for _, id := range ids {
		out = append(out, journal.Session{ID: id, Records: logs.Get(id).Records()})
	}
	return out
}

// TestRestore: a restarted server rebuilds sessions and grants exactly
// from the log, and settles what the dead one left open: the pending
// approval cancelled, the open turn ended.
func TestRestore(t *testing.T) {
	r := newRace(escalate.AllowedOnce, true)
	c := newClient(t, Options{Answerer: r})
	ws, turn := c.openTurn("s", map[string]any{"preset": "read-only"})
	c.ok("session/set_preset", map[string]any{"session_id": "s", "key": "auto"})
	out := t.TempDir()
	c.ok("grants/apply", map[string]any{"session_id": "s", "environment_id": "e",
		"requested": map[string]any{"file_system": map[string]any{"write": []string{out}}},
		"response":  map[string]any{"granted": map[string]any{"file_system": map[string]any{"write": []string{out}}}, "scope": "session"}})
	c.start("exec", escalating("s", turn, "pending", ws, t.TempDir()))
	<-r.asked
	// The server dies here: what its log holds is what a replay sees.
	before := replayed(c.logs, "s")

	logs := &MemLogs{}
	for _, rec := range before[0].Records {
		logs.Get("s").Append(rec)
	}
	srv := New(Options{OpenLog: logs.Open, Logf: t.Logf})
	if problems := srv.Restore(before); len(problems) > 0 {
		t.Fatalf("restore: %v", problems)
	}
	c2 := connect(t, srv, logs)
	c2.ok("initialize", nil)
	got := c2.ok("session/permissions", map[string]any{"session_id": "s"})["current"].(map[string]any)
	if got["sandbox_mode"] != "workspace-write" || got["approval_policy"] != "on-request" || got["preset"] != "auto" {
		t.Errorf("restored knobs: %v", got)
	}
	tail := c2.records("s")[len(before[0].Records):]
	if !slices.Equal(tail, []string{journal.TypeApprovalDecided, journal.TypeCallFinished, journal.TypeTurnEnded}) {
		t.Errorf("settled with %v, want decided, call finished, turn ended", tail)
	}
	if d := c2.recordData("s", journal.TypeApprovalDecided); d[len(d)-1]["outcome"] != "cancelled" {
		t.Errorf("pending approval settled %v", d)
	}
	if code, _ := c2.fail("exec", map[string]any{"session_id": "s", "turn_id": turn, "call_id": "x", "cwd": ws, "command": []string{"true"}}); code != CodeNoOpenTurn {
		t.Errorf("the dead server's turn is still open: %d", code)
	}
	turn2 := c2.ok("turn/begin", map[string]any{"session_id": "s"})["turn_id"].(string)
	res := c2.ok("exec", map[string]any{"session_id": "s", "turn_id": turn2, "call_id": "w", "cwd": ws, "environment_id": "e",
		"exclude_tmp": true, "exclude_tmpdir": true, "command": []string{"sh", "-c", "echo ran > " + out + "/marker"}})
	if res["exit_code"] != 0.0 || !ran(out) {
		t.Errorf("the restored session grant did not apply: %v", res)
	}
}

// TestRestoreRejects: a log that does not make sense is not restored.
func TestRestoreRejects(t *testing.T) {
	c := newClient(t, Options{Answerer: AnswererFunc(func(context.Context, Question) (escalate.Outcome, error) { return escalate.AllowedOnce, nil })})
	ws, turn := c.openTurn("s", map[string]any{"preset": "auto"})
	c.ok("exec", escalating("s", turn, "c", ws, t.TempDir()))
	recs := c.logs.Get("s").Records()
	var decided journal.Record
	var withoutAsked []journal.Record
	for _, r := range recs {
		if r.Type == journal.TypeApprovalDecided {
			decided = r
		}
		if r.Type != journal.TypeApprovalAsked {
			withoutAsked = append(withoutAsked, r)
		}
	}
	for _, tt := range []struct {
		name string
		recs []journal.Record
		want string
	}{
		{"decided twice", append(slices.Clone(recs), decided), "decided twice"},
		{"decided without asked", withoutAsked, "without being asked"},
		{"no opening", recs[1:], "does not begin with session/opened"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := New(Options{Logf: t.Logf})
			problems := srv.Restore([]journal.Session{{ID: "s", Records: tt.recs}})
			if len(problems) != 1 || !strings.Contains(problems[0].Err.Error(), tt.want) {
				t.Errorf("problems %v, want %q", problems, tt.want)
			}
			if _, e := srv.lookup("s"); e == nil {
				t.Error("a rejected log was restored")
			}
		})
	}
}

// TestRestoreServerRules: a log the journal accepts but a server cannot
// serve from (journal.ServerOnly) is not restored either, and a call
// started and not finished is settled lost, in the order started.
func TestRestoreServerRules(t *testing.T) {
	opened := journal.SessionOpened{SessionID: "s", Cwd: t.TempDir(), EnvironmentID: "e", Preset: "read-only"}
	recs := func(t *testing.T, ps ...journal.Payload) []journal.Record {
		var out []journal.Record
		for _, p := range append([]journal.Payload{opened}, ps...) {
			r, err := journal.NewRecord("s", p)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		return out
	}
	for _, tt := range []struct {
		name string
		recs []journal.Payload
		want string
	}{
		{"two turns", []journal.Payload{journal.TurnBegun{TurnID: "t1"}, journal.TurnBegun{TurnID: "t2"}}, "turn t2 begun while t1 is open"},
		{"unknown knob", []journal.Payload{journal.KnobChanged{Knob: "colour", To: "red"}}, `unknown knob "colour"`},
		{"grant outside its turn", []journal.Payload{journal.GrantApplied{EnvironmentID: "e", TurnID: "t1", NormalizeResult: profiles.NormalizeResult{Scope: profiles.ScopeTurn}}}, "outside it"},
		{"closed with a call running", []journal.Payload{journal.CallStarted{CallID: "c"}, journal.SessionClosed{}}, "calls [c] are open"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := New(Options{Logf: t.Logf})
			problems := srv.Restore([]journal.Session{{ID: "s", Records: recs(t, tt.recs...)}})
			if len(problems) != 1 || !strings.Contains(problems[0].Err.Error(), tt.want) {
				t.Errorf("problems %v, want %q", problems, tt.want)
			}
			if _, e := srv.lookup("s"); e == nil {
				t.Error("a rejected log was restored")
			}
		})
	}
	t.Run("calls lost in order", func(t *testing.T) {
		logs := &MemLogs{}
		srv := New(Options{OpenLog: logs.Open, Logf: t.Logf})
		var started []journal.Payload
		// More than a map's small group, so that a map's order would show.
		ids := []string{"c3", "c1", "c2", "c9", "c4", "c8", "c5", "c7", "c6", "c12", "c10", "c11"}
		for _, id := range ids {
			started = append(started, journal.CallStarted{CallID: id})
		}
		if problems := srv.Restore([]journal.Session{{ID: "s", Records: recs(t, started...)}}); len(problems) != 0 {
			t.Fatalf("restore: %v", problems)
		}
		var lost []string
		for _, r := range logs.Get("s").Records() {
			p, err := journal.Decode(r)
			if f, ok := p.(*journal.CallFinished); err == nil && ok && f.Outcome == journal.OutcomeLost {
				lost = append(lost, f.CallID)
			}
		}
		if !slices.Equal(lost, ids) {
			t.Errorf("calls settled lost: %v, want %v", lost, ids)
		}
	})
}
