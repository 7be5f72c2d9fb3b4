package journal

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 4, 4, 0, 0, 0, time.UTC)

// rec builds a record of session id with the given seq and data (a JSON
// object text, or "").
func rec(id string, seq uint64, typ, data string) Record {
	r := Record{Type: typ, SessionID: id, Seq: seq, Time: t0.Add(time.Duration(seq) * time.Second)}
	if data != "" {
		r.Data = json.RawMessage(data)
	}
	return r
}

// frameOf frames r exactly as the Writer does.
func frameOf(t *testing.T, r Record) []byte {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return encodeFrame(b)
}

// writeLog writes frames of records to dir/ID.log and returns its path.
func writeLog(t *testing.T, dir, id string, recs ...Record) string {
	t.Helper()
	var b []byte
	for _, r := range recs {
		b = append(b, frameOf(t, r)...)
	}
	p := filepath.Join(dir, id+logSuffix)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// basic is a small well-formed session: opened, a turn with an approval
// asked and decided, a call.
func basic(id string) []Record {
	return []Record{
		rec(id, 1, TypeSessionOpened, `{"cwd":"/w"}`),
		rec(id, 2, TypeTurnBegun, `{"turn_id":"t1"}`),
		rec(id, 3, TypeApprovalAsked, `{"approval_id":"a1","turn_id":"t1","tool_name":"shell","reason":"r"}`),
		rec(id, 4, TypeApprovalDecided, `{"approval_id":"a1","outcome":"allowed-once"}`),
		rec(id, 5, TypeCallStarted, `{"call_id":"c1"}`),
		rec(id, 6, TypeCallFinished, `{"call_id":"c1","exit":0}`),
		rec(id, 7, TypeTurnEnded, `{"turn_id":"t1"}`),
	}
}

// sameRecords reports how got differs from want ("" when it does not).
func sameRecords(got, want []Record) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d records, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Type != w.Type || g.SessionID != w.SessionID || g.Seq != w.Seq || !g.Time.Equal(w.Time) || string(compact(g.Data)) != string(compact(w.Data)) {
			return fmt.Sprintf("record %d = %+v, want %+v", i, g, w)
		}
	}
	return ""
}

func compact(b json.RawMessage) []byte {
	if len(b) == 0 {
		return nil
	}
	out, err := json.Marshal(b)
	if err != nil {
		return []byte("invalid:" + string(b))
	}
	return out
}

func replayOne(t *testing.T, dir string) (Session, []Problem) {
	t.Helper()
	ss, ps, err := Replay(dir)
	if err != nil {
		t.Fatal(err)
	}
	switch len(ss) {
	case 0:
		return Session{}, ps
	case 1:
		return ss[0], ps
	}
	t.Fatalf("%d sessions, want 1", len(ss))
	return Session{}, nil
}
