package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/journal"
)

// clientServer starts a server whose waterfall is the client answerer
// then more, with c an initialized client that answers approvals.
func clientServer(t *testing.T, opt Options, more ...Claimer) (*client, *ClientAnswerer) {
	t.Helper()
	cl := NewClientAnswerer()
	opt.Client, opt.Answerer = cl, append(Waterfall{cl}, more...)
	c := startClient(t, opt)
	if caps := c.ok("initialize", approvalsCaps)["capabilities"].(map[string]any); caps["approvals"] != true {
		t.Fatalf("capabilities %v", caps)
	}
	return c, cl
}

var approvalsCaps = map[string]any{"capabilities": map[string]any{"approvals": true}}

// another connects one more client to c's server; approvals says it
// declares them.
func (c *client) another(approvals bool) *client {
	d := connect(c.t, c.srv, c.logs)
	params := map[string]any{}
	if approvals {
		params = approvalsCaps
	}
	d.ok("initialize", params)
	return d
}

// note waits for the next notification or request of method, skipping
// others.
func (c *client) note(method string) map[string]any {
	c.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case m := <-c.notes:
			if m["method"] == method {
				return m
			}
		case <-deadline:
			c.t.Fatalf("no %s within 10s", method)
		}
	}
}

// noNote checks that no message of method comes within d.
func (c *client) noNote(method string, d time.Duration) {
	c.t.Helper()
	deadline := time.After(d)
	for {
		select {
		case m := <-c.notes:
			if m["method"] == method {
				c.t.Errorf("unexpected %s: %v", method, m)
			}
		case <-deadline:
			return
		}
	}
}

// answer sends a response to approval/requested: result is its result
// object (or raw JSON when a string).
func (c *client) answer(id any, result any) {
	m := map[string]any{"jsonrpc": "2.0", "id": id, "result": result}
	b, _ := json.Marshal(m)
	if s, ok := result.(string); ok {
		idb, _ := json.Marshal(id)
		b = []byte(`{"jsonrpc": "2.0", "id": ` + string(idb) + `, "result": ` + s + `}`)
	}
	c.sendLine("", string(b))
}

// refused waits for the approval/response_refused of kind.
func (c *client) refused(kind string) map[string]any {
	c.t.Helper()
	p := c.note("approval/response_refused")["params"].(map[string]any)
	if p["kind"] != kind || p["message"] == "" {
		c.t.Errorf("refusal %v, want kind %s", p, kind)
	}
	return p
}

func allowed(session, approval string) map[string]any {
	return map[string]any{"session_id": session, "approval_id": approval, "outcome": "allowed-once"}
}

// TestClientAnswers: approval/requested carries the question, with a
// stable rpc id; allowed-once runs the call, rejected and a JSON-RPC error
// deny it; the records are the approval path's.
func TestClientAnswers(t *testing.T) {
	c, _ := clientServer(t, Options{})
	ws, turn := c.openTurn("s", map[string]any{"preset": "auto"})
	for _, tt := range []struct {
		name   string
		answer func(id any, approval string)
		ran    bool
	}{
		{"allowed-once", func(id any, a string) { c.answer(id, allowed("s", a)) }, true},
		{"rejected", func(id any, a string) {
			c.answer(id, map[string]any{"session_id": "s", "approval_id": a, "outcome": "rejected"})
		}, false},
		{"error response", func(id any, _ string) {
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": 1, "message": "no"}})
			c.sendLine("", string(b))
		}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := t.TempDir()
			callID := "c-" + strings.ReplaceAll(tt.name, " ", "-")
			pending := c.start("exec", escalating("s", turn, callID, ws, out))
			req := c.note("approval/requested")
			p := req["params"].(map[string]any)
			approval, _ := p["approval_id"].(string)
			if req["id"] != RPCID(approval) || approval == "" || p["session_id"] != "s" || p["tool_name"] != "shell" ||
				p["call_id"] != callID || p["reason"] != "write the output" || fmt.Sprint(p["command"]) != "[sh -c echo ran > "+out+"/marker]" {
				t.Fatalf("approval/requested %v", req)
			}
			tt.answer(req["id"], approval)
			m := c.wait(pending)
			if tt.ran {
				if m["error"] != nil || !ran(out) {
					t.Fatalf("allowed-once: %v ran=%v", m, ran(out))
				}
			} else if code, data := errorOf(t, "exec", m); code != CodeDenied || data["outcome"] != "rejected" || ran(out) {
				t.Fatalf("%d %v ran=%v", code, data, ran(out))
			}
			decided := c.recordData("s", journal.TypeApprovalDecided)
			if d := decided[len(decided)-1]; d["approval_id"] != approval || (d["outcome"] == "allowed-once") != tt.ran {
				t.Errorf("decided %v", d)
			}
		})
	}
	want := []string{journal.TypeSessionOpened, journal.TypeTurnBegun}
	for range 3 {
		want = append(want, journal.TypeCallStarted, journal.TypeApprovalAsked, journal.TypeApprovalDecided, journal.TypeCallFinished)
	}
	if got := c.records("s"); !slices.Equal(got, want) {
		t.Errorf("records %v, want %v", got, want)
	}
}

// TestClientRefusals: every refused response kind, one by one, on one
// pending approval: each is refused with its kind and changes nothing
// (the call is still waiting, nothing decided); then a valid answer
// settles it, and one more is expired.
func TestClientRefusals(t *testing.T) {
	c, _ := clientServer(t, Options{})
	ws, turn := c.openTurn("s", map[string]any{"preset": "auto"})
	c.ok("session/open", map[string]any{"session_id": "other", "cwd": ws})
	out := t.TempDir()
	pending := c.start("exec", escalating("s", turn, "c1", ws, out))
	req := c.note("approval/requested")
	id := req["id"].(string)
	approval := req["params"].(map[string]any)["approval_id"].(string)
	good := fmt.Sprintf(`{"session_id": "s", "approval_id": %q, "outcome": "allowed-once"}`, approval)
	for _, tt := range []struct {
		name, kind, line string
	}{
		{"missing outcome", RefusedMalformed, fmt.Sprintf(`{"jsonrpc": "2.0", "id": %q, "result": {"session_id": "s", "approval_id": %q}}`, id, approval)},
		{"unknown key", RefusedMalformed, fmt.Sprintf(`{"jsonrpc": "2.0", "id": %q, "result": {"session_id": "s", "approval_id": %q, "outcome": "allowed-once", "scope": "session"}}`, id, approval)},
		{"case variant", RefusedMalformed, fmt.Sprintf(`{"jsonrpc": "2.0", "id": %q, "result": {"session_id": "s", "approval_id": %q, "OUTCOME": "allowed-once"}}`, id, approval)},
		{"duplicate key", RefusedMalformed, fmt.Sprintf(`{"jsonrpc": "2.0", "id": %q, "result": {"session_id": "s", "approval_id": %q, "outcome": "rejected", "outcome": "allowed-once"}}`, id, approval)},
		{"null result", RefusedMalformed, fmt.Sprintf(`{"jsonrpc": "2.0", "id": %q, "result": null}`, id)},
		{"result and error", RefusedMalformed, fmt.Sprintf(`{"jsonrpc": "2.0", "id": %q, "result": %s, "error": {"code": 1, "message": "x"}}`, id, good)},
		{"bad error object", RefusedMalformed, fmt.Sprintf(`{"jsonrpc": "2.0", "id": %q, "error": {"message": "no code"}}`, id)},
		{"no id", RefusedMalformed, fmt.Sprintf(`{"jsonrpc": "2.0", "result": %s}`, good)},
		{"foreign session", RefusedForeignSession, fmt.Sprintf(`{"jsonrpc": "2.0", "id": %q, "result": {"session_id": "other", "approval_id": %q, "outcome": "allowed-once"}}`, id, approval)},
		{"foreign approval", RefusedForeignApproval, fmt.Sprintf(`{"jsonrpc": "2.0", "id": %q, "result": {"session_id": "s", "approval_id": "a-other", "outcome": "allowed-once"}}`, id)},
		{"outcome cancelled", RefusedOutcome, fmt.Sprintf(`{"jsonrpc": "2.0", "id": %q, "result": {"session_id": "s", "approval_id": %q, "outcome": "cancelled"}}`, id, approval)},
		{"outcome unavailable", RefusedOutcome, fmt.Sprintf(`{"jsonrpc": "2.0", "id": %q, "result": {"session_id": "s", "approval_id": %q, "outcome": "unavailable"}}`, id, approval)},
		{"outcome unknown", RefusedOutcome, fmt.Sprintf(`{"jsonrpc": "2.0", "id": %q, "result": {"session_id": "s", "approval_id": %q, "outcome": "allowed-always"}}`, id, approval)},
		{"unknown rpc id", RefusedUnknown, fmt.Sprintf(`{"jsonrpc": "2.0", "id": "approval-nope", "result": %s}`, good)},
		{"numeric rpc id", RefusedUnknown, fmt.Sprintf(`{"jsonrpc": "2.0", "id": 4, "result": %s}`, good)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c.sendLine("", tt.line)
			c.refused(tt.kind)
			if d := c.recordData("s", journal.TypeApprovalDecided); len(d) != 0 || ran(out) {
				t.Fatalf("a refused response changed the approval: decided %v ran %v", d, ran(out))
			}
		})
	}
	select {
	case m := <-pending:
		t.Fatalf("the call ended on a refused response: %v", m)
	default:
	}
	// A connection that never declared approvals was sent nothing to answer.
	d := c.another(false)
	d.answer(id, good)
	d.refused(RefusedUnknown)
	c.answer(id, good)
	if m := c.wait(pending); m["error"] != nil || !ran(out) {
		t.Fatalf("allowed-once after the refusals: %v ran=%v", m, ran(out))
	}
	c.answer(id, good)
	c.refused(RefusedExpired)
	if d := c.recordData("s", journal.TypeApprovalDecided); len(d) != 1 || d[0]["outcome"] != "allowed-once" {
		t.Errorf("decided %v", d)
	}
}

// TestClientRace: two clients answer the same approval at once: the
// first valid answer read settles it, the other is refused as expired, and
// the call runs exactly when the winner allowed it.
func TestClientRace(t *testing.T) {
	a, _ := clientServer(t, Options{})
	b := a.another(true)
	ws, turn := a.openTurn("s", map[string]any{"preset": "auto"})
	b.ok("session/permissions", map[string]any{"session_id": "s"}) // b is the session's too
	out := t.TempDir()
	pending := a.start("exec", escalating("s", turn, "c1", ws, out))
	ra, rb := a.note("approval/requested"), b.note("approval/requested")
	if ra["id"] != rb["id"] {
		t.Fatalf("two ids for one approval: %v %v", ra["id"], rb["id"])
	}
	approval := ra["params"].(map[string]any)["approval_id"].(string)
	// Sent at once on two connections: either may be read first.
	a.answer(ra["id"], allowed("s", approval))
	b.answer(rb["id"], map[string]any{"session_id": "s", "approval_id": approval, "outcome": "rejected"})
	m := a.wait(pending)
	winner, loser, outcome := a, b, "allowed-once"
	if m["error"] != nil {
		winner, loser, outcome = b, a, "rejected"
		if code, data := errorOf(t, "exec", m); code != CodeDenied || data["outcome"] != "rejected" || ran(out) {
			t.Fatalf("the rejection won: %d %v ran=%v", code, data, ran(out))
		}
	} else if !ran(out) {
		t.Fatalf("allowed-once won but the call did not run: %v", m)
	}
	if p := loser.refused(RefusedExpired); p["rpc_id"] != ra["id"] {
		t.Errorf("refusal %v", p)
	}
	winner.noNote("approval/response_refused", 100*time.Millisecond)
	if d := a.recordData("s", journal.TypeApprovalDecided); len(d) != 1 || d[0]["outcome"] != outcome {
		t.Errorf("decided %v, want one %s", d, outcome)
	}
}

// cancelAsk cancels call c1 of session s while its approval is being asked,
// how: "exec/cancel" (the call is aborted before dispatch) or "turn/end"
// (the approval settles cancelled, the call is denied).
func cancelAsk(t *testing.T, c *client, how, turn string, pending chan map[string]any) {
	t.Helper()
	if how == "exec/cancel" {
		c.ok("exec/cancel", map[string]any{"call_id": "c1"})
		cancelled(t, c.wait(pending), OutcomeAbortedBeforeDispatch)
		return
	}
	c.ok("turn/end", map[string]any{"session_id": "s", "turn_id": turn})
	if code, data := errorOf(t, "exec", c.wait(pending)); code != CodeDenied || data["outcome"] != "cancelled" {
		t.Errorf("%d %v", code, data)
	}
}

// TestClientCancelDuringAsk: a cancellation while the client is asked
// settles the approval cancelled; the request is withdrawn
// ($/cancelRequest) and an answer after it is refused as expired.
func TestClientCancelDuringAsk(t *testing.T) {
	for _, how := range []string{"exec/cancel", "turn/end"} {
		t.Run(how, func(t *testing.T) {
			c, _ := clientServer(t, Options{})
			ws, turn := c.openTurn("s", map[string]any{"preset": "auto"})
			out := t.TempDir()
			pending := c.start("exec", escalating("s", turn, "c1", ws, out))
			req := c.note("approval/requested")
			cancelAsk(t, c, how, turn, pending)
			if w := c.note("$/cancelRequest")["params"].(map[string]any); w["id"] != req["id"] {
				t.Errorf("$/cancelRequest %v", w)
			}
			c.answer(req["id"], allowed("s", req["params"].(map[string]any)["approval_id"].(string)))
			c.refused(RefusedExpired)
			if d := c.recordData("s", journal.TypeApprovalDecided); len(d) != 1 || d[0]["outcome"] != "cancelled" || ran(out) {
				t.Errorf("decided %v ran %v", d, ran(out))
			}
		})
	}
}

// TestClientTimeout: no answer within the answer timeout is unavailable,
// denied; an answer after it is refused as late.
func TestClientTimeout(t *testing.T) {
	c, _ := clientServer(t, Options{AnswerTimeout: 300 * time.Millisecond})
	ws, turn := c.openTurn("s", map[string]any{"preset": "auto"})
	out := t.TempDir()
	pending := c.start("exec", escalating("s", turn, "c1", ws, out))
	req := c.note("approval/requested")
	code, data := errorOf(t, "exec", c.wait(pending))
	if code != CodeDenied || data["outcome"] != "unavailable" || ran(out) {
		t.Fatalf("%d %v ran=%v", code, data, ran(out))
	}
	c.answer(req["id"], allowed("s", req["params"].(map[string]any)["approval_id"].(string)))
	c.refused(RefusedLate)
	if d := c.recordData("s", journal.TypeApprovalDecided); len(d) != 1 || d[0]["outcome"] != "unavailable" || ran(out) {
		t.Errorf("decided %v ran %v", d, ran(out))
	}
}

// TestAnswererTimeout: an answerer that hangs (ignoring its context) is
// denied at the timeout, as unavailable, never allowed.
func TestAnswererTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	hang := AnswererFunc(func(context.Context, Question) (escalate.Outcome, error) {
		<-release
		return escalate.AllowedOnce, nil
	})
	c := newClient(t, Options{Answerer: Waterfall{Always{hang}}, AnswerTimeout: 200 * time.Millisecond})
	ws, turn := c.openTurn("s", map[string]any{"preset": "auto"})
	out := t.TempDir()
	code, data := c.fail("exec", escalating("s", turn, "c1", ws, out))
	if code != CodeDenied || data["outcome"] != "unavailable" || ran(out) {
		t.Errorf("%d %v ran=%v", code, data, ran(out))
	}
}

// TestClientReconnect: a pending approval survives its answering client's
// disconnect; a client that connects, initializes with approvals and
// names the session is sent it again with the same rpc id, and its
// answer runs the call.
func TestClientReconnect(t *testing.T) {
	cl := NewClientAnswerer()
	runner := newClient(t, Options{Client: cl, Answerer: Waterfall{cl}})
	answering := runner.another(true)
	ws, turn := runner.openTurn("s", map[string]any{"preset": "auto"})
	answering.ok("session/permissions", map[string]any{"session_id": "s"})
	out := t.TempDir()
	pending := runner.start("exec", escalating("s", turn, "c1", ws, out))
	first := answering.note("approval/requested")
	runner.noNote("approval/requested", 50*time.Millisecond)
	answering.w.Close()
	<-answering.done
	again := runner.another(true)
	again.noNote("approval/requested", 50*time.Millisecond) // not the session's yet
	again.ok("session/permissions", map[string]any{"session_id": "s"})
	second := again.note("approval/requested")
	if second["id"] != first["id"] || fmt.Sprint(second["params"]) != fmt.Sprint(first["params"]) {
		t.Fatalf("resent %v, first %v", second, first)
	}
	again.answer(second["id"], allowed("s", second["params"].(map[string]any)["approval_id"].(string)))
	if m := runner.wait(pending); m["error"] != nil || !ran(out) {
		t.Fatalf("after the reconnect: %v ran=%v", m, ran(out))
	}
	if n := len(runner.recordData("s", journal.TypeApprovalAsked)); n != 1 {
		t.Errorf("%d asked records for one approval", n)
	}
}

// TestWaterfallPassesOn: the client answerer claims only while a client
// that declared approvals is connected: else the next answerer answers,
// and when none claims the approval is unavailable.
func TestWaterfallPassesOn(t *testing.T) {
	cl := NewClientAnswerer()
	var asked []string
	next := Always{AnswererFunc(func(_ context.Context, q Question) (escalate.Outcome, error) {
		asked = append(asked, q.CallID)
		return escalate.AllowedOnce, nil
	})}
	c := newClient(t, Options{Client: cl, Answerer: Waterfall{cl, next}})
	ws, turn := c.openTurn("s", map[string]any{"preset": "auto"})
	out := t.TempDir()
	if m := c.call("exec", escalating("s", turn, "c1", ws, out)); m["error"] != nil || !ran(out) || !slices.Equal(asked, []string{"c1"}) {
		t.Errorf("passed on: %v ran=%v asked %v", m, ran(out), asked)
	}
	c.noNote("approval/requested", 50*time.Millisecond)

	c = newClient(t, Options{Client: cl, Answerer: Waterfall{cl}})
	ws, turn = c.openTurn("s", map[string]any{"preset": "auto"})
	out = t.TempDir()
	code, data := c.fail("exec", escalating("s", turn, "c1", ws, out))
	if code != CodeDenied || data["outcome"] != "unavailable" || ran(out) {
		t.Errorf("none claims: %d %v ran=%v", code, data, ran(out))
	}
	if d := c.recordData("s", journal.TypeApprovalDecided); len(d) != 1 || d[0]["outcome"] != "unavailable" {
		t.Errorf("decided %v", d)
	}
}

// TestNeverAsksNobody: under approval_policy never, what would need asking
// is denied before any answerer: the client is sent nothing.
func TestNeverAsksNobody(t *testing.T) {
	c, _ := clientServer(t, Options{})
	ws, turn := c.openTurn("s", map[string]any{"sandbox_mode": "workspace-write", "approval_policy": "never"})
	out := t.TempDir()
	code, data := c.fail("exec", escalating("s", turn, "c1", ws, out))
	if code != CodeDenied || data["outcome"] != "never" || ran(out) {
		t.Errorf("never: %d %v ran=%v", code, data, ran(out))
	}
	c.noNote("approval/requested", 50*time.Millisecond)
	if got := c.records("s"); slices.Contains(got, journal.TypeApprovalAsked) {
		t.Errorf("records %v", got)
	}
}

// TestInitializeApprovals: capabilities.approvals must be a boolean;
// other capabilities are a newer client's and skipped.
func TestInitializeApprovals(t *testing.T) {
	c := startClient(t, Options{})
	if code, data := c.fail("initialize", map[string]any{"capabilities": map[string]any{"approvals": "yes"}}); code != CodeInvalidParams || data["field"] != "capabilities.approvals" {
		t.Errorf("%d %v", code, data)
	}
	if caps := c.ok("initialize", map[string]any{"capabilities": map[string]any{"approvals": true, "later": 1}})["capabilities"].(map[string]any); caps["approvals"] != false {
		t.Errorf("a server without a client answerer: %v", caps)
	}
}

// TestClientBinding: a session's approvals go only to the approval
// clients bound to it (it opened the session, or named it since); a
// response from another connection is refused as unknown and changes
// nothing; with no such client bound, the client answerer does not claim
// and the waterfall passes on.
func TestClientBinding(t *testing.T) {
	var passed []string
	next := Always{AnswererFunc(func(_ context.Context, q Question) (escalate.Outcome, error) {
		passed = append(passed, q.SessionID)
		return escalate.Rejected, nil
	})}
	a, _ := clientServer(t, Options{}, next)
	b := a.another(true)
	runner := a.another(false)
	ws, turnA := a.openTurn("a", map[string]any{"preset": "auto"})
	b.openTurn("b", map[string]any{"preset": "auto"})
	out := t.TempDir()
	pending := a.start("exec", escalating("a", turnA, "c1", ws, out))
	req := a.note("approval/requested")
	b.noNote("approval/requested", 100*time.Millisecond)
	approval := req["params"].(map[string]any)["approval_id"].(string)
	b.answer(req["id"], map[string]any{"session_id": "a", "approval_id": approval, "outcome": "rejected"})
	b.refused(RefusedUnknown)
	a.answer(req["id"], allowed("a", approval))
	if m := a.wait(pending); m["error"] != nil || !ran(out) {
		t.Fatalf("the bound client's answer: %v ran=%v", m, ran(out))
	}
	b.noNote("$/cancelRequest", 50*time.Millisecond)

	// Session x is bound to runner only, which answers no approvals.
	wsX, turnX := runner.openTurn("x", map[string]any{"preset": "auto"})
	code, data := runner.fail("exec", escalating("x", turnX, "cx", wsX, t.TempDir()))
	if code != CodeDenied || data["outcome"] != "rejected" || !slices.Equal(passed, []string{"x"}) {
		t.Errorf("unbound: %d %v, passed to %v", code, data, passed)
	}
	a.noNote("approval/requested", 50*time.Millisecond)
}
