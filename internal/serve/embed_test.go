package serve

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/sbx-sandbox/sbx/internal/escalate"
)

// A Local connection speaks the protocol as a client on stdio does: its
// requests get their results and errors, and the server's
// approval/requested goes to its handler, whose answer settles the
// approval.
func TestLocal(t *testing.T) {
	cl := NewClientAnswerer()
	srv := New(Options{Client: cl, Answerer: Waterfall{cl}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	asked := make(chan json.RawMessage, 1)
	l := srv.Local(ctx, func(_ context.Context, method string, params json.RawMessage) (any, error) {
		if method != "approval/requested" {
			return nil, errors.New(method)
		}
		asked <- params
		var q struct {
			SessionID  string `json:"session_id"`
			ApprovalID string `json:"approval_id"`
		}
		json.Unmarshal(params, &q)
		return map[string]any{"session_id": q.SessionID, "approval_id": q.ApprovalID, "outcome": "rejected"}, nil
	})
	if err := l.Call(ctx, "initialize", map[string]any{"capabilities": map[string]any{"approvals": true}}, nil); err != nil {
		t.Fatal(err)
	}
	var opened struct {
		SessionID string `json:"session_id"`
	}
	if err := l.Call(ctx, "session/open", map[string]any{"cwd": t.TempDir(), "sandbox_mode": "read-only", "approval_policy": "on-request"}, &opened); err != nil {
		t.Fatal(err)
	}
	var e *Error
	if err := l.Call(ctx, "turn/end", map[string]any{"session_id": opened.SessionID, "turn_id": "nope"}, nil); !errors.As(err, &e) || e.Data.Kind == "" {
		t.Errorf("an error response: %v", err)
	}
	var turn struct {
		TurnID string `json:"turn_id"`
	}
	if err := l.Call(ctx, "turn/begin", map[string]any{"session_id": opened.SessionID}, &turn); err != nil {
		t.Fatal(err)
	}
	err := l.Call(ctx, "exec", map[string]any{"session_id": opened.SessionID, "turn_id": turn.TurnID, "call_id": "c1",
		"cwd": t.TempDir(), "command": []string{"true"}, "sandbox_permissions": "require_escalated", "escalate_to": "danger-full-access", "justification": "test"}, nil)
	if !errors.As(err, &e) || e.Data.Kind != KindDenied || e.Data.Outcome != string(escalate.Rejected) {
		t.Errorf("rejected by the handler: %v %+v", err, e)
	}
	select {
	case <-asked:
	case <-time.After(5 * time.Second):
		t.Fatal("the handler was not asked")
	}
	if err := l.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if err := l.Call(ctx, "turn/begin", map[string]any{"session_id": opened.SessionID}, nil); err == nil {
		t.Errorf("a call after close succeeded")
	}
}
