package serve

import (
	"testing"

	"github.com/sbx-sandbox/sbx/internal/journal"
	"github.com/sbx-sandbox/sbx/internal/profiles"
)

// TestRecordType: a record is written only under its data's own type, so
// that no turn/ended goes to the log with turn/begun's payload or the other
// way round. The session's append takes the payload alone and the type is
// the payload's (RecordType): a record under another type's data cannot be
// built any more.
func TestRecordType(t *testing.T) {
	sess := sessionIn(t, profiles.ReadOnly)
	if err := sess.append(journal.TurnBegun{TurnID: "t"}); err != nil {
		t.Fatal(err)
	}
	if err := sess.append(journal.TurnEnded{TurnID: "t"}); err != nil {
		t.Fatal(err)
	}
	recs := sess.log.(*MemLog).Records()
	rec := recs[len(recs)-1]
	if rec.Type != journal.TypeTurnEnded || string(rec.Data) != `{"turn_id":"t"}` || rec.SessionID != "s" || rec.Time.IsZero() {
		t.Errorf("record = %+v", rec)
	}
}

// sessionIn is a session "s" opened in mode, its log in memory.
func sessionIn(t testing.TB, mode profiles.Mode) *session {
	t.Helper()
	sess := &session{id: "s", log: &MemLog{}, st: journal.NewState("s")}
	if err := sess.append(journal.SessionOpened{SessionID: "s", Cwd: "/", EnvironmentID: "s", SandboxMode: mode, ApprovalPolicy: profiles.ApprovalNever}); err != nil {
		t.Fatal(err)
	}
	return sess
}
