package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/escalate"
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

// toolExec asks to write the call's GOCACHE, which does not exist yet (nor
// its parent), and, with domains, to reach a registry through the proxy.
func toolExec(session, turn, callID, ws, cache string, domains bool) map[string]any {
	p := map[string]any{"session_id": session, "turn_id": turn, "call_id": callID, "cwd": ws,
		"command": []string{"true"}, "exclude_tmp": true, "exclude_tmpdir": true, "env": map[string]string{"GOCACHE": cache},
		"sandbox_permissions": "with_additional_permissions", "justification": "build"}
	perms := map[string]any{"file_system": map[string]any{"write": []string{cache}}}
	if domains {
		perms["network"] = map[string]any{"enabled": true, "allowed_domains": []string{"proxy.golang.org"}}
	}
	p["additional_permissions"] = perms
	return p
}

// TestQuestionSaysWhatIsCreated: a request for a tool cache that does not
// exist yet is asked with "create" naming it, as approval/requested and
// the browser panel's card carry it (ACP's _meta.sbx:
// TestACPQuestionSaysWhatIsCreated), beside the requested domains;
// nothing is made before the answer, and an approval makes it
// (permissions.created) (issue 29).
func TestQuestionSaysWhatIsCreated(t *testing.T) {
	cl := NewClientAnswerer()
	c := startClient(t, Options{Client: cl, Answerer: cl})
	c.ok("initialize", approvalsCaps)
	ws, turn := c.openTurn("s", map[string]any{"preset": "auto"})
	cache := filepath.Join(t.TempDir(), "cache", "go-build")
	pending := c.start("exec", toolExec("s", turn, "c1", ws, cache, false))
	req := c.note("approval/requested")
	q := req["params"].(map[string]any)
	if fmt.Sprint(q["create"]) != "["+cache+"]" {
		t.Fatalf("approval/requested create = %v, want [%s]: %v", q["create"], cache, q)
	}
	if _, err := os.Stat(cache); err == nil {
		t.Fatal("the cache was made before the answer")
	}
	c.answer(req["id"], allowed("s", q["approval_id"].(string)))
	m := c.wait(pending)
	res, _ := m["result"].(map[string]any)
	perms, _ := res["permissions"].(map[string]any)
	if fi, err := os.Stat(cache); err != nil || !fi.IsDir() || fmt.Sprint(perms["created"]) != "["+cache+"]" {
		t.Fatalf("allowed: %v; made: %v", m, err)
	}

	// The browser panel's card, with the domains.
	os.RemoveAll(filepath.Dir(cache))
	p := newPanelServer(t, false)
	ws, turn = p.c.openTurn("s", map[string]any{"preset": "auto"})
	states, stop := p.stream()
	defer stop()
	pending = p.c.start("exec", toolExec("s", turn, "c2", ws, cache, true))
	a := until(t, states, "a pending approval", pendingOne).Approvals[0]
	if !slices.Equal(a.Create, []string{cache}) || a.AdditionalPermissions == nil ||
		!slices.Equal(a.AdditionalPermissions.AllowedDomains(), []string{"proxy.golang.org"}) {
		t.Fatalf("card %+v: want create [%s] and the domain", a, cache)
	}
	if status, r := p.post("/api/answer", answerBody(a.ApprovalID, "rejected")); status != 200 {
		t.Fatalf("answer: %d %v", status, r)
	}
	p.c.wait(pending)
	if _, err := os.Stat(cache); err == nil {
		t.Error("a rejected call made the cache")
	}
}
