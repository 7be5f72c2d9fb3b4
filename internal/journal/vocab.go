package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// The record types, a closed vocabulary (add, never rename): Append refuses
// and replay stops at any other. Each has one payload type below, the shape
// of its Data; vocabulary pairs them, and State.Apply says what each does to
// a session. The Data keys the log's own rules read (the rest is the
// server's, checked when a server rebuilds a session from the log):
//
//	session/opened    first record of every session, once
//	turn/begun        {"turn_id"}
//	turn/ended        {"turn_id"} of a turn begun and not yet ended
//	approval/asked    {"approval_id"}, an id not asked before in the session
//	approval/decided  {"approval_id", "outcome"} of an asked approval, once;
//	                  outcome one of allowed-once, rejected, cancelled, unavailable
//	session/closed    the last record, once nothing is pending: every asked
//	                  approval decided, every begun turn ended
const (
	TypeSessionOpened   = "session/opened"
	TypePresetIntent    = "preset/intent"
	TypeKnobChanged     = "knob/changed"
	TypeTurnBegun       = "turn/begun"
	TypeTurnEnded       = "turn/ended"
	TypeGrantApplied    = "grant/applied"
	TypeApprovalAsked   = "approval/asked"
	TypeApprovalDecided = "approval/decided"
	TypeCallStarted     = "call/started"
	TypeCallFinished    = "call/finished"
	TypeSessionClosed   = "session/closed"
)

// vocabulary is the one table of record types: each type and a new value of
// its payload. Types, Decode and the tests that walk every type
// (TestVocabularyRoundTrip, TestTransitionCoversVocabulary) derive from it;
// a type added here without a case in State.Apply fails the latter.
var vocabulary = []struct {
	typ     string
	payload func() Payload
}{
	{TypeSessionOpened, func() Payload { return &SessionOpened{} }},
	{TypePresetIntent, func() Payload { return &PresetIntent{} }},
	{TypeKnobChanged, func() Payload { return &KnobChanged{} }},
	{TypeTurnBegun, func() Payload { return &TurnBegun{} }},
	{TypeTurnEnded, func() Payload { return &TurnEnded{} }},
	{TypeGrantApplied, func() Payload { return &GrantApplied{} }},
	{TypeApprovalAsked, func() Payload { return &ApprovalAsked{} }},
	{TypeApprovalDecided, func() Payload { return &ApprovalDecided{} }},
	{TypeCallStarted, func() Payload { return &CallStarted{} }},
	{TypeCallFinished, func() Payload { return &CallFinished{} }},
	{TypeSessionClosed, func() Payload { return &SessionClosed{} }},
}

// Types lists every record type, in the order of the constants.
var Types = func() []string {
	out := make([]string, len(vocabulary))
	for i, v := range vocabulary {
		out[i] = v.typ
	}
	return out
}()

func knownType(t string) bool {
	for _, k := range Types {
		if k == t {
			return true
		}
	}
	return false
}

// Payload is the Data of one record type: RecordType names the type.
type Payload interface {
	RecordType() string
}

// NewRecord is the record of p for session, stamped now (Append adds Seq).
func NewRecord(session string, p Payload) (Record, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return Record{}, fmt.Errorf("encode %s record: %w", p.RecordType(), err)
	}
	return Record{Type: p.RecordType(), SessionID: session, Time: time.Now().UTC(), Data: b}, nil
}

// Decode is rec's Data as the payload of rec.Type (a pointer to it),
// decoded strictly (strictjson.Decode: exact keys, no duplicates, no
// key the payload does not know). The error says which type and why; an
// unknown type is one.
func Decode(rec Record) (Payload, error) {
	for _, v := range vocabulary {
		if v.typ != rec.Type {
			continue
		}
		p := v.payload()
		if err := strictjson.Decode(rec.Data, p); err != nil {
			return nil, fmt.Errorf("%s: data: %w", rec.Type, err)
		}
		return p, nil
	}
	return nil, fmt.Errorf("type %q: %w", rec.Type, errUnknownType)
}

var errUnknownType = errors.New("not a record type")

// SessionOpened is session/opened's data: every fact pinned at open, so
// that a replay rebuilds the session without the defaults of its day.
type SessionOpened struct {
	SessionID       string                  `json:"session_id"`
	Cwd             string                  `json:"cwd"`
	EnvironmentID   string                  `json:"environment_id"`
	SandboxMode     profiles.Mode           `json:"sandbox_mode"`
	ApprovalPolicy  profiles.ApprovalPolicy `json:"approval_policy"`
	ExplicitMode    bool                    `json:"explicit_mode"`
	Preset          string                  `json:"preset"`
	Guard           string                  `json:"guard,omitempty"`
	ParentSessionID string                  `json:"parent_session_id,omitempty"`
	// ACPSessionID binds the session to an ACP session: the ACP answerer
	// asks only about its calls.
	ACPSessionID string `json:"acp_session_id,omitempty"`
}

// PresetIntent is preset/intent's data: the preset a client selected,
// recorded before the knob changes it makes.
type PresetIntent struct {
	Key string `json:"key"`
}

// KnobChanged is knob/changed's data: one knob that really changed.
type KnobChanged struct {
	Knob string `json:"knob"` // KnobSandboxMode or KnobApprovalPolicy
	From string `json:"from"`
	To   string `json:"to"`
}

// The knobs a knob/changed record names.
const (
	KnobSandboxMode    = "sandbox_mode"
	KnobApprovalPolicy = "approval_policy"
)

// TurnBegun is turn/begun's data.
type TurnBegun struct {
	TurnID string `json:"turn_id"`
}

// TurnEnded is turn/ended's data.
type TurnEnded struct {
	TurnID string `json:"turn_id"`
}

// GrantApplied is grant/applied's data: a normalised request_permissions
// round trip, stored by environment id and scope.
type GrantApplied struct {
	EnvironmentID string `json:"environment_id"`
	// TurnID is the turn a turn-scoped grant belongs to.
	TurnID string `json:"turn_id,omitempty"`
	profiles.NormalizeResult
	// Withheld says why the session's approval policy answered the round
	// trip with the empty turn grant instead of the client's response (as
	// Codex answers request_permissions under Never): set, the record
	// grants nothing, now or on replay.
	Withheld string `json:"withheld,omitempty"`
}

// ApprovalAsked is approval/asked's data. It has no copy of the call's
// arguments: call_id links it to the call/started record, which has them.
type ApprovalAsked struct {
	ApprovalID string `json:"approval_id"`
	SessionID  string `json:"session_id"`
	TurnID     string `json:"turn_id"`
	ToolName   string `json:"tool_name"`
	CallID     string `json:"call_id,omitempty"`
	Reason     string `json:"reason"`
}

// ApprovalDecided is approval/decided's data.
type ApprovalDecided struct {
	ApprovalID string `json:"approval_id"`
	Outcome    string `json:"outcome"`
}

// CallStarted is call/started's data.
type CallStarted struct {
	CallID        string `json:"call_id"`
	TurnID        string `json:"turn_id"`
	EnvironmentID string `json:"environment_id"`
	// Request is the exec params as received, the call's arguments that
	// approval records link to by call_id, without "env": a runtime passes
	// tokens there, and the log is on disk for as long as the session.
	Request json.RawMessage `json:"request"`
	// EnvNames are the names the request's "env" set, sorted; their values
	// are never recorded.
	EnvNames []string `json:"env_names,omitempty"`
}

// CallFinished is call/finished's data.
type CallFinished struct {
	CallID string `json:"call_id"`
	// Outcome is exited, aborted, aborted_before_dispatch, cancelled,
	// denied, refused, or OutcomeLost.
	Outcome  string `json:"outcome"`
	ExitCode *int   `json:"exit_code,omitempty"`
	Error    string `json:"error,omitempty"`
}

// OutcomeLost is the outcome of a call whose end a restarted server never
// found written: its tree died with the server that ran it, or it had
// ended and its call/finished (written after the fact) was not yet on disk.
const OutcomeLost = "lost"

// SessionClosed is session/closed's data: none ({}).
type SessionClosed struct{}

func (SessionOpened) RecordType() string   { return TypeSessionOpened }
func (PresetIntent) RecordType() string    { return TypePresetIntent }
func (KnobChanged) RecordType() string     { return TypeKnobChanged }
func (TurnBegun) RecordType() string       { return TypeTurnBegun }
func (TurnEnded) RecordType() string       { return TypeTurnEnded }
func (GrantApplied) RecordType() string    { return TypeGrantApplied }
func (ApprovalAsked) RecordType() string   { return TypeApprovalAsked }
func (ApprovalDecided) RecordType() string { return TypeApprovalDecided }
func (CallStarted) RecordType() string     { return TypeCallStarted }
func (CallFinished) RecordType() string    { return TypeCallFinished }
func (SessionClosed) RecordType() string   { return TypeSessionClosed }
