package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// The kinds of an approval/response_refused notification: why a client's
// response to approval/requested was refused. A refused response changes
// nothing: the approval stays as it was (pending, or settled).
const (
	// RefusedMalformed: not exactly {session_id, approval_id, outcome}
	// (a missing, unknown or duplicate key, a wrong type), or not exactly
	// one of result and error.
	RefusedMalformed = "malformed"
	// RefusedForeignSession: session_id is not the approval's.
	RefusedForeignSession = "foreign_session"
	// RefusedForeignApproval: approval_id is not the approval's.
	RefusedForeignApproval = "foreign_approval"
	// RefusedOutcome: an outcome other than allowed-once or rejected
	// (cancelled and unavailable come from the server alone).
	RefusedOutcome = "invalid_outcome"
	// RefusedExpired: the approval was settled already, by another answer
	// or by a cancellation.
	RefusedExpired = "expired"
	// RefusedLate: the server stopped waiting (the answer timeout passed:
	// the approval was settled unavailable).
	RefusedLate = "late"
	// RefusedUnknown: no approval/requested of that id was sent to this
	// connection (or it was settled so long ago that it is forgotten).
	RefusedUnknown = "unknown_rpc_id"
)

// maxSettled bounds how many settled rpc ids are remembered, to tell an
// expired or late response from an unknown one.
const maxSettled = 4096

// ClientAnswerer is the client answerer of the waterfall (sbx serve
// --answerers client): it asks the connected clients that declared
// {"capabilities": {"approvals": true}} at initialize, with a JSON-RPC
// request approval/requested, and takes the first valid response.
//
// A session's approvals go only to the connections bound to it: the one
// that opened it, and every one that has since sent a request whose
// session_id names it (conn.bindNamed). It claims a question only while
// such a client, one that declared approvals, is connected: else the
// waterfall passes on. Once asked, an approval waits until it is
// answered, cancelled or timed out, whether or not a client stays
// connected: a client that (re)connects, initializes with approvals and
// names the session is sent its pending approvals again, with the same
// rpc id. (Only the server's uid may connect, so binding is about which
// client is the session's user, not about trust.)
type ClientAnswerer struct {
	mu      sync.Mutex
	conns   map[*conn]struct{}
	pending map[string]*clientAsk // by rpc id
	// settled are rpc ids no longer pending, with the kind a response to
	// one is refused as; order keeps them oldest first.
	settled map[string]string
	order   []string
	seq     int64
	// changed fires when an approval becomes pending or is settled (the
	// browser panel's event stream).
	changed broadcast
}

// NewClientAnswerer makes a client answerer; give it to the server as
// Options.Client and put it in the waterfall.
func NewClientAnswerer() *ClientAnswerer {
	return &ClientAnswerer{conns: map[*conn]struct{}{}, pending: map[string]*clientAsk{}, settled: map[string]string{}}
}

// approvalRequested is approval/requested's params: the one question
// every answerer gets (escalate.ApprovalRequest: target_mode,
// additional_permissions, new_permissions, merged_permissions, cap_add,
// standing_mode, cwd, the ids...), with the names this request had before
// it carried all of it (tool_name, reason) kept. The outer fields shadow
// the question's of the same key. Command is the call's argv, only when it
// is shown faithfully (Question.Command).
type approvalRequested struct {
	SessionID  string   `json:"session_id"`
	ApprovalID string   `json:"approval_id"`
	ToolName   string   `json:"tool_name"`
	CallID     string   `json:"call_id,omitempty"`
	Reason     string   `json:"reason"`
	Command    []string `json:"command,omitempty"`
	escalate.ApprovalRequest
}

// approvalAnswer is a client's result for approval/requested, decoded
// strictly: every key is required.
type approvalAnswer struct {
	SessionID  *string `json:"session_id"`
	ApprovalID *string `json:"approval_id"`
	Outcome    *string `json:"outcome"`
}

// rpcError is a client's JSON-RPC error object: a rejection.
type rpcError struct {
	Code    *int            `json:"code"`
	Message *string         `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// request is a request the server sends.
type request struct {
	JSONRPC string `json:"jsonrpc"`
	ID      string `json:"id"`
	Method  string `json:"method"`
	Params  any    `json:"params"`
}

// refusal is approval/response_refused's params.
type refusal struct {
	RPCID   json.RawMessage `json:"rpc_id"`
	Kind    string          `json:"kind"`
	Message string          `json:"message"`
}

type clientAsk struct {
	rpcID      string
	ctx        context.Context
	sessionID  string
	approvalID string
	req        request
	done       chan escalate.Outcome // buffered: the settling answer
	// seq orders the pending approvals, oldest first.
	seq int64
}

// RPCID is the id of an approval's approval/requested: stable across
// resends, unique as approval ids are.
func RPCID(approvalID string) string { return "approval-" + approvalID }

func (a *ClientAnswerer) Claim(q Question) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.connsLocked(q.SessionID)) > 0
}

// Approve sends approval/requested to every attached client bound to the
// session and waits for the first valid response, or for ctx
// (cancellation, the answer timeout).
func (a *ClientAnswerer) Approve(ctx context.Context, q Question) (escalate.Outcome, error) {
	tool := toolName(q)
	ask := &clientAsk{rpcID: RPCID(q.ApprovalID), ctx: ctx, sessionID: q.SessionID, approvalID: q.ApprovalID,
		done: make(chan escalate.Outcome, 1)}
	ask.req = request{JSONRPC: "2.0", ID: ask.rpcID, Method: "approval/requested", Params: approvalRequested{
		SessionID: q.SessionID, ApprovalID: q.ApprovalID, ToolName: tool, CallID: q.CallID, Reason: q.Justification, Command: q.Command, ApprovalRequest: q}}
	a.mu.Lock()
	if a.pending[ask.rpcID] != nil || a.settled[ask.rpcID] != "" {
		a.mu.Unlock()
		return escalate.Unavailable, fmt.Errorf("approval %s: asked twice", q.ApprovalID)
	}
	a.seq++
	ask.seq = a.seq
	a.pending[ask.rpcID] = ask
	conns := a.connsLocked(ask.sessionID)
	a.mu.Unlock()
	a.changed.fire()
	for _, c := range conns {
		c.sendRequest(ask.req)
	}
	select {
	case o := <-ask.done:
		return o, nil
	case <-ctx.Done():
		kind := RefusedExpired
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			kind = RefusedLate
		}
		a.settle(ask, kind, nil, "")
		return escalate.Cancelled, ctx.Err()
	}
}

// settle takes ask out of pending (false when it was no longer there),
// remembers how a later response to it is refused, and tells the other
// attached clients of its session that the request is withdrawn
// ($/cancelRequest).
func (a *ClientAnswerer) settle(ask *clientAsk, later string, by *conn, outcome escalate.Outcome) bool {
	a.mu.Lock()
	if a.pending[ask.rpcID] != ask {
		a.mu.Unlock()
		return false
	}
	delete(a.pending, ask.rpcID)
	a.settled[ask.rpcID] = later
	if a.order = append(a.order, ask.rpcID); len(a.order) > maxSettled {
		delete(a.settled, a.order[0])
		a.order = a.order[1:]
	}
	if outcome != "" {
		ask.done <- outcome
	}
	conns := a.connsLocked(ask.sessionID)
	a.mu.Unlock()
	a.changed.fire()
	id, _ := json.Marshal(ask.rpcID)
	for _, c := range conns {
		if c != by {
			c.notify("$/cancelRequest", map[string]json.RawMessage{"id": id})
		}
	}
	return true
}

// connsLocked are the attached clients bound to the session; a.mu is held.
func (a *ClientAnswerer) connsLocked(sessionID string) []*conn {
	var out []*conn
	for c := range a.conns {
		if c.boundTo(sessionID) {
			out = append(out, c)
		}
	}
	return out
}

// attach makes c an answering client, and sends it the pending approvals
// of the sessions it is bound to, with their rpc ids.
func (a *ClientAnswerer) attach(c *conn) {
	a.mu.Lock()
	a.conns[c] = struct{}{}
	a.mu.Unlock()
	a.resend(c, c.boundTo)
}

// bind: c was bound to the session; if it answers approvals, it is sent
// the session's pending ones.
func (a *ClientAnswerer) bind(c *conn, sessionID string) {
	a.resend(c, func(id string) bool { return id == sessionID })
}

// resend sends attached c the pending approvals of the sessions of, oldest
// first, each with its rpc id (the same every time).
func (a *ClientAnswerer) resend(c *conn, of func(sessionID string) bool) {
	a.mu.Lock()
	if _, attached := a.conns[c]; !attached {
		a.mu.Unlock()
		return
	}
	var again []*clientAsk
	for _, ask := range a.pending {
		if of(ask.sessionID) {
			again = append(again, ask)
		}
	}
	a.mu.Unlock()
	slices.SortFunc(again, func(x, y *clientAsk) int { return int(x.seq - y.seq) })
	for _, ask := range again {
		c.sendRequest(ask.req)
	}
}

// detach: c went away. Its pending approvals stay pending.
func (a *ClientAnswerer) detach(c *conn) {
	a.mu.Lock()
	delete(a.conns, c)
	a.mu.Unlock()
}

// respond routes a response of c's by its id, then reads it. It returns
// the refusal kind and why ("" when the response settled an approval).
func (a *ClientAnswerer) respond(c *conn, m message) (kind, why string) {
	var rpcID string
	if m.ID == nil || string(m.ID) == "null" {
		return RefusedMalformed, "a response without an id"
	}
	if json.Unmarshal(m.ID, &rpcID) != nil {
		return RefusedUnknown, "no approval/requested has the id " + string(m.ID)
	}
	a.mu.Lock()
	_, attached := a.conns[c]
	ask := a.pending[rpcID]
	later := a.settled[rpcID]
	a.mu.Unlock()
	switch {
	case !attached:
		return RefusedUnknown, "this connection was sent no approval/requested (initialize with capabilities.approvals)"
	case ask == nil && later != "":
		return later, "approval request " + rpcID + " is already settled"
	case ask == nil:
		return RefusedUnknown, "no approval/requested has the id " + rpcID
	case !c.boundTo(ask.sessionID):
		// It was never sent here: the connection is not the session's.
		return RefusedUnknown, "this connection was sent no approval/requested of session " + ask.sessionID + " (name the session in a request first)"
	}
	outcome, kind, why := ask.read(m)
	if kind != "" {
		return kind, why
	}
	return a.decide(ask, c, outcome)
}

// decide settles ask with outcome, answered by c (nil: the browser
// panel), unless it is settled already or being settled by its
// cancellation or timeout: then it returns the refusal kind and why. One
// path for every answer, so that of two racing answers one settles and
// the other is refused as expired.
func (a *ClientAnswerer) decide(ask *clientAsk, c *conn, outcome escalate.Outcome) (kind, why string) {
	rpcID := ask.rpcID
	var later string
	if err := ask.ctx.Err(); err != nil {
		// Being settled by its cancellation or timeout right now.
		later = RefusedExpired
		if errors.Is(err, context.DeadlineExceeded) {
			later = RefusedLate
		}
		a.settle(ask, later, nil, "")
		return later, "approval request " + rpcID + " is already settled"
	}
	if !a.settle(ask, RefusedExpired, c, outcome) {
		a.mu.Lock()
		later = a.settled[rpcID]
		a.mu.Unlock()
		return later, "approval request " + rpcID + " is already settled"
	}
	return "", ""
}

// read parses a response to ask: a result that echoes its session and
// approval exactly with allowed-once or rejected, or an error (rejected).
func (ask *clientAsk) read(m message) (escalate.Outcome, string, string) {
	if (m.Result == nil) == (m.Error == nil) {
		return "", RefusedMalformed, "a response has exactly one of result and error"
	}
	if m.Error != nil {
		var e rpcError
		if err := strictjson.Decode(m.Error, &e); err != nil {
			return "", RefusedMalformed, "error: " + err.Error()
		}
		if e.Code == nil || e.Message == nil {
			return "", RefusedMalformed, "error: code and message are required"
		}
		return escalate.Rejected, "", ""
	}
	var ans approvalAnswer
	if err := strictjson.Decode(m.Result, &ans); err != nil {
		return "", RefusedMalformed, "result: " + err.Error()
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"session_id", ans.SessionID}, {"approval_id", ans.ApprovalID}, {"outcome", ans.Outcome}} {
		if f.v == nil {
			return "", RefusedMalformed, "result." + f.name + ": required"
		}
	}
	switch {
	case *ans.SessionID != ask.sessionID:
		return "", RefusedForeignSession, fmt.Sprintf("result.session_id %q is not the approval's session", *ans.SessionID)
	case *ans.ApprovalID != ask.approvalID:
		return "", RefusedForeignApproval, fmt.Sprintf("result.approval_id %q is not the approval of %s", *ans.ApprovalID, ask.rpcID)
	}
	switch o := escalate.Outcome(*ans.Outcome); o {
	case escalate.AllowedOnce, escalate.Rejected:
		return o, "", ""
	}
	return "", RefusedOutcome, fmt.Sprintf("result.outcome %q: a client answers allowed-once or rejected", *ans.Outcome)
}

// response handles a message without a method: a response to a request
// of the server's. It cannot be answered; a refusal is an
// approval/response_refused notification, and logged.
func (c *conn) response(m message) {
	kind, why := RefusedUnknown, "the server sends no requests (no client answerer)"
	if cl := c.srv.opt.Client; cl != nil {
		kind, why = cl.respond(c, m)
	}
	if kind != "" {
		c.refuse(validID(m.ID), kind, why)
	}
}

// refuse tells the client its response was refused, and logs it.
func (c *conn) refuse(id json.RawMessage, kind, why string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	c.srv.Logf("refused a response (id %s): %s: %s", id, kind, why)
	if err := c.notify("approval/response_refused", refusal{RPCID: id, Kind: kind, Message: why}); err != nil {
		c.srv.Logf("approval/response_refused: %v", err)
	}
}

// isResponse: a JSON object without a method and with a result or an
// error, read leniently to classify a line strict decoding refused.
func isResponse(line []byte) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(line, &m) != nil {
		return false
	}
	_, method := m["method"]
	_, result := m["result"]
	_, e := m["error"]
	return !method && (result || e)
}

func (c *conn) sendRequest(r request) {
	if err := c.out.send(r); err != nil {
		c.srv.Logf("%s %s: %v", r.Method, r.ID, err)
	}
}
