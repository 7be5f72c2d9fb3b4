package serve

import (
	"strings"
	"testing"
)

// TestRecordType: a record is written only under its data's own type, so
// that no turn/ended goes to the log with turn/begun's payload or the other
// way round.
func TestRecordType(t *testing.T) {
	if _, err := record(RecTurnEnded, "s", turnRecord{TurnID: "t"}); err == nil || !strings.Contains(err.Error(), "turn/begun's") {
		t.Errorf("turn/ended with turn/begun's data: %v", err)
	}
	rec, err := record(RecTurnEnded, "s", turnEndedRecord{TurnID: "t"})
	if err != nil || rec.Type != RecTurnEnded || string(rec.Data) != `{"turn_id":"t"}` || rec.SessionID != "s" || rec.Time.IsZero() {
		t.Errorf("record = %+v, %v", rec, err)
	}
}
