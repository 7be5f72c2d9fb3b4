package serve

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sbx-sandbox/sbx/internal/journal"
)

// lastFinished is the data of the last call/finished of session s replayed
// from dir, or nil.
func lastFinished(t *testing.T, dir, s string) map[string]any {
	t.Helper()
	sessions, _, err := journal.Replay(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	for _, js := range sessions {
		for _, rec := range js.Records {
			if js.ID == s && rec.Type == journal.TypeCallFinished {
				out = nil
				if err := json.Unmarshal(rec.Data, &out); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return out
}

// TestLostFinish: the answer to an exec does not wait for its
// call/finished to be on disk (journal.Writer.Later), while its
// call/started is (it gates the command). A server that dies before the
// next group commit leaves the call started and not finished, and a
// restarted server finishes it "lost", saying the end may only not have
// been written; a server that exits (Flush) or goes on writes it.
func TestLostFinish(t *testing.T) {
	old := journal.LaterDelay
	journal.LaterDelay = time.Hour // no flush of its own during the test
	t.Cleanup(func() { journal.LaterDelay = old })
	dir := t.TempDir()
	c := newClient(t, Options{OpenLog: func(id string) (Log, error) { return journal.Open(dir, id) }})
	ws, turn := c.openTurn("s", map[string]any{"preset": "full-access"})
	res := c.ok("exec", map[string]any{"session_id": "s", "turn_id": turn, "call_id": "c1", "cwd": ws, "command": []string{"true"}})
	if res["exit_code"] != 0.0 {
		t.Fatalf("exec: %v", res)
	}
	// The server dies here: what is on disk is what a restart replays.
	crashed := t.TempDir()
	b, err := os.ReadFile(filepath.Join(dir, "s.log"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(crashed, "s.log"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	sessions, _, err := journal.Replay(crashed)
	if err != nil || len(sessions) != 1 {
		t.Fatalf("replay: %v, %v", sessions, err)
	}
	recs := sessions[0].Records
	if last := recs[len(recs)-1]; last.Type != journal.TypeCallStarted {
		t.Fatalf("the log at the answer ends with %s, want call/started (durable before the command ran) and no finish yet", last.Type)
	}
	srv := New(Options{OpenLog: func(id string) (Log, error) { return journal.Open(crashed, id) }, Logf: t.Logf})
	if problems := srv.Restore(sessions); len(problems) > 0 {
		t.Fatalf("restore: %v", problems)
	}
	if err := srv.Flush(); err != nil {
		t.Fatal(err)
	}
	fin := lastFinished(t, crashed, "s")
	if fin["call_id"] != "c1" || fin["outcome"] != "lost" || !strings.Contains(fin["error"].(string), "before the call's end was written") {
		t.Errorf("the restarted server finished the call with %v, want lost", fin)
	}
	// The server that lives on writes the finish when it exits.
	if err := c.srv.Flush(); err != nil {
		t.Fatal(err)
	}
	if fin := lastFinished(t, dir, "s"); fin["call_id"] != "c1" || fin["outcome"] != "exited" {
		t.Errorf("after Flush the finish is %v, want exited", fin)
	}
}
