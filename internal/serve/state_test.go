package serve

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/journal"
)

// TestLiveStateIsRestored: the live server's session state changes only
// by State.Apply of the records it writes, so a session driven through
// every method that changes state (open, a child open, set_preset,
// turn/begin and turn/end, grants/apply of both scopes and withheld, exec
// approved, rejected and unasked, session/close) has exactly the
// journal.State a server restored from its log has, before and after the
// close. A handler that changed a field without its record (or a field
// Apply does not change) fails it.
func TestLiveStateIsRestored(t *testing.T) {
	answerer := AnswererFunc(func(_ context.Context, q Question) (escalate.Outcome, error) {
		if strings.HasPrefix(q.CallID, "ok") {
			return escalate.AllowedOnce, nil
		}
		return escalate.Rejected, nil
	})
	c := newClient(t, Options{Answerer: answerer})
	ws, turn := c.openTurn("s", map[string]any{"preset": "read-only"})
	c.ok("session/set_preset", map[string]any{"session_id": "s", "key": "auto"})
	grant := func(session, scope string) {
		out := t.TempDir()
		c.ok("grants/apply", map[string]any{"session_id": session, "environment_id": "e",
			"requested": map[string]any{"file_system": map[string]any{"write": []string{out}}},
			"response":  map[string]any{"granted": map[string]any{"file_system": map[string]any{"write": []string{out}}}, "scope": scope}})
	}
	grant("s", "session")
	grant("s", "turn")
	c.ok("exec", escalating("s", turn, "ok1", ws, t.TempDir()))
	c.fail("exec", escalating("s", turn, "no1", ws, t.TempDir()))
	c.ok("exec", map[string]any{"session_id": "s", "turn_id": turn, "call_id": "plain", "cwd": ws, "command": []string{"true"}})
	c.ok("turn/end", map[string]any{"session_id": "s", "turn_id": turn})
	turn = c.ok("turn/begin", map[string]any{"session_id": "s"})["turn_id"].(string)
	grant("s", "turn")
	c.ok("turn/end", map[string]any{"session_id": "s", "turn_id": turn})
	// A child: its policy pinned to never, its grants withheld.
	c.ok("session/open", map[string]any{"session_id": "k", "cwd": ws, "parent_session_id": "s"})
	kturn := c.ok("turn/begin", map[string]any{"session_id": "k"})["turn_id"].(string)
	grant("k", "session")
	c.ok("exec", map[string]any{"session_id": "k", "turn_id": kturn, "call_id": "kc", "cwd": ws, "command": []string{"true"}})
	c.ok("turn/end", map[string]any{"session_id": "k", "turn_id": kturn})

	live := map[string]*session{}
	for _, id := range []string{"s", "k"} {
		sess, e := c.srv.lookup(id)
		if e != nil {
			t.Fatal(e)
		}
		live[id] = sess
	}
	logs := &MemLogs{}
	srv := New(Options{OpenLog: logs.Open, Logf: t.Logf})
	if problems := srv.Restore(replayed(c.logs, "s", "k")); len(problems) > 0 {
		t.Fatalf("restore: %v", problems)
	}
	for id, sess := range live {
		restored, e := srv.lookup(id)
		if e != nil {
			t.Fatal(e)
		}
		sameState(t, "open session "+id, sess, restored.st)
	}

	// Closed with a turn open: the close ends it, then closes.
	c.ok("turn/begin", map[string]any{"session_id": "s"})
	grant("s", "turn")
	c.ok("session/close", map[string]any{"session_id": "s"})
	_, st, err := srv.replay(replayed(c.logs, "s")[0])
	if err != nil || !st.Closed() {
		t.Fatalf("replay of the closed session: closed %v, %v", st != nil && st.Closed(), err)
	}
	sameState(t, "closed session s", live["s"], st)
	// The drive wrote every record type: no transition went untested.
	seen := map[string]bool{}
	for _, typ := range append(c.records("s"), c.records("k")...) {
		seen[typ] = true
	}
	for _, typ := range journal.Types {
		if !seen[typ] {
			t.Errorf("no %s record: the test does not drive every transition", typ)
		}
	}
}

// sameState fails t unless the live session's state is restored's.
func sameState(t *testing.T, what string, live *session, restored *journal.State) {
	t.Helper()
	live.mu.Lock()
	defer live.mu.Unlock()
	if !reflect.DeepEqual(live.st, restored) {
		t.Errorf("%s: the live state is not the restored one:\nlive     %+v\nrestored %+v", what, *live.st, *restored)
	}
}
