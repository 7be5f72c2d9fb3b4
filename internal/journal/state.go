package journal

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// State is what the records of one session have established so far, and
// Apply is the one transition function that moves it: replay, the Writer
// (a record the Writer appends is one replay accepts), Pending and a
// server rebuilding the session (sbx serve's Restore) all step it.
//
// It holds two kinds of facts. The log's own (approvals asked and decided,
// turns begun and ended, closed) decide whether a record is accepted at
// all. The server's (the knobs, the open turn, the grants, the calls
// running) decide whether a server can serve the session again; a record
// that breaks only a rule of these is still the log's record, and Apply
// says so with an error of its own kind (see Apply).
type State struct {
	id   string
	next uint64 // Seq of the next record
	// decided maps each asked approval id to whether it was decided.
	decided map[string]bool
	asked   []string // approval ids in the order asked
	// undecided is the data of each asked approval not yet decided.
	undecided map[string]ApprovalAsked
	// open maps each begun turn id to whether it is still open.
	open  map[string]bool
	turns []string // turn ids in the order begun
	// calls maps each started call id to whether it is still running.
	calls     map[string]bool
	callOrder []string // call ids in the order first started
	// closed: session/closed was accepted; no record may follow it.
	closed bool

	// Opened is session/opened's data: the facts pinned at open.
	Opened SessionOpened
	// Mode, Policy, ExplicitMode and Preset are the knobs: pinned at open,
	// changed by preset/intent and knob/changed.
	Mode         profiles.Mode
	Policy       profiles.ApprovalPolicy
	ExplicitMode bool
	Preset       string
	// Grants are the stored grants, by environment id (ApplyGrant, EndTurn).
	Grants map[string]*EnvGrants
}

// NewState is the state of session id before its first record.
func NewState(id string) *State {
	return &State{id: id, next: 1, decided: map[string]bool{}, undecided: map[string]ApprovalAsked{}, open: map[string]bool{}, calls: map[string]bool{}, Grants: map[string]*EnvGrants{}}
}

// ID is the session's id.
func (s *State) ID() string { return s.id }

// Closed says session/closed was applied.
func (s *State) Closed() bool { return s.closed }

// Level says how bad a rule a record breaks.
type level int

const (
	// levelServer: the log accepts the record (the rules of the log hold),
	// but a server cannot rebuild the session from it: data that does not
	// decode into its payload strictly, a knob of no known value, a turn
	// begun while another is open, a turn grant outside its turn, a close
	// while calls run. Replay and Append accept it; Restore refuses the
	// session, never guessing.
	levelServer level = iota + 1
	// levelReject: the record is rejected: it is not applied, and the
	// records after it still are.
	levelReject
	// levelStop: the record cannot be trusted (wrong session, a gap in Seq,
	// an unknown type), and nothing after it can be either.
	levelStop
)

// ruleError is a record that breaks a rule, and how bad it is.
type ruleError struct {
	level  level
	reason string
}

func (e *ruleError) Error() string { return e.reason }

func stopf(format string, a ...any) *ruleError {
	return &ruleError{level: levelStop, reason: fmt.Sprintf(format, a...)}
}

func rejectf(format string, a ...any) *ruleError {
	return &ruleError{level: levelReject, reason: fmt.Sprintf(format, a...)}
}

func serverf(format string, a ...any) *ruleError {
	return &ruleError{level: levelServer, reason: fmt.Sprintf(format, a...)}
}

// errNoTransition is a record type of the vocabulary that Apply has no case
// for: TestTransitionCoversVocabulary fails on it.
var errNoTransition = errors.New("no transition for this record type")

// ServerOnly says err (of Apply) broke only a rule of the server's facts:
// the log keeps the record, and a server cannot serve the session from it.
func ServerOnly(err error) bool {
	var re *ruleError
	return errors.As(err, &re) && re.level == levelServer
}

// Apply is the transition function: what rec does to the session, with
// every rule checked. It checks neither rec's session id nor its Seq nor
// its time (where a record sits in a file: place does, for replay and
// Append). The error says what is wrong; its kind is what was done:
//   - rec breaks a rule of the log (an approval/decided without its
//     approval/asked, a second decided, a turn ended that was not open,
//     anything after session/closed, data that is not an object): nothing
//     is applied but rec's place in the sequence;
//   - rec cannot be trusted (not a record type, not session/opened first):
//     nothing is applied, and a replay stops;
//   - ServerOnly(err): rec breaks only a rule of the server's facts; the
//     log's facts are applied (the log holds the record), the server's
//     as far as they go, and a server restoring the session refuses it.
func (s *State) Apply(rec Record) error {
	rerr := s.step(rec)
	if rerr == nil {
		return nil
	}
	if rerr.level == levelReject {
		s.next++ // the rejected record takes its place in the sequence
	}
	return rerr
}

// step is Apply without taking a rejected record's place: Append refuses
// such a record instead of writing it.
func (s *State) step(rec Record) *ruleError {
	p, k, rerr := s.judge(rec)
	if rerr != nil && rerr.level != levelServer {
		return rerr
	}
	s.apply(rec, k)
	if rerr == nil {
		// A record that breaks a server's rule changes none of the
		// server's facts: a server does not serve the session from it.
		s.serveApply(p)
	}
	return rerr
}

// judge is every rule Apply checks, the log's and the server's, without
// changing anything: rec's payload (nil when it did not decode strictly),
// the keys the log's rules read, and the first rule rec breaks.
func (s *State) judge(rec Record) (Payload, recordKeys, *ruleError) {
	// Data is decoded once, strictly into its payload; the log's rules
	// read their keys from that, or, when it does not decode (a server's
	// rule), leniently as before.
	var p Payload
	var perr error
	if knownType(rec.Type) && rec.Type != TypeSessionClosed {
		p, perr = Decode(rec)
	}
	k, rerr := s.check(rec, p)
	if rerr != nil {
		return p, k, rerr
	}
	return p, k, s.serveCheck(rec, p, perr)
}

// Check says what Apply would say of rec, and changes nothing: a live
// server checks each record before it writes it, so that it never makes
// durable a record its own state (or a restarted server's) would refuse.
// The verdict, when rec passes, applies it (Judged.Apply) without
// decoding its data again.
func (s *State) Check(rec Record) (Judged, error) {
	p, k, rerr := s.judge(rec)
	if rerr != nil {
		return Judged{}, rerr
	}
	return Judged{st: s, next: s.next, rec: rec, p: p, k: k}, nil
}

// Judged is a record Check took, with its data decoded: the strict
// decode is the most of what checking and applying a record costs, and a
// server does both to every record it writes.
type Judged struct {
	st   *State
	next uint64 // st.next when judged: every Apply moves it
	rec  Record
	p    Payload
	k    recordKeys
}

// Apply is State.Apply(rec) of the State that judged it. Should that
// State have applied a record since, the verdict is stale and rec is
// judged again.
func (j Judged) Apply() error {
	if j.st.next != j.next {
		return j.st.Apply(j.rec)
	}
	j.st.apply(j.rec, j.k)
	j.st.serveApply(j.p)
	return nil
}

// place says whether rec may sit next in the session's file: its session,
// its Seq, its time. A wrong one stops a replay.
func (s *State) place(rec Record) *ruleError {
	switch {
	case rec.SessionID != s.id:
		return stopf("session_id %q in the log of session %q", rec.SessionID, s.id)
	case rec.Seq != s.next:
		return stopf("seq %d where %d comes next: a record is missing or repeated", rec.Seq, s.next)
	case rec.Time.IsZero():
		return stopf("time: zero")
	}
	return nil
}

// recordKeys are the Data keys the log's rules read. Data is decoded
// leniently here: the other keys are the server's facts (serve checks them
// strictly), but keys stay exact and unique.
type recordKeys struct {
	ApprovalID string `json:"approval_id"`
	Outcome    string `json:"outcome"`
	TurnID     string `json:"turn_id"`
}

// keysOf is the keys the log's rules read, from a payload that decoded
// strictly (so a lenient decode would have read the same).
func keysOf(p Payload) recordKeys {
	switch p := p.(type) {
	case *TurnBegun:
		return recordKeys{TurnID: p.TurnID}
	case *TurnEnded:
		return recordKeys{TurnID: p.TurnID}
	case *ApprovalAsked:
		return recordKeys{ApprovalID: p.ApprovalID, TurnID: p.TurnID}
	case *ApprovalDecided:
		return recordKeys{ApprovalID: p.ApprovalID, Outcome: p.Outcome}
	case *GrantApplied:
		return recordKeys{TurnID: p.TurnID}
	case *CallStarted:
		return recordKeys{TurnID: p.TurnID}
	case *CallFinished:
		return recordKeys{Outcome: p.Outcome}
	}
	return recordKeys{}
}

// check says whether rec may come next by the log's rules; it changes
// nothing. p is rec's payload, nil when it did not decode strictly.
func (s *State) check(rec Record, p Payload) (recordKeys, *ruleError) {
	var k recordKeys
	switch {
	case !knownType(rec.Type):
		return k, stopf("type %q: not a record type", rec.Type)
	case s.next == 1 && rec.Type != TypeSessionOpened:
		return k, stopf("the first record is %s, not %s: the log does not begin with %s", rec.Type, TypeSessionOpened, TypeSessionOpened)
	}
	if d := bytes.TrimSpace(rec.Data); len(d) > 0 {
		if d[0] != '{' {
			return k, rejectf("%s: data: not a JSON object", rec.Type)
		}
		if p != nil {
			k = keysOf(p)
		} else if _, err := strictjson.DecodeLenient(d, &k); err != nil {
			return k, rejectf("%s: data: %v", rec.Type, err)
		}
	}
	if s.closed {
		// A closed session is not served again: nothing it did after
		// its close can be trusted to mean anything.
		return k, rejectf("%s after %s", rec.Type, TypeSessionClosed)
	}
	switch rec.Type {
	case TypeSessionClosed:
		// The server settles what is open before it closes a session: a
		// close that leaves something open would hide it from Settle.
		if approvals, turns := s.Pending(); len(approvals) > 0 || len(turns) > 0 {
			return k, rejectf("%s while approvals %v and turns %v are open", rec.Type, approvals, turns)
		}
	case TypeSessionOpened:
		if s.next != 1 {
			return k, rejectf("%s again, at seq %d", rec.Type, rec.Seq)
		}
	case TypeTurnBegun:
		switch _, seen := s.open[k.TurnID]; {
		case k.TurnID == "":
			return k, rejectf("%s without data.turn_id", rec.Type)
		case seen:
			return k, rejectf("%s: turn %q was begun before", rec.Type, k.TurnID)
		}
	case TypeTurnEnded:
		switch open, seen := s.open[k.TurnID]; {
		case k.TurnID == "":
			return k, rejectf("%s without data.turn_id", rec.Type)
		case !seen:
			return k, rejectf("%s: turn %q was never begun", rec.Type, k.TurnID)
		case !open:
			return k, rejectf("%s: turn %q has ended already", rec.Type, k.TurnID)
		}
	case TypeApprovalAsked:
		switch _, seen := s.decided[k.ApprovalID]; {
		case k.ApprovalID == "":
			return k, rejectf("%s without data.approval_id", rec.Type)
		case seen:
			return k, rejectf("%s: approval %q was asked before", rec.Type, k.ApprovalID)
		}
	case TypeApprovalDecided:
		done, seen := s.decided[k.ApprovalID]
		switch {
		case k.ApprovalID == "":
			return k, rejectf("%s without data.approval_id", rec.Type)
		case !seen:
			return k, rejectf("%s: approval %q was never asked (decided without being asked)", rec.Type, k.ApprovalID)
		case done:
			return k, rejectf("%s: approval %q was decided already (decided twice)", rec.Type, k.ApprovalID)
		}
		switch escalate.Outcome(k.Outcome) {
		case escalate.AllowedOnce, escalate.Rejected, escalate.Cancelled, escalate.Unavailable:
		default:
			return k, rejectf("%s: outcome %q: want allowed-once, rejected, cancelled or unavailable", rec.Type, k.Outcome)
		}
	}
	return k, nil
}

// apply records the log's facts of rec (checked).
func (s *State) apply(rec Record, k recordKeys) {
	s.next++
	switch rec.Type {
	case TypeTurnBegun:
		s.open[k.TurnID] = true
		s.turns = append(s.turns, k.TurnID)
	case TypeTurnEnded:
		s.open[k.TurnID] = false
	case TypeApprovalAsked:
		s.decided[k.ApprovalID] = false
		s.asked = append(s.asked, k.ApprovalID)
	case TypeApprovalDecided:
		s.decided[k.ApprovalID] = true
		delete(s.undecided, k.ApprovalID)
	case TypeSessionClosed:
		s.closed = true
	}
}

// serveCheck checks rec (checked by the log's rules) against the server's
// facts, changing nothing: a rule here reads the state rec comes after. p
// and perr are Decode(rec) (nil, nil for session/closed). Its errors are
// levelServer, but for a type with no case.
func (s *State) serveCheck(rec Record, p Payload, perr error) *ruleError {
	if rec.Type == TypeSessionClosed {
		// Its data is {} and nothing reads it. The log's rules saw to the
		// approvals and turns; a server also waits for its calls.
		if calls := s.OpenCalls(); len(calls) > 0 {
			return serverf("%s while calls %v are open", rec.Type, calls)
		}
		return nil
	}
	if perr != nil {
		return serverf("%v", perr)
	}
	switch p := p.(type) {
	case *SessionOpened:
		if p.SessionID != s.id {
			return serverf("the log of %s opened session %s", s.id, p.SessionID)
		}
	case *KnobChanged:
		switch p.Knob {
		case KnobSandboxMode:
			if _, err := profiles.ParseMode(p.To); err != nil {
				return serverf("%s: %v", rec.Type, err)
			}
		case KnobApprovalPolicy:
			if _, err := profiles.ParseApprovalPolicy(p.To); err != nil {
				return serverf("%s: %v", rec.Type, err)
			}
		default:
			return serverf("%s: unknown knob %q", rec.Type, p.Knob)
		}
	case *TurnBegun:
		// A server runs one turn at a time.
		if t := s.OpenTurn(); t != "" {
			return serverf("turn %s begun while %s is open", p.TurnID, t)
		}
	case *GrantApplied:
		if p.Withheld == "" && p.Scope == profiles.ScopeTurn && s.OpenTurn() != p.TurnID {
			return serverf("a grant of turn %s outside it", p.TurnID)
		}
	case *PresetIntent, *TurnEnded, *ApprovalAsked, *ApprovalDecided, *CallStarted, *CallFinished:
		// No rule of the server's beyond a strict decode.
	default:
		return stopf("%s: %v", rec.Type, errNoTransition)
	}
	return nil
}

// serveApply applies p (rec's payload, every rule checked) to the server's
// facts; p is nil for session/closed, whose effect is the log's (apply).
func (s *State) serveApply(p Payload) {
	switch p := p.(type) {
	case *SessionOpened:
		s.Opened = *p
		s.Mode, s.Policy, s.ExplicitMode, s.Preset = p.SandboxMode, p.ApprovalPolicy, p.ExplicitMode, p.Preset
	case *PresetIntent:
		s.Preset, s.ExplicitMode = p.Key, true
	case *KnobChanged:
		// Checked: the value parses (serveCheck).
		if p.Knob == KnobSandboxMode {
			s.Mode, _ = profiles.ParseMode(p.To)
		} else {
			s.Policy, _ = profiles.ParseApprovalPolicy(p.To)
		}
	case *TurnEnded:
		EndTurn(s.Grants, p.TurnID)
	case *GrantApplied:
		ApplyGrant(s.Grants, *p)
	case *ApprovalAsked:
		// Kept until decided (apply drops it): what a live server shows
		// of a question still waiting for its answer (Undecided).
		s.undecided[p.ApprovalID] = *p
	case *CallStarted:
		if _, seen := s.calls[p.CallID]; !seen {
			s.callOrder = append(s.callOrder, p.CallID)
		}
		s.calls[p.CallID] = true
	case *CallFinished:
		s.calls[p.CallID] = false
	}
}

// Undecided is the approval/asked records not yet decided, oldest first
// (those whose data decoded strictly: a server serves no other).
func (s *State) Undecided() []ApprovalAsked {
	var out []ApprovalAsked
	for _, id := range s.asked {
		if a, ok := s.undecided[id]; ok && !s.decided[id] {
			out = append(out, a)
		}
	}
	return out
}

// Pending is the approvals asked and not decided, and the turns begun and
// not ended, each in the order they came.
func (s *State) Pending() (approvals, turns []string) {
	for _, id := range s.asked {
		if !s.decided[id] {
			approvals = append(approvals, id)
		}
	}
	for _, id := range s.turns {
		if s.open[id] {
			turns = append(turns, id)
		}
	}
	return approvals, turns
}

// OpenTurn is the one open turn ("" when none; the first when a log that
// a server would not serve has more).
func (s *State) OpenTurn() string {
	if _, turns := s.Pending(); len(turns) > 0 {
		return turns[0]
	}
	return ""
}

// OpenCalls is the calls started and not finished, in the order started.
func (s *State) OpenCalls() []string {
	var out []string
	for _, id := range s.callOrder {
		if s.calls[id] {
			out = append(out, id)
		}
	}
	return out
}
