package journal

import (
	"bytes"
	"fmt"

	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// state is what the records of one session have established so far, as
// far as the rules journal checks go. Replay and the Writer share it: a
// record the Writer appends is one replay accepts.
type state struct {
	id   string
	next uint64 // Seq of the next record
	// decided maps each asked approval id to whether it was decided.
	decided map[string]bool
	asked   []string // approval ids in the order asked
	// open maps each begun turn id to whether it is still open.
	open  map[string]bool
	turns []string // turn ids in the order begun
	// closed: session/closed was accepted; no record may follow it.
	closed bool
}

func newState(id string) *state {
	return &state{id: id, next: 1, decided: map[string]bool{}, open: map[string]bool{}}
}

// ruleError is a record that breaks a rule. stop: the record cannot be
// trusted (wrong session, a gap in Seq, an unknown type), and nothing after
// it can be either. Otherwise the record is rejected: it is not applied,
// and the records after it still are.
type ruleError struct {
	stop   bool
	reason string
}

func (e *ruleError) Error() string { return e.reason }

func stopf(format string, a ...any) *ruleError {
	return &ruleError{stop: true, reason: fmt.Sprintf(format, a...)}
}

func rejectf(format string, a ...any) *ruleError {
	return &ruleError{reason: fmt.Sprintf(format, a...)}
}

// recordKeys are the Data keys journal reads. Data is decoded leniently:
// the server owns the other keys, but keys stay exact and unique.
type recordKeys struct {
	ApprovalID string `json:"approval_id"`
	Outcome    string `json:"outcome"`
	TurnID     string `json:"turn_id"`
}

// check says whether rec may come next; it changes nothing.
func (s *state) check(rec Record) (recordKeys, *ruleError) {
	var k recordKeys
	switch {
	case rec.SessionID != s.id:
		return k, stopf("session_id %q in the log of session %q", rec.SessionID, s.id)
	case rec.Seq != s.next:
		return k, stopf("seq %d where %d comes next: a record is missing or repeated", rec.Seq, s.next)
	case !knownType(rec.Type):
		return k, stopf("type %q: not a record type", rec.Type)
	case rec.Time.IsZero():
		return k, stopf("time: zero")
	case s.next == 1 && rec.Type != TypeSessionOpened:
		return k, stopf("the first record is %s, not %s", rec.Type, TypeSessionOpened)
	}
	if d := bytes.TrimSpace(rec.Data); len(d) > 0 {
		if d[0] != '{' {
			return k, rejectf("%s: data: not a JSON object", rec.Type)
		}
		if _, err := strictjson.DecodeLenient(d, &k); err != nil {
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
		if approvals, turns := s.pending(); len(approvals) > 0 || len(turns) > 0 {
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
			return k, rejectf("%s: approval %q was never asked", rec.Type, k.ApprovalID)
		case done:
			return k, rejectf("%s: approval %q was decided already", rec.Type, k.ApprovalID)
		}
		switch escalate.Outcome(k.Outcome) {
		case escalate.AllowedOnce, escalate.Rejected, escalate.Cancelled, escalate.Unavailable:
		default:
			return k, rejectf("%s: outcome %q: want allowed-once, rejected, cancelled or unavailable", rec.Type, k.Outcome)
		}
	}
	return k, nil
}

// apply records that rec (checked) was accepted.
func (s *state) apply(rec Record, k recordKeys) {
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
	case TypeSessionClosed:
		s.closed = true
	}
}

// skip records that rec (with the right Seq) was rejected: it takes its
// place in the sequence and changes nothing else.
func (s *state) skip() { s.next++ }

// pending is the approvals asked and not decided, and the turns begun and
// not ended, each in the order they came.
func (s *state) pending() (approvals, turns []string) {
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
