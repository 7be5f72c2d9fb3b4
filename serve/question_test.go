package serve

import (
	"context"
	"encoding/json"
	"reflect"
	"sync"
	"testing"

	"github.com/sbx-sandbox/sbx/escalate"
)

// TestClientGetsTheWholeQuestion: approval/requested carries the one
// question every answerer gets, the JSON an --approver program reads
// (target_mode or additional_permissions, new_permissions,
// merged_permissions, standing_mode, cwd, command, the ids), beside the
// names it had before (tool_name, reason). It failed when approval/requested
// carried only session_id, approval_id, tool_name, call_id, reason and
// command.
func TestClientGetsTheWholeQuestion(t *testing.T) {
	var mu sync.Mutex
	var shown Question
	cl := NewClientAnswerer()
	record := AnswererFunc(func(ctx context.Context, q Question) (escalate.Outcome, error) {
		mu.Lock()
		shown = q
		mu.Unlock()
		return cl.Approve(ctx, q)
	})
	c := startClient(t, Options{Client: cl, Answerer: record})
	c.ok("initialize", approvalsCaps)
	ws, turn := c.openTurn("s", map[string]any{"preset": "auto"})
	out := t.TempDir()
	pending := c.start("exec", escalating("s", turn, "c1", ws, out))
	req := c.note("approval/requested")
	p := req["params"].(map[string]any)
	mu.Lock()
	q := shown
	mu.Unlock()
	b, err := json.Marshal(q)
	if err != nil {
		t.Fatal(err)
	}
	var program map[string]any // what an --approver program reads
	if err := json.Unmarshal(b, &program); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"approval_id", "call_id", "environment_id", "tool", "additional_permissions", "justification", "cwd",
		"standing_mode", "merged_permissions", "new_permissions", "command", "session_id", "turn_id"} {
		if _, ok := program[key]; !ok {
			t.Errorf("the question lacks %s: %s", key, b)
		}
		if !reflect.DeepEqual(p[key], program[key]) {
			t.Errorf("approval/requested %s = %v, the approver program's %v", key, p[key], program[key])
		}
	}
	if p["turn_id"] != turn || p["cwd"] != ws || p["tool_name"] != "shell" || p["reason"] != "write the output" {
		t.Errorf("approval/requested %v", p)
	}
	if q.NewPermissions == nil || !reflect.DeepEqual(q.NewPermissions.WritePaths(), []string{out}) {
		t.Errorf("new_permissions %v, want the write of %s", q.NewPermissions, out)
	}
	c.answer(req["id"], allowed("s", p["approval_id"].(string)))
	if m := c.wait(pending); m["error"] != nil || !ran(out) {
		t.Fatalf("allowed-once: %v ran=%v", m, ran(out))
	}
}
