package journal

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/profiles"
)

// session is one record of every type, in an order a session may have them,
// with the Data bytes each payload has on disk (the format of docs/log.md:
// a change of a payload's fields or their order fails here) and what the
// transition does to the state (check).
var session = []struct {
	payload Payload
	data    string
	check   func(s *State) bool
}{
	{SessionOpened{SessionID: "s", Cwd: "/w", EnvironmentID: "e", SandboxMode: profiles.ReadOnly, ApprovalPolicy: profiles.ApprovalOnRequest, Preset: "read-only"},
		`{"session_id":"s","cwd":"/w","environment_id":"e","sandbox_mode":"read-only","approval_policy":"on-request","explicit_mode":false,"preset":"read-only"}`,
		func(s *State) bool {
			return s.Opened.Cwd == "/w" && s.Mode == profiles.ReadOnly && s.Preset == "read-only" && !s.ExplicitMode
		}},
	{PresetIntent{Key: "auto"}, `{"key":"auto"}`,
		func(s *State) bool { return s.Preset == "auto" && s.ExplicitMode }},
	{KnobChanged{Knob: KnobSandboxMode, From: "read-only", To: "workspace-write"}, `{"knob":"sandbox_mode","from":"read-only","to":"workspace-write"}`,
		func(s *State) bool { return s.Mode == profiles.WorkspaceWrite }},
	{TurnBegun{TurnID: "t1"}, `{"turn_id":"t1"}`,
		func(s *State) bool { return s.OpenTurn() == "t1" }},
	{GrantApplied{EnvironmentID: "e", TurnID: "t1", NormalizeResult: profiles.NormalizeResult{Scope: profiles.ScopeTurn,
		Permissions: profiles.Profile{Network: &profiles.Network{Enabled: true}}}},
		`{"environment_id":"e","turn_id":"t1","permissions":{"network":{"enabled":true}},"scope":"turn","strict_auto_review":false}`,
		func(s *State) bool { g := s.Grants["e"]; return g != nil && g.TurnID == "t1" && g.Turn.Network != nil }},
	{ApprovalAsked{ApprovalID: "a1", SessionID: "s", TurnID: "t1", ToolName: "shell", CallID: "c1", Reason: "r"},
		`{"approval_id":"a1","session_id":"s","turn_id":"t1","tool_name":"shell","call_id":"c1","reason":"r"}`,
		func(s *State) bool { a, _ := s.Pending(); return slices.Equal(a, []string{"a1"}) }},
	{ApprovalDecided{ApprovalID: "a1", Outcome: "allowed-once"}, `{"approval_id":"a1","outcome":"allowed-once"}`,
		func(s *State) bool { a, _ := s.Pending(); return len(a) == 0 }},
	{CallStarted{CallID: "c1", TurnID: "t1", EnvironmentID: "e", Request: json.RawMessage(`{"command":["true"]}`), EnvNames: []string{"TOKEN"}},
		`{"call_id":"c1","turn_id":"t1","environment_id":"e","request":{"command":["true"]},"env_names":["TOKEN"]}`,
		func(s *State) bool { return slices.Equal(s.OpenCalls(), []string{"c1"}) }},
	{CallFinished{CallID: "c1", Outcome: "exited", ExitCode: new(int)}, `{"call_id":"c1","outcome":"exited","exit_code":0}`,
		func(s *State) bool { return len(s.OpenCalls()) == 0 }},
	{TurnEnded{TurnID: "t1"}, `{"turn_id":"t1"}`,
		func(s *State) bool {
			g := s.Grants["e"]
			return s.OpenTurn() == "" && g.TurnID == "" && g.Turn.Network == nil
		}},
	{SessionClosed{}, `{}`,
		func(s *State) bool { return s.Closed() }},
}

// TestVocabularyCovered: the table above has one row per record type, so
// that a type added to the vocabulary fails the tests below until it has a
// payload on disk and a transition.
func TestVocabularyCovered(t *testing.T) {
	var got []string
	for _, r := range session {
		got = append(got, r.payload.RecordType())
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(Types))
	if !slices.Equal(got, want) {
		t.Fatalf("the test session's types %v, want one of each of the vocabulary's: %v", got, want)
	}
}

// TestVocabularyRoundTrip: every record type, written by the Writer and
// read back strictly by Replay, decodes to the payload it was written from,
// with the Data bytes of the log's format.
func TestVocabularyRoundTrip(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(dir, "s")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range session {
		rec, err := NewRecord("s", r.payload)
		if err != nil {
			t.Fatal(err)
		}
		if string(rec.Data) != r.data {
			t.Errorf("%s: data %s, want %s", rec.Type, rec.Data, r.data)
		}
		if err := w.Append(rec); err != nil {
			t.Fatalf("append %s: %v", rec.Type, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	s, ps := replayOne(t, dir)
	if len(ps) != 0 || len(s.Records) != len(session) {
		t.Fatalf("problems %v, %d records, want %d", ps, len(s.Records), len(session))
	}
	for i, rec := range s.Records {
		p, err := Decode(rec)
		if err != nil {
			t.Fatalf("decode %s: %v", rec.Type, err)
		}
		want := reflect.New(reflect.TypeOf(session[i].payload))
		want.Elem().Set(reflect.ValueOf(session[i].payload))
		if !reflect.DeepEqual(p, want.Interface()) {
			t.Errorf("%s: read back %+v, want %+v", rec.Type, p, want.Interface())
		}
	}
}

// TestTransitionCoversVocabulary: State.Apply has a case for every record
// type, and each does what the table says (errNoTransition otherwise).
func TestTransitionCoversVocabulary(t *testing.T) {
	st := NewState("s")
	for _, r := range session {
		rec, err := NewRecord("s", r.payload)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Apply(rec); err != nil {
			t.Fatalf("apply %s: %v", rec.Type, err)
		}
		if !r.check(st) {
			t.Errorf("after %s: state %+v", rec.Type, st)
		}
	}
}

// TestDecodeStrict: Decode refuses what the strict rules refuse, and a type
// outside the vocabulary.
func TestDecodeStrict(t *testing.T) {
	for _, r := range []Record{
		rec("s", 1, TypeTurnBegun, `{"turn_id":"t","extra":1}`),
		rec("s", 1, TypeTurnBegun, `{"Turn_ID":"t"}`),
		rec("s", 1, TypeKnobChanged, `{"knob":"a","knob":"b"}`),
		rec("s", 1, "call/exploded", `{}`),
	} {
		if p, err := Decode(r); err == nil {
			t.Errorf("Decode(%s %s) = %+v, want an error", r.Type, r.Data, p)
		}
	}
}
