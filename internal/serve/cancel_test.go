package serve

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/journal"
)

// race is an injected answerer and hooks that stop a call where a test
// wants to cancel it.
type race struct {
	asked    chan Question    // the answerer was called
	release  chan struct{}    // lets the answerer answer
	outcome  escalate.Outcome // what it answers once released
	honour   bool             // return at once when ctx ends
	returned chan struct{}    // the answerer returned
}

func newRace(outcome escalate.Outcome, honour bool) *race {
	return &race{asked: make(chan Question, 1), release: make(chan struct{}), outcome: outcome, honour: honour, returned: make(chan struct{})}
}

func (r *race) Approve(ctx context.Context, q Question) (escalate.Outcome, error) {
	defer close(r.returned)
	r.asked <- q
	if r.honour {
		select {
		case <-ctx.Done():
			return escalate.Cancelled, ctx.Err()
		case <-r.release:
		}
	} else {
		<-r.release // a late answer: ctx is not looked at
	}
	return r.outcome, nil
}

// escalating is an exec that needs approval: a write outside the
// workspace (and /tmp, excluded) into out, where it leaves a marker.
func escalating(session, turn, callID, ws, out string) map[string]any {
	return map[string]any{"session_id": session, "turn_id": turn, "call_id": callID, "cwd": ws,
		"command": []string{"sh", "-c", "echo ran > " + filepath.Join(out, "marker")}, "exclude_tmp": true, "exclude_tmpdir": true,
		"sandbox_permissions": "with_additional_permissions", "justification": "write the output",
		"additional_permissions": map[string]any{"file_system": map[string]any{"write": []string{out}}}}
}

func ran(out string) bool {
	_, err := os.Stat(filepath.Join(out, "marker"))
	return err == nil
}

// cancelled checks that m is the cancelled error with outcome.
func cancelled(t *testing.T, m map[string]any, outcome string) {
	t.Helper()
	code, data := errorOf(t, "exec", m)
	if code != CodeCancelled || data["kind"] != KindCancelled || data["outcome"] != outcome {
		t.Errorf("want cancelled (%s), got %d %v", outcome, code, data)
	}
}

// TestApprovedCall: the records of an approved call come in order, the
// asked one before the answerer is called, and the call runs.
func TestApprovedCall(t *testing.T) {
	var logAtAsk []string
	var c *client
	answerer := AnswererFunc(func(ctx context.Context, q Question) (escalate.Outcome, error) {
		logAtAsk = c.records(q.SessionID)
		if q.CallID != "c1" || q.TurnID == "" || q.Tool != "shell" || q.Justification != "write the output" {
			t.Errorf("question %+v", q)
		}
		return escalate.AllowedOnce, nil
	})
	c = newClient(t, Options{Answerer: answerer})
	ws, turn := c.openTurn("s", map[string]any{"preset": "auto"})
	out := t.TempDir()
	res := c.ok("exec", escalating("s", turn, "c1", ws, out))
	if res["exit_code"] != 0.0 || !ran(out) || res["call_id"] != "c1" {
		t.Fatalf("approved call: %v", res)
	}
	if n := len(logAtAsk); n == 0 || logAtAsk[n-1] != journal.TypeApprovalAsked {
		t.Errorf("when the answerer was called the log ended %v, want approval/asked last", logAtAsk)
	}
	want := []string{journal.TypeSessionOpened, journal.TypeTurnBegun, journal.TypeCallStarted, journal.TypeApprovalAsked, journal.TypeApprovalDecided, journal.TypeCallFinished}
	if got := c.records("s"); !slices.Equal(got, want) {
		t.Errorf("records %v, want %v", got, want)
	}
	asked, decided := c.recordData("s", journal.TypeApprovalAsked)[0], c.recordData("s", journal.TypeApprovalDecided)[0]
	if asked["approval_id"] == "" || asked["approval_id"] != decided["approval_id"] || decided["outcome"] != "allowed-once" ||
		asked["call_id"] != "c1" || asked["tool_name"] != "shell" || asked["reason"] != "write the output" {
		t.Errorf("asked %v decided %v", asked, decided)
	}
	if _, has := asked["command"]; has {
		t.Errorf("approval/asked carries the call's arguments: %v", asked)
	}
}

// TestNoAnswerer: no answerer configured is unavailable, denied, and the
// call does not run.
func TestNoAnswerer(t *testing.T) {
	c := newClient(t, Options{})
	ws, turn := c.openTurn("s", map[string]any{"preset": "auto"})
	out := t.TempDir()
	code, data := c.fail("exec", escalating("s", turn, "c1", ws, out))
	if code != CodeDenied || data["kind"] != KindDenied || data["outcome"] != "unavailable" || ran(out) {
		t.Errorf("no answerer: %d %v ran=%v", code, data, ran(out))
	}
}

// TestCancelBeforeAsk: cancelled before the answerer is dispatched: cancelled
// without asking, nothing recorded as asked.
func TestCancelBeforeAsk(t *testing.T) {
	r := newRace(escalate.AllowedOnce, true)
	gate := make(chan struct{})
	c := newClient(t, Options{Answerer: r, Hooks: &Hooks{BeforeAsk: func(string) { <-gate }}})
	ws, turn := c.openTurn("s", map[string]any{"preset": "auto"})
	out := t.TempDir()
	pending := c.start("exec", escalating("s", turn, "c1", ws, out))
	waitFor(t, func() bool { return c.srv.running("c1") })
	if got := c.ok("exec/cancel", map[string]any{"call_id": "c1"}); got["cancelled"] != true {
		t.Fatalf("exec/cancel: %v", got)
	}
	close(gate)
	cancelled(t, c.wait(pending), OutcomeCancelled)
	select {
	case <-r.asked:
		t.Error("the answerer was asked after cancellation")
	default:
	}
	if got := c.records("s"); slices.Contains(got, journal.TypeApprovalAsked) || ran(out) {
		t.Errorf("records %v, ran %v", got, ran(out))
	}
}

// TestCancelDuringAsk: cancellation settles the approval at once,
// cancelled, and the call ends aborted_before_dispatch.
func TestCancelDuringAsk(t *testing.T) {
	r := newRace(escalate.AllowedOnce, true)
	c := newClient(t, Options{Answerer: r})
	ws, turn := c.openTurn("s", map[string]any{"preset": "auto"})
	out := t.TempDir()
	pending := c.start("exec", escalating("s", turn, "c1", ws, out))
	id := c.lastID()
	<-r.asked
	c.notify("$/cancelRequest", map[string]any{"id": id})
	m := c.wait(pending)
	cancelled(t, m, OutcomeAbortedBeforeDispatch)
	if d := c.recordData("s", journal.TypeApprovalDecided); len(d) != 1 || d[0]["outcome"] != "cancelled" || ran(out) {
		t.Errorf("decided %v, ran %v", d, ran(out))
	}
}

// TestLateAnswer: an answer that comes after cancellation is a no-op: one
// decided record, cancelled, and nothing runs.
func TestLateAnswer(t *testing.T) {
	r := newRace(escalate.AllowedOnce, false)
	c := newClient(t, Options{Answerer: r})
	ws, turn := c.openTurn("s", map[string]any{"preset": "auto"})
	out := t.TempDir()
	pending := c.start("exec", escalating("s", turn, "c1", ws, out))
	<-r.asked
	c.ok("exec/cancel", map[string]any{"call_id": "c1"})
	cancelled(t, c.wait(pending), OutcomeAbortedBeforeDispatch)
	close(r.release)
	<-r.returned
	time.Sleep(50 * time.Millisecond)
	if d := c.recordData("s", journal.TypeApprovalDecided); len(d) != 1 || d[0]["outcome"] != "cancelled" || ran(out) {
		t.Errorf("decided %v, ran %v", d, ran(out))
	}
}

// TestCancelAfterApproval: approved, then cancelled before dispatch: the
// approval stays allowed-once in the log, the command never starts.
func TestCancelAfterApproval(t *testing.T) {
	gate := make(chan struct{})
	c := newClient(t, Options{
		Answerer: AnswererFunc(func(context.Context, Question) (escalate.Outcome, error) { return escalate.AllowedOnce, nil }),
		Hooks:    &Hooks{Dispatching: func(string) { <-gate }},
	})
	ws, turn := c.openTurn("s", map[string]any{"preset": "auto"})
	out := t.TempDir()
	pending := c.start("exec", escalating("s", turn, "c1", ws, out))
	waitFor(t, func() bool { return len(c.recordData("s", journal.TypeApprovalDecided)) == 1 })
	c.ok("exec/cancel", map[string]any{"call_id": "c1"})
	close(gate)
	cancelled(t, c.wait(pending), OutcomeAbortedBeforeDispatch)
	if d := c.recordData("s", journal.TypeApprovalDecided); d[0]["outcome"] != "allowed-once" || ran(out) {
		t.Errorf("decided %v, ran %v", d, ran(out))
	}
	fin := c.recordData("s", journal.TypeCallFinished)
	if len(fin) != 1 || fin[0]["outcome"] != OutcomeAbortedBeforeDispatch {
		t.Errorf("call/finished %v", fin)
	}
}

// TestCancelAfterDispatch: the command's tree is killed and the result
// says aborted.
func TestCancelAfterDispatch(t *testing.T) {
	c := newClient(t, Options{})
	ws, turn := c.openTurn("s", map[string]any{"preset": "auto"})
	pending := c.start("exec", map[string]any{"session_id": "s", "turn_id": turn, "call_id": "c1", "cwd": ws, "stream": true,
		"command": []string{"sh", "-c", "sleep 30 & echo started; wait"}})
	note := <-c.notes
	if p := note["params"].(map[string]any); note["method"] != "exec/output" || p["data"] != "started\n" || p["call_id"] != "c1" {
		t.Fatalf("notification %v", note)
	}
	start := time.Now()
	c.ok("exec/cancel", map[string]any{"call_id": "c1"})
	res := c.wait(pending)["result"].(map[string]any)
	if res["aborted"] != true || res["killed_by"] != "signal" || time.Since(start) > 10*time.Second {
		t.Errorf("result %v after %v", res, time.Since(start))
	}
	if fin := c.recordData("s", journal.TypeCallFinished); fin[0]["outcome"] != "aborted" {
		t.Errorf("call/finished %v", fin)
	}
}

// TestTurnEndCancelsApproval: an approval still pending when its turn ends
// settles cancelled: denied.
func TestTurnEndCancelsApproval(t *testing.T) {
	r := newRace(escalate.AllowedOnce, true)
	c := newClient(t, Options{Answerer: r})
	ws, turn := c.openTurn("s", map[string]any{"preset": "auto"})
	out := t.TempDir()
	pending := c.start("exec", escalating("s", turn, "c1", ws, out))
	<-r.asked
	c.ok("turn/end", map[string]any{"session_id": "s", "turn_id": turn})
	code, data := errorOf(t, "exec", c.wait(pending))
	if code != CodeDenied || data["outcome"] != "cancelled" || ran(out) {
		t.Errorf("%d %v ran=%v", code, data, ran(out))
	}
}

// TestDisconnectKills: a client that goes away has its running calls
// killed and its pending approvals settled cancelled; ServeConn returns
// once they are done.
func TestDisconnectKills(t *testing.T) {
	r := newRace(escalate.AllowedOnce, true)
	c := newClient(t, Options{Answerer: r})
	ws, turn := c.openTurn("s", map[string]any{"preset": "auto"})
	out := t.TempDir()
	c.start("exec", map[string]any{"session_id": "s", "turn_id": turn, "call_id": "sleeper", "cwd": ws, "stream": true,
		"command": []string{"sh", "-c", "sleep 30 & echo started; wait"}})
	<-c.notes
	c.start("exec", escalating("s", turn, "asker", ws, out))
	<-r.asked
	start := time.Now()
	c.w.Close()
	select {
	case <-c.done:
	case <-time.After(15 * time.Second):
		t.Fatal("ServeConn did not return after the client went away")
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("took %v", time.Since(start))
	}
	outcomes := map[string]string{}
	for _, f := range c.recordData("s", journal.TypeCallFinished) {
		outcomes[f["call_id"].(string)] = f["outcome"].(string)
	}
	if outcomes["sleeper"] != "aborted" || outcomes["asker"] != OutcomeAbortedBeforeDispatch || ran(out) {
		t.Errorf("outcomes %v", outcomes)
	}
	if d := c.recordData("s", journal.TypeApprovalDecided); len(d) != 1 || d[0]["outcome"] != "cancelled" {
		t.Errorf("decided %v", d)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met within 10s")
}
