//go:build linux

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestServeConcurrentCallGroups: calls in flight at once through one
// server each get a control group of their own. Every call without a PID
// namespace (danger-full-access) gets one for its whole-tree kill, and
// every call with limits one for the limits: they were all named after the
// server's pid, so the second call at once failed to make its group.
// Sandboxed calls without limits (a PID namespace, no group) keep running
// beside them.
func TestServeConcurrentCallGroups(t *testing.T) {
	s := startServer(t)
	s.ok("initialize", nil)
	ws := workspace(t)
	full := s.session("full", ws, map[string]any{"preset": "full-access"})
	auto := s.session("auto", ws, map[string]any{"preset": "auto"})
	if err := os.Mkdir(filepath.Join(ws, "in"), 0o777); err != nil {
		t.Fatal(err)
	}
	// Each call waits until all are running (a barrier in the shared
	// workspace), so their groups exist at the same time.
	const n = 6
	script := fmt.Sprintf(`touch in/$1
i=0; while [ "$(ls in | wc -l)" -lt %d ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; [ $i -lt 600 ]`, n)
	var pending []chan map[string]any
	for i := range n {
		sess, turn := "full", full
		p := execParams(sess, turn, fmt.Sprintf("c%d", i), ws, "sh", "-c", script, "sh", fmt.Sprint(i))
		switch i % 3 {
		case 1: // sandboxed with limits: a group for them
			p["session_id"], p["turn_id"] = "auto", auto
			p["limits"] = map[string]any{"pids": 64}
		case 2: // sandboxed, no limits: its PID namespace, no group
			p["session_id"], p["turn_id"] = "auto", auto
		}
		pending = append(pending, s.start("exec", p))
	}
	for i, ch := range pending {
		m := s.get(ch)
		if res, _ := m["result"].(map[string]any); res == nil || res["exit_code"] != 0.0 {
			t.Errorf("call %d: %v", i, m)
		}
	}
	// And one after them: nothing of theirs is in its way.
	m := s.get(s.start("exec", execParams("full", full, "after", ws, "true")))
	if res, _ := m["result"].(map[string]any); res == nil || res["exit_code"] != 0.0 {
		t.Errorf("the call after: %v", m)
	}
}
