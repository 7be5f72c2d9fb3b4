package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"

	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// The two options the ACP answerer offers, and the only ones it reads.
const (
	ACPAllowOnce  = "allow-once"
	ACPRejectOnce = "reject-once"
)

// ACPAnswerer is the acp answerer of the waterfall (sbx serve --answerers
// acp, with --acp-socket PATH or --acp-fd N): it asks an Agent Client
// Protocol client (an editor) with the JSON-RPC request
// session/request_permission, as an ACP agent does, over one connection
// of newline-delimited JSON (ACP's stdio framing).
//
// It claims a question only when the call has a call_id, its session was
// opened with an acp_session_id, and the connection is up. It offers
// exactly two options, allow_once and reject_once: only the allow_once
// option it sent, selected, is allowed-once; ACP's cancelled outcome is
// cancelled; any other option, kind or error response is rejected; a
// malformed response or a lost connection is unavailable. Nothing it
// reads becomes a lasting grant. A question cancelled on sbx's side (or
// timed out) is withdrawn with $/cancel_request, and what the client says
// later is dropped; Close withdraws every pending one the same way before
// the connection closes.
type ACPAnswerer struct {
	conn io.ReadWriteCloser
	out  *lineWriter
	logf func(format string, args ...any)

	// sendMu orders what is written about a request: it is held from a
	// request's registration through its send, and from its withdrawal
	// through its $/cancel_request, and Close takes it before it closes
	// the connection; so a withdrawal is never cut off by the close nor
	// written before the request it withdraws.
	sendMu sync.Mutex

	mu      sync.Mutex
	pending map[string]chan acpReply // by request id
	// down is set once the connection is gone: nothing is claimed any more.
	down error
	done chan struct{} // closed when the reader ends
}

// acpReply is the response to one session/request_permission.
type acpReply struct {
	outcome escalate.Outcome
	err     error
}

// errACPDown: the connection to the ACP client is gone.
var errACPDown = errors.New("acp: the connection to the ACP client is gone")

// NewACPAnswerer starts reading conn, a connection to an ACP client, and
// returns the answerer that asks it; max bounds a message either way (0:
// DefaultMaxMessage), logf logs what the client is not told (nil: drop).
// Close ends it.
func NewACPAnswerer(conn io.ReadWriteCloser, max int, logf func(format string, args ...any)) *ACPAnswerer {
	if max <= 0 {
		max = DefaultMaxMessage
	}
	if logf == nil {
		logf = func(string, ...any) {}
	}
	a := &ACPAnswerer{conn: conn, out: &lineWriter{w: conn, max: max}, logf: logf, pending: map[string]chan acpReply{}, done: make(chan struct{})}
	go a.read(newLineReader(conn, max))
	return a
}

// errACPClosed: the server closed the connection (its shutdown).
var errACPClosed = errors.New("acp: the server closed the connection to the ACP client")

// Close withdraws every pending question with $/cancel_request (each
// ends cancelled), then closes the connection: the client learns that
// its open permission dialogs are moot before the connection ends, not
// from the end itself. Nothing is claimed after it.
func (a *ACPAnswerer) Close() error {
	a.sendMu.Lock()
	a.mu.Lock()
	var ids []string
	for id, ch := range a.pending {
		// Cancelled, not a failure: the server is going away, and its
		// approvals settle cancelled as every other of its answerers'.
		ch <- acpReply{outcome: escalate.Cancelled}
		delete(a.pending, id)
		ids = append(ids, id)
	}
	if a.down == nil {
		a.down = errACPClosed
	}
	a.mu.Unlock()
	sort.Strings(ids)
	for _, id := range ids {
		a.cancelRequest(id)
	}
	a.sendMu.Unlock()
	err := a.conn.Close()
	<-a.done
	return err
}

// cancelRequest writes ACP's $/cancel_request for request id; a.sendMu
// is held.
func (a *ACPAnswerer) cancelRequest(id string) {
	if err := a.out.send(notification{JSONRPC: "2.0", Method: "$/cancel_request", Params: map[string]string{"requestId": id}}); err != nil {
		a.logf("acp: $/cancel_request %s: %v", id, err)
	}
}

func (a *ACPAnswerer) Claim(q Question) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return q.CallID != "" && q.ACPSessionID != "" && a.down == nil
}

// acpPermissionRequest is session/request_permission's params (ACP
// schema v1, RequestPermissionRequest).
type acpPermissionRequest struct {
	SessionID string       `json:"sessionId"`
	ToolCall  acpToolCall  `json:"toolCall"`
	Options   []acpOption  `json:"options"`
	Meta      *acpQuestion `json:"_meta,omitempty"`
}

// acpQuestion is sbx's own facts in _meta (ACP's extension point): the
// one question every answerer gets (session and approval ids, what is
// asked, what is new), for a client that wants to show them.
type acpQuestion struct {
	SBX Question `json:"sbx"`
}

// acpToolCall is a ToolCallUpdate: the call, by its call_id.
type acpToolCall struct {
	ToolCallID string          `json:"toolCallId"`
	Title      string          `json:"title"`
	Kind       string          `json:"kind"`
	RawInput   *acpToolCallRaw `json:"rawInput,omitempty"`
}

// acpToolCallRaw is the call's argv, only when it is shown (Question.Command).
type acpToolCallRaw struct {
	Command []string `json:"command"`
}

type acpOption struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
}

// acpOptions are the options offered: exactly allow_once and reject_once.
var acpOptions = []acpOption{
	{OptionID: ACPAllowOnce, Name: "Allow once", Kind: "allow_once"},
	{OptionID: ACPRejectOnce, Name: "Reject", Kind: "reject_once"},
}

// acpPermissionResponse is RequestPermissionResponse, decoded strictly:
// outcome and ACP's reserved _meta, nothing else.
type acpPermissionResponse struct {
	Outcome *struct {
		Outcome  *string         `json:"outcome"`
		OptionID *string         `json:"optionId"`
		Meta     json.RawMessage `json:"_meta"`
	} `json:"outcome"`
	Meta json.RawMessage `json:"_meta"`
}

// ACPRequestID is the JSON-RPC id of an approval's session/request_permission.
func ACPRequestID(approvalID string) string { return "sbx-approval-" + approvalID }

// Approve sends session/request_permission and waits for its response, or
// for ctx (cancellation, the answer timeout): then the request is
// withdrawn with $/cancel_request.
func (a *ACPAnswerer) Approve(ctx context.Context, q Question) (escalate.Outcome, error) {
	if q.CallID == "" || q.ACPSessionID == "" {
		return escalate.Unavailable, errors.New("acp: the call has no call_id or its session no acp_session_id")
	}
	id := ACPRequestID(q.ApprovalID)
	ch := make(chan acpReply, 1)
	a.sendMu.Lock()
	a.mu.Lock()
	switch {
	case a.down != nil:
		a.mu.Unlock()
		a.sendMu.Unlock()
		return escalate.Unavailable, a.down
	case a.pending[id] != nil:
		a.mu.Unlock()
		a.sendMu.Unlock()
		return escalate.Unavailable, fmt.Errorf("acp: approval %s: asked twice", q.ApprovalID)
	}
	a.pending[id] = ch
	a.mu.Unlock()
	defer a.forget(id)
	err := a.out.send(request{JSONRPC: "2.0", ID: id, Method: "session/request_permission", Params: acpParams(q)})
	a.sendMu.Unlock()
	if err != nil {
		return escalate.Unavailable, fmt.Errorf("acp: session/request_permission: %w", err)
	}
	select {
	case r := <-ch:
		return r.outcome, r.err
	case <-ctx.Done():
		a.withdraw(id)
		return escalate.Cancelled, ctx.Err()
	}
}

// withdraw sends $/cancel_request for id unless it is no longer pending
// (answered meanwhile, or withdrawn by Close already).
func (a *ACPAnswerer) withdraw(id string) {
	a.sendMu.Lock()
	defer a.sendMu.Unlock()
	a.mu.Lock()
	_, pending := a.pending[id]
	delete(a.pending, id)
	a.mu.Unlock()
	if pending {
		a.cancelRequest(id)
	}
}

// acpParams is the question as ACP asks it: the call (toolCallId is its
// call_id, the title its reason) and the two options.
func acpParams(q Question) acpPermissionRequest {
	tool := toolName(q)
	title := q.Justification
	if title == "" {
		title = tool + " call " + q.CallID + " asks for more than its sandbox allows"
	}
	tc := acpToolCall{ToolCallID: q.CallID, Title: title, Kind: "other"}
	if tool == "shell" {
		tc.Kind = "execute"
	}
	if q.Command != nil {
		tc.RawInput = &acpToolCallRaw{Command: q.Command}
	}
	meta := &acpQuestion{SBX: q}
	return acpPermissionRequest{SessionID: q.ACPSessionID, ToolCall: tc, Options: acpOptions, Meta: meta}
}

// forget drops a request: a response that comes later is logged, not read.
func (a *ACPAnswerer) forget(id string) {
	a.mu.Lock()
	delete(a.pending, id)
	a.mu.Unlock()
}

// read reads the client's messages until the connection ends, then fails
// every pending question.
func (a *ACPAnswerer) read(lr *lineReader) {
	defer close(a.done)
	var err error
	for {
		var line []byte
		if line, err = lr.next(); err != nil && !errors.Is(err, errTooLarge) {
			break
		}
		if err != nil {
			a.logf("acp: a message from the ACP client over the limit was dropped")
			continue
		}
		a.message(line)
	}
	a.mu.Lock()
	a.down = fmt.Errorf("%w: %v", errACPDown, err)
	for id, ch := range a.pending {
		ch <- acpReply{escalate.Unavailable, a.down}
		delete(a.pending, id)
	}
	a.mu.Unlock()
	a.logf("%v", a.down)
}

// message handles one line from the client: a response is routed by id
// and read; a request gets method_not_found (sbx offers the client no
// methods); a notification is skipped.
func (a *ACPAnswerer) message(line []byte) {
	var m message
	err := strictjson.Decode(line, &m)
	if err == nil && m.JSONRPC != "2.0" {
		err = fmt.Errorf("jsonrpc %q: want \"2.0\"", m.JSONRPC)
	}
	if err != nil {
		// A line without a method that names a pending request by its id
		// settles it, unavailable: a malformed answer denies at once
		// rather than at the timeout (and this leniency can only deny).
		var loose map[string]json.RawMessage
		var id string
		if json.Unmarshal(line, &loose) == nil && loose["method"] == nil && json.Unmarshal(loose["id"], &id) == nil &&
			a.settle(id, acpReply{escalate.Unavailable, fmt.Errorf("acp: a malformed response: %v", err)}) {
			return
		}
		a.logf("acp: a malformed message from the ACP client: %v", err)
		return
	}
	if m.Method != nil {
		if m.ID != nil && string(m.ID) != "null" {
			if err := a.out.send(response{JSONRPC: "2.0", ID: m.ID, Error: newError(CodeMethodNotFound, KindMethodNotFound, "sbx answers no ACP method (it only asks session/request_permission)")}); err != nil {
				a.logf("acp: reply to %s: %v", *m.Method, err)
			}
		}
		return
	}
	var id string
	if json.Unmarshal(m.ID, &id) != nil || !a.settle(id, readACPResponse(m)) {
		a.logf("acp: a response to no pending request (id %s): dropped", m.ID)
	}
}

// settle hands r to the question of id; false when none is pending.
func (a *ACPAnswerer) settle(id string, r acpReply) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	ch := a.pending[id]
	if ch == nil {
		return false
	}
	delete(a.pending, id)
	ch <- r
	return true
}

// readACPResponse maps a response to session/request_permission to an
// outcome. Only the allow-once option selected is allowed-once.
func readACPResponse(m message) acpReply {
	if (m.Result == nil) == (m.Error == nil) {
		return acpReply{escalate.Unavailable, errors.New("acp: a response has exactly one of result and error")}
	}
	if m.Error != nil {
		var e rpcError
		if err := strictjson.Decode(m.Error, &e); err != nil || e.Code == nil || e.Message == nil {
			return acpReply{escalate.Unavailable, fmt.Errorf("acp: a malformed error response: %s", m.Error)}
		}
		return acpReply{outcome: escalate.Rejected}
	}
	var r acpPermissionResponse
	if err := strictjson.Decode(m.Result, &r); err != nil {
		return acpReply{escalate.Unavailable, fmt.Errorf("acp: result: %w", err)}
	}
	if r.Outcome == nil || r.Outcome.Outcome == nil {
		return acpReply{escalate.Unavailable, errors.New("acp: result.outcome.outcome: required")}
	}
	switch o := r.Outcome; *o.Outcome {
	case "cancelled":
		if o.OptionID != nil {
			return acpReply{escalate.Unavailable, errors.New("acp: result.outcome: cancelled has no optionId")}
		}
		return acpReply{outcome: escalate.Cancelled}
	case "selected":
		if o.OptionID == nil {
			return acpReply{escalate.Unavailable, errors.New("acp: result.outcome.optionId: required")}
		}
		if *o.OptionID == ACPAllowOnce {
			return acpReply{outcome: escalate.AllowedOnce}
		}
		// reject-once, or an option that was not offered: rejected.
		return acpReply{outcome: escalate.Rejected}
	}
	return acpReply{escalate.Unavailable, fmt.Errorf("acp: result.outcome.outcome %q: want selected or cancelled", *r.Outcome.Outcome)}
}
