package serve

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sbx-sandbox/sbx/internal/journal"
)

// TestCallStartedWithoutEnvValues: the command gets its env, and the
// call/started record keeps the names but no value (a runtime passes
// tokens there; the log stays on disk).
func TestCallStartedWithoutEnvValues(t *testing.T) {
	c := newClient(t, Options{})
	ws, turn := c.openTurn("s", map[string]any{"preset": "auto"})
	const secret = "hunter2-c0ffee"
	// The command compares with a file, so that its argv holds no secret.
	if err := os.WriteFile(filepath.Join(ws, "expected"), []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	res := c.ok("exec", map[string]any{"session_id": "s", "turn_id": turn, "call_id": "c1", "cwd": ws,
		"command": []string{"sh", "-c", `test "$SBX_TEST_TOKEN" = "$(cat expected)" && test "$OTHER" = x`},
		"env":     map[string]string{"SBX_TEST_TOKEN": secret, "OTHER": "x"}})
	if res["exit_code"] != float64(0) {
		t.Fatalf("the command did not get its env: %v", res)
	}
	for _, r := range c.logs.Get("s").Records() {
		if bytes.Contains(r.Data, []byte(secret)) {
			t.Errorf("record %s holds the env value: %s", r.Type, r.Data)
		}
	}
	started := c.recordData("s", journal.TypeCallStarted)
	if len(started) != 1 {
		t.Fatalf("call/started records: %v", started)
	}
	names, _ := started[0]["env_names"].([]any)
	if !slices.Equal(names, []any{"OTHER", "SBX_TEST_TOKEN"}) {
		t.Errorf("env_names = %v", started[0]["env_names"])
	}
	req, _ := started[0]["request"].(map[string]any)
	if _, ok := req["env"]; ok || req["call_id"] != "c1" || req["cwd"] != ws {
		t.Errorf("request = %v: want the params without env", req)
	}
}

// gatedLog is a QueueLog whose call/started records become durable only
// when gate is closed, and then with err.
type gatedLog struct {
	MemLog
	gate chan struct{}
	err  error
}

func (l *gatedLog) Queue(rec journal.Record) (func() error, error) {
	if err := l.MemLog.Append(rec); err != nil {
		return nil, err
	}
	if rec.Type != journal.TypeCallStarted {
		return func() error { return nil }, nil
	}
	return func() error { <-l.gate; return l.err }, nil
}

// TestDispatchWaitsForCallStarted: the call is resolved while its
// call/started record is being made durable, but its command starts only
// once the record is durable, and not at all when it cannot be made so.
func TestDispatchWaitsForCallStarted(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{{"durable", nil}, {"fsync-fails", errors.New("EIO (test)")}} {
		t.Run(tc.name, func(t *testing.T) {
			log := &gatedLog{gate: make(chan struct{}), err: tc.err}
			var dispatched atomic.Bool
			c := newClient(t, Options{OpenLog: func(string) (Log, error) { return log, nil },
				Hooks: &Hooks{Dispatching: func(string) { dispatched.Store(true) }}})
			ws := t.TempDir()
			c.ok("session/open", map[string]any{"session_id": "s", "cwd": ws, "preset": "auto"})
			turn := c.ok("turn/begin", map[string]any{"session_id": "s"})["turn_id"].(string)
			marker := filepath.Join(ws, "marker")
			ch := c.start("exec", map[string]any{"session_id": "s", "turn_id": turn, "call_id": "c1", "cwd": ws,
				"command": []string{"touch", marker}})
			time.Sleep(200 * time.Millisecond)
			if dispatched.Load() || ran(ws) {
				t.Fatal("the command was dispatched before call/started was durable")
			}
			close(log.gate)
			m := c.wait(ch)
			if tc.err == nil {
				if r, _ := m["result"].(map[string]any); r == nil || r["exit_code"] != 0.0 || !ran(ws) {
					t.Fatalf("after call/started was durable: %v", m)
				}
				return
			}
			code, data := errorOf(t, "exec", m)
			if code != CodeInternal || data["kind"] != KindInternal || !strings.Contains(fmt.Sprint(m["error"]), "EIO (test)") {
				t.Errorf("exec whose call/started failed: %d %v", code, m["error"])
			}
			if dispatched.Load() || ran(ws) {
				t.Error("the command ran though its call/started was not durable")
			}
		})
	}
}

// TestNothingLeftWhenAnswered: the carve-out placeholders a call made (an
// empty .git, .codex and .agents where the workspace has none, for a call
// that requires carve-out-create: by default none is made) are removed
// while call/finished is written, and gone when the answer comes.
func TestNothingLeftWhenAnswered(t *testing.T) {
	c := newClient(t, Options{})
	ws, turn := c.openTurn("s", map[string]any{"preset": "auto"})
	res := c.ok("exec", map[string]any{"session_id": "s", "turn_id": turn, "call_id": "bare", "cwd": ws,
		"command": []string{"sh", "-c", "test -e .git"}})
	if res["exit_code"] != 1.0 {
		t.Errorf("by default the command sees a .git the workspace does not have: %v", res)
	}
	for i := range 20 {
		res := c.ok("exec", map[string]any{"session_id": "s", "turn_id": turn, "call_id": fmt.Sprintf("c%d", i), "cwd": ws,
			"command": []string{"sh", "-c", "test -d .git"}, "require": []string{"carve-out-create"}})
		if res["exit_code"] != 0.0 {
			// Without a mount namespace nothing is made: nothing to check.
			t.Skipf("SKIP: no placeholder .git in the call (no mount namespace here): %v", res)
		}
		for _, name := range []string{".git", ".codex", ".agents"} {
			if _, err := os.Lstat(filepath.Join(ws, name)); err == nil {
				t.Fatalf("call %d answered with its placeholder %s still there", i, name)
			}
		}
	}
}
