package journal

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// TestServerRules: a record that breaks only a rule of the server's facts
// is the log's record all the same: replay accepts it with no problem, as
// before the rules moved into State.Apply, and Apply says ServerOnly, which
// a restoring server refuses the session on. The log's facts after it are
// still kept (Pending).
func TestServerRules(t *testing.T) {
	open := rec("s", 1, TypeSessionOpened, `{"session_id":"s","cwd":"/w","environment_id":"e","sandbox_mode":"read-only","approval_policy":"on-request","explicit_mode":false,"preset":"read-only"}`)
	turn := rec("s", 2, TypeTurnBegun, `{"turn_id":"t1"}`)
	tests := []struct {
		name   string
		recs   []Record // the last one breaks a server's rule
		reason string
	}{
		{"opened-other-session", []Record{rec("s", 1, TypeSessionOpened, `{"session_id":"x"}`)}, "the log of s opened session x"},
		{"opened-no-data", []Record{rec("s", 1, TypeSessionOpened, "")}, "session/opened: data"},
		{"unknown-key", []Record{open, rec("s", 2, TypeCallStarted, `{"call_id":"c","exit":0}`)}, "exit: unknown field"},
		{"unknown-knob", []Record{open, rec("s", 2, TypeKnobChanged, `{"knob":"colour","from":"a","to":"b"}`)}, `unknown knob "colour"`},
		{"bad-mode", []Record{open, rec("s", 2, TypeKnobChanged, `{"knob":"sandbox_mode","from":"read-only","to":"all"}`)}, "knob/changed"},
		{"two-turns", []Record{open, turn, rec("s", 3, TypeTurnBegun, `{"turn_id":"t2"}`)}, "turn t2 begun while t1 is open"},
		{"grant-outside-turn", []Record{open, rec("s", 2, TypeGrantApplied, `{"environment_id":"e","turn_id":"t9","permissions":{},"scope":"turn","strict_auto_review":false}`)}, "a grant of turn t9 outside it"},
		{"closed-call-running", []Record{open, rec("s", 2, TypeCallStarted, `{"call_id":"c","turn_id":"","environment_id":"e","request":{}}`), rec("s", 3, TypeSessionClosed, "")}, "calls [c] are open"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := NewState("s")
			var err error
			for _, r := range tt.recs {
				err = st.Apply(r)
			}
			if !ServerOnly(err) || !strings.Contains(err.Error(), tt.reason) {
				t.Fatalf("Apply = %v, want a server's rule with %q", err, tt.reason)
			}
			dir := t.TempDir()
			writeLog(t, dir, "s", tt.recs...)
			s, ps := replayOne(t, dir)
			if len(ps) != 0 || len(s.Records) != len(tt.recs) {
				t.Fatalf("replay: problems %v, %d records; want none, %d", ps, len(s.Records), len(tt.recs))
			}
		})
	}
	// The log's facts are kept past a server's rule: the second turn is
	// open for Pending and Settle, as it was.
	st := NewState("s")
	for _, r := range []Record{open, turn, rec("s", 3, TypeTurnBegun, `{"turn_id":"t2"}`)} {
		_ = st.Apply(r)
	}
	if _, turns := st.Pending(); !slices.Equal(turns, []string{"t1", "t2"}) {
		t.Errorf("open turns %v, want [t1 t2]", turns)
	}
}

// TestApplyRejectTakesPlace: a rejected record changes nothing but takes
// its place in the sequence (the next Seq), as replay numbers records.
func TestApplyRejectTakesPlace(t *testing.T) {
	st := NewState("s")
	if err := st.Apply(rec("s", 1, TypeSessionOpened, "")); err != nil && !ServerOnly(err) {
		t.Fatal(err)
	}
	err := st.Apply(rec("s", 2, TypeTurnEnded, `{"turn_id":"t9"}`))
	if err == nil || ServerOnly(err) || !strings.Contains(err.Error(), "never begun") {
		t.Fatalf("Apply = %v, want rejected: never begun", err)
	}
	if st.next != 3 {
		t.Errorf("next seq %d, want 3", st.next)
	}
	if _, turns := st.Pending(); len(turns) != 0 {
		t.Errorf("open turns %v", turns)
	}
}

// TestKeysOf: the keys the log's rules take from a strictly decoded
// payload are those a lenient decode of its data reads, for every type.
func TestKeysOf(t *testing.T) {
	for _, r := range session {
		rec, err := NewRecord("s", r.payload)
		if err != nil {
			t.Fatal(err)
		}
		var want recordKeys
		if _, err := strictjson.DecodeLenient(rec.Data, &want); err != nil {
			t.Fatal(err)
		}
		p, err := Decode(rec)
		if err != nil {
			t.Fatal(err)
		}
		if got := keysOf(p); got != want {
			t.Errorf("%s: keysOf %+v, lenient %+v", rec.Type, got, want)
		}
	}
	// data that is JSON but not an object is rejected, strict or not.
	st := NewState("s")
	_ = st.Apply(rec("s", 1, TypeSessionOpened, ""))
	if err := st.Apply(rec("s", 2, TypeTurnBegun, `null`)); err == nil || ServerOnly(err) || !strings.Contains(err.Error(), "not a JSON object") {
		t.Errorf("Apply(null data) = %v, want rejected: not a JSON object", err)
	}
}

// TestCheckChangesNothing: Check says what Apply would of each record, of
// every kind of answer (accepted, a server's rule, rejected, stopped), and
// leaves the state as it was; its verdict applies a record as Apply does,
// and one the state has moved past is judged again; Undecided follows the
// approvals.
func TestCheckChangesNothing(t *testing.T) {
	open := rec("s", 1, TypeSessionOpened, `{"session_id":"s","cwd":"/w","environment_id":"e","sandbox_mode":"read-only","approval_policy":"on-request","explicit_mode":false,"preset":"read-only"}`)
	for _, tt := range []struct {
		name string
		r    Record
	}{
		{"accepted", rec("s", 2, TypeApprovalAsked, `{"approval_id":"a2","session_id":"s","turn_id":"t1","tool_name":"shell","reason":"r"}`)},
		{"server-rule", rec("s", 2, TypeTurnBegun, `{"turn_id":"t2"}`)},
		{"rejected", rec("s", 2, TypeApprovalDecided, `{"approval_id":"nope","outcome":"rejected"}`)},
		{"stopped", rec("s", 2, "call/exploded", `{}`)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, before, via := NewState("s"), NewState("s"), NewState("s")
			for _, r := range []Record{open, rec("s", 2, TypeTurnBegun, `{"turn_id":"t1"}`),
				rec("s", 3, TypeApprovalAsked, `{"approval_id":"a1","session_id":"s","turn_id":"t1","tool_name":"shell","reason":"r"}`)} {
				if err := errors.Join(st.Apply(r), before.Apply(r), via.Apply(r)); err != nil {
					t.Fatal(err)
				}
			}
			_, cerr := st.Check(tt.r)
			if !reflect.DeepEqual(st, before) {
				t.Fatalf("Check changed the state")
			}
			aerr := st.Apply(tt.r)
			if (cerr == nil) != (aerr == nil) || (cerr != nil && (cerr.Error() != aerr.Error() || ServerOnly(cerr) != ServerOnly(aerr))) {
				t.Errorf("Check = %v, Apply = %v", cerr, aerr)
			}
			// The verdict applies rec as Apply does.
			if judged, err := via.Check(tt.r); err == nil {
				if err := judged.Apply(); err != nil {
					t.Fatalf("Judged.Apply: %v", err)
				}
				if !reflect.DeepEqual(via, st) {
					t.Errorf("Judged.Apply left %+v, Apply %+v", via, st)
				}
			}
		})
	}
	// A verdict the state has moved past is judged again: the second
	// decision of a1, judged before the first was applied, is refused.
	st := NewState("s")
	decide := rec("s", 3, TypeApprovalDecided, `{"approval_id":"a1","outcome":"rejected"}`)
	for _, r := range []Record{open, rec("s", 2, TypeApprovalAsked, `{"approval_id":"a1","session_id":"s","turn_id":"","tool_name":"shell","reason":"r"}`)} {
		if err := st.Apply(r); err != nil {
			t.Fatal(err)
		}
	}
	judged, err := st.Check(decide)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Apply(decide); err != nil {
		t.Fatal(err)
	}
	if err := judged.Apply(); err == nil {
		t.Errorf("a stale verdict applied a second decision")
	}
	st = NewState("s")
	for _, r := range []Record{open, rec("s", 2, TypeApprovalAsked, `{"approval_id":"a1","session_id":"s","turn_id":"","tool_name":"shell","reason":"r"}`),
		rec("s", 3, TypeApprovalAsked, `{"approval_id":"a2","session_id":"s","turn_id":"","tool_name":"fs","reason":"r"}`),
		rec("s", 4, TypeApprovalDecided, `{"approval_id":"a1","outcome":"rejected"}`)} {
		if err := st.Apply(r); err != nil {
			t.Fatal(err)
		}
	}
	if u := st.Undecided(); len(u) != 1 || u[0].ApprovalID != "a2" || u[0].ToolName != "fs" {
		t.Errorf("Undecided = %+v, want a2 alone", u)
	}
}
