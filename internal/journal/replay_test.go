package journal

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestReplayRules: each record that breaks a rule is rejected (not applied,
// replay goes on) or stops the replay, and says why.
func TestReplayRules(t *testing.T) {
	open := rec("s", 1, TypeSessionOpened, "")
	turn := rec("s", 2, TypeTurnBegun, `{"turn_id":"t1"}`)
	asked := rec("s", 3, TypeApprovalAsked, `{"approval_id":"a1"}`)
	tests := []struct {
		name   string
		recs   []Record // the last one breaks the rule
		effect Effect   // "" : no problem
		reason string
	}{
		{"decided-without-asked", []Record{open, turn, rec("s", 3, TypeApprovalDecided, `{"approval_id":"a1","outcome":"allowed-once"}`)}, EffectRejected, `approval "a1" was never asked`},
		{"decided-other-id", []Record{open, turn, asked, rec("s", 4, TypeApprovalDecided, `{"approval_id":"a2","outcome":"rejected"}`)}, EffectRejected, `approval "a2" was never asked`},
		{"second-decided", []Record{open, turn, asked, rec("s", 4, TypeApprovalDecided, `{"approval_id":"a1","outcome":"rejected"}`), rec("s", 5, TypeApprovalDecided, `{"approval_id":"a1","outcome":"allowed-once"}`)}, EffectRejected, "decided already"},
		{"decided-unknown-outcome", []Record{open, turn, asked, rec("s", 4, TypeApprovalDecided, `{"approval_id":"a1","outcome":"approved"}`)}, EffectRejected, `outcome "approved"`},
		{"decided-no-id", []Record{open, turn, asked, rec("s", 4, TypeApprovalDecided, `{"outcome":"rejected"}`)}, EffectRejected, "without data.approval_id"},
		{"asked-twice", []Record{open, turn, asked, rec("s", 4, TypeApprovalAsked, `{"approval_id":"a1"}`)}, EffectRejected, "asked before"},
		{"approval-id-case-variant", []Record{open, turn, rec("s", 3, TypeApprovalAsked, `{"Approval_ID":"a1"}`)}, EffectRejected, "Approval_ID"},
		{"data-duplicate-key", []Record{open, turn, rec("s", 3, TypeApprovalAsked, `{"approval_id":"a1","approval_id":"a2"}`)}, EffectStopped, "duplicate key"},
		{"data-not-object", []Record{open, rec("s", 2, TypeCallStarted, `[1]`)}, EffectRejected, "not a JSON object"},
		{"turn-ended-never-begun", []Record{open, rec("s", 2, TypeTurnEnded, `{"turn_id":"t9"}`)}, EffectRejected, "never begun"},
		{"turn-ended-twice", []Record{open, turn, rec("s", 3, TypeTurnEnded, `{"turn_id":"t1"}`), rec("s", 4, TypeTurnEnded, `{"turn_id":"t1"}`)}, EffectRejected, "ended already"},
		{"turn-begun-twice", []Record{open, turn, rec("s", 3, TypeTurnBegun, `{"turn_id":"t1"}`)}, EffectRejected, "begun before"},
		{"opened-twice", []Record{open, rec("s", 2, TypeSessionOpened, "")}, EffectRejected, "again"},
		{"first-not-opened", []Record{rec("s", 1, TypeTurnBegun, `{"turn_id":"t1"}`)}, EffectStopped, "not session/opened"},
		{"seq-gap", []Record{open, rec("s", 3, TypeCallStarted, "")}, EffectStopped, "seq 3 where 2"},
		{"seq-repeat", []Record{open, rec("s", 1, TypeCallStarted, "")}, EffectStopped, "seq 1 where 2"},
		{"other-session", []Record{open, rec("x", 2, TypeCallStarted, "")}, EffectStopped, `session_id "x"`},
		{"unknown-type", []Record{open, rec("s", 2, "call/exploded", "")}, EffectStopped, `type "call/exploded"`},
		{"closed-approval-pending", []Record{open, turn, asked, rec("s", 4, TypeTurnEnded, `{"turn_id":"t1"}`), rec("s", 5, TypeSessionClosed, "")}, EffectRejected, `approvals [a1]`},
		{"closed-turn-open", []Record{open, turn, rec("s", 3, TypeSessionClosed, "")}, EffectRejected, `turns [t1]`},
		{"good", []Record{open, turn, asked, rec("s", 4, TypeApprovalDecided, `{"approval_id":"a1","outcome":"cancelled"}`), rec("s", 5, TypeTurnEnded, `{"turn_id":"t1"}`)}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			// A record after the bad one shows whether replay went on.
			after := rec("s", uint64(len(tt.recs)+1), TypeCallStarted, `{"call_id":"after"}`)
			writeLog(t, dir, "s", append(slices.Clone(tt.recs), after)...)
			s, ps := replayOne(t, dir)
			if tt.effect == "" {
				if len(ps) != 0 || len(s.Records) != len(tt.recs)+1 {
					t.Fatalf("problems %v, %d records; want none, %d", ps, len(s.Records), len(tt.recs)+1)
				}
				return
			}
			if len(ps) != 1 || ps[0].Effect != tt.effect || !strings.Contains(ps[0].Reason, tt.reason) {
				t.Fatalf("problems %v, want one %s with %q", ps, tt.effect, tt.reason)
			}
			n := len(tt.recs) - 1
			if tt.effect == EffectRejected {
				n++ // the record after
			}
			if len(s.Records) != n {
				t.Fatalf("%d records applied, want %d", len(s.Records), n)
			}
			for _, r := range s.Records {
				if r.Seq == uint64(len(tt.recs)) {
					t.Fatalf("the bad record was applied: %+v", r)
				}
			}
			if ps[0].Offset <= 0 && len(tt.recs) > 1 {
				t.Errorf("offset %d", ps[0].Offset)
			}
		})
	}
}

// TestReplayClosed: session/closed is the last record; one after it is
// rejected, and Settle has nothing to add to a closed session.
func TestReplayClosed(t *testing.T) {
	dir := t.TempDir()
	writeLog(t, dir, "s", rec("s", 1, TypeSessionOpened, ""), rec("s", 2, TypeTurnBegun, `{"turn_id":"t1"}`),
		rec("s", 3, TypeTurnEnded, `{"turn_id":"t1"}`), rec("s", 4, TypeSessionClosed, ""),
		rec("s", 5, TypeTurnBegun, `{"turn_id":"t2"}`))
	s, ps := replayOne(t, dir)
	if len(s.Records) != 4 || s.Records[3].Type != TypeSessionClosed {
		t.Fatalf("records %v", s.Records)
	}
	if len(ps) != 1 || ps[0].Effect != EffectRejected || !strings.Contains(ps[0].Reason, "turn/begun after session/closed") {
		t.Errorf("problems %v", ps)
	}
	if got := Settle(s); len(got) != 0 {
		t.Errorf("Settle of a closed session: %v", got)
	}
}

// TestReplayStrictRecord: a record with an unknown or case-variant key, or
// without a required one, stops the replay.
func TestReplayStrictRecord(t *testing.T) {
	for _, payload := range []string{
		`{"type":"session/opened","session_id":"s","time":"2026-12-04T04:00:00Z","seq":1,"extra":1}`,
		`{"type":"session/opened","Session_ID":"s","time":"2026-12-04T04:00:00Z","seq":1}`,
		`{"type":"session/opened","session_id":"s","time":"2026-12-04T04:00:00Z"}`,
		`{"type":"session/opened","session_id":"s","session_id":"s","time":"2026-12-04T04:00:00Z","seq":1}`,
		`{"type":"session/opened","session_id":"s","time":"2026-12-04T04:00:00Z","seq":1} {}`,
	} {
		dir := t.TempDir()
		data := append(encodeFrame([]byte(payload)), frameOf(t, rec("s", 1, TypeSessionOpened, ""))...)
		os.WriteFile(filepath.Join(dir, "s.log"), data, 0o600)
		s, ps := replayOne(t, dir)
		if len(s.Records) != 0 || len(ps) != 1 || ps[0].Kind != ProblemInvalid || ps[0].Effect != EffectStopped {
			t.Errorf("%s: %d records, problems %v; want none, one invalid stopped", payload, len(s.Records), ps)
		}
	}
}

// TestReplayFiles: names that are no session id, links and directories are
// reported and skipped; files of other names are not journal's.
func TestReplayFiles(t *testing.T) {
	dir := t.TempDir()
	writeLog(t, dir, "good", basic("good")...)
	writeLog(t, t.TempDir(), "x", basic("x")...)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hi"), 0o600)
	os.WriteFile(filepath.Join(dir, ".hidden.log"), []byte("hi"), 0o600)
	os.Mkdir(filepath.Join(dir, "d.log"), 0o700)
	if err := os.Symlink(filepath.Join(dir, "good.log"), filepath.Join(dir, "link.log")); err != nil {
		t.Fatal(err)
	}
	ss, ps, err := Replay(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 1 || ss[0].ID != "good" || len(ss[0].Records) != 7 {
		t.Fatalf("sessions %+v, want good with 7 records", ss)
	}
	var files []string
	for _, p := range ps {
		if p.Kind != ProblemFile || p.Effect != EffectSkipped {
			t.Errorf("problem %v, want file, skipped", p)
		}
		files = append(files, filepath.Base(p.File))
	}
	if want := []string{".hidden.log", "d.log", "link.log"}; !slices.Equal(files, want) {
		t.Errorf("problems for %v, want %v", files, want)
	}
	if _, _, err := Replay(filepath.Join(dir, "nonexistent")); !os.IsNotExist(errorsUnwrapAll(err)) {
		t.Errorf("Replay of a missing dir: %v, want not exist", err)
	}
}

func errorsUnwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}

// TestSettle: pending approvals settle cancelled and open turns close; the
// settled session has nothing pending, and Settle of it is empty.
func TestSettle(t *testing.T) {
	dir := t.TempDir()
	recs := []Record{
		rec("s", 1, TypeSessionOpened, ""),
		rec("s", 2, TypeTurnBegun, `{"turn_id":"t1"}`),
		rec("s", 3, TypeApprovalAsked, `{"approval_id":"a1"}`),
		rec("s", 4, TypeApprovalAsked, `{"approval_id":"a2"}`),
		rec("s", 5, TypeApprovalDecided, `{"approval_id":"a1","outcome":"allowed-once"}`),
		rec("s", 6, TypeTurnEnded, `{"turn_id":"t1"}`),
		rec("s", 7, TypeTurnBegun, `{"turn_id":"t2"}`),
		rec("s", 8, TypeApprovalAsked, `{"approval_id":"a3"}`),
		// rejected: a1 was decided; its seq is a gap in s.Records
		rec("s", 9, TypeApprovalDecided, `{"approval_id":"a1","outcome":"rejected"}`),
		rec("s", 10, TypeTurnBegun, `{"turn_id":"t3"}`),
	}
	writeLog(t, dir, "s", recs...)
	s, ps := replayOne(t, dir)
	if len(ps) != 1 || ps[0].Seq != 9 {
		t.Fatalf("problems %v, want the second decided of a1", ps)
	}
	approvals, turns := Pending(s)
	if !slices.Equal(approvals, []string{"a2", "a3"}) || !slices.Equal(turns, []string{"t2", "t3"}) {
		t.Fatalf("Pending = %v, %v; want [a2 a3], [t2 t3]", approvals, turns)
	}
	settle := Settle(s)
	var got []string
	for _, r := range settle {
		got = append(got, r.Type+" "+string(r.Data))
	}
	want := []string{
		`approval/decided {"approval_id":"a2","outcome":"cancelled"}`,
		`approval/decided {"approval_id":"a3","outcome":"cancelled"}`,
		`turn/ended {"turn_id":"t2"}`,
		`turn/ended {"turn_id":"t3"}`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Settle = %q, want %q", got, want)
	}
	w, err := Open(dir, "s")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range settle {
		if err := w.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	s, ps = replayOne(t, dir)
	if len(ps) != 1 || len(s.Records) != 13 {
		t.Fatalf("after settling: %d records, problems %v; want 13 and the old one", len(s.Records), ps)
	}
	if rest := Settle(s); len(rest) != 0 {
		t.Fatalf("Settle of a settled session = %v", rest)
	}
}

// TestProblemJSON: a Problem prints in one line and marshals with stable keys.
func TestProblemJSON(t *testing.T) {
	p := Problem{File: "d/s.log", SessionID: "s", Offset: 40, Seq: 3, Kind: ProblemRejected, Effect: EffectRejected, Reason: "r"}
	if got, want := p.String(), "d/s.log: offset 40 (seq 3): rejected: r; the record is rejected, replay goes on"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	b, _ := json.Marshal(p)
	if want := `{"file":"d/s.log","session_id":"s","offset":40,"seq":3,"kind":"rejected","effect":"rejected","reason":"r"}`; string(b) != want {
		t.Errorf("JSON = %s, want %s", b, want)
	}
}
