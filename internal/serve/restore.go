package serve

import (
	"errors"
	"fmt"

	"github.com/sbx-sandbox/sbx/internal/journal"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// RestoreProblem is a session Restore did not rebuild, and why.
type RestoreProblem struct {
	SessionID string
	Err       error
}

// Restore rebuilds sessions from their replayed logs (journal.Replay), in
// record order: the facts pinned at open, preset intents and knob
// changes, turns, grants. A log that does not make sense (no
// session/opened first, a decided without its asked, a second decided,
// a record that does not decode) is not restored: reported, never
// guessed at. What the dead server left open is settled, each on the
// log before the session is served: a pending approval is decided
// cancelled, an open turn is ended, a call without its end is finished
// "lost" (its tree died with that server, or it had ended and its
// call/finished, which the answer does not wait for, was not yet on
// disk). A session whose log ends with
// session/closed is not rebuilt: it stays closed, and its id is not
// opened again. Restore is for a server that serves no connection yet.
func (s *Server) Restore(sessions []journal.Session) []RestoreProblem {
	var problems []RestoreProblem
	for _, js := range sessions {
		sess, err := s.replay(js)
		if err == nil && sess.replay.closed {
			s.mu.Lock()
			s.closed[sess.id] = true
			s.mu.Unlock()
			continue
		}
		if err == nil {
			err = s.settle(sess)
		}
		if err != nil {
			problems = append(problems, RestoreProblem{SessionID: js.ID, Err: err})
			continue
		}
		s.mu.Lock()
		s.sessions[sess.id] = sess
		s.opt.Metrics.session(+1) // metrics: sessions open
		s.mu.Unlock()
	}
	return problems
}

// replayState is what a replay tracks beyond the session itself.
type replayState struct {
	pending map[string]bool // approval ids asked, not decided
	decided map[string]bool
	calls   map[string]bool // call ids started, not finished
	// closed: the log ends with session/closed.
	closed bool
}

func (s *Server) replay(js journal.Session) (*session, error) {
	if len(js.Records) == 0 || js.Records[0].Type != RecSessionOpened {
		return nil, errors.New("the log does not begin with session/opened")
	}
	st := replayState{pending: map[string]bool{}, decided: map[string]bool{}, calls: map[string]bool{}}
	var sess *session
	for i, rec := range js.Records {
		if err := st.apply(&sess, rec); err != nil {
			return nil, fmt.Errorf("record %d (%s): %w", i, rec.Type, err)
		}
	}
	if sess.id != js.ID {
		return nil, fmt.Errorf("the log of %s opened session %s", js.ID, sess.id)
	}
	if st.closed {
		// Nothing to serve, nothing to append to.
		sess.replay = &st
		return sess, nil
	}
	log, err := s.opt.OpenLog(sess.id)
	if err != nil {
		return nil, fmt.Errorf("open the log: %w", err)
	}
	sess.log = log
	sess.replay = &st
	return sess, nil
}

func (st *replayState) apply(sessp **session, rec journal.Record) error {
	sess := *sessp
	if sess == nil && rec.Type != RecSessionOpened {
		return errors.New("before session/opened")
	}
	if st.closed {
		return errors.New("after session/closed")
	}
	switch rec.Type {
	case RecSessionOpened:
		if sess != nil {
			return errors.New("a second session/opened")
		}
		var r openedRecord
		if err := strictjson.Decode(rec.Data, &r); err != nil {
			return err
		}
		*sessp = &session{id: r.SessionID, cwd: r.Cwd, environmentID: r.EnvironmentID, mode: r.SandboxMode, policy: r.ApprovalPolicy,
			explicitMode: r.ExplicitMode, lastPreset: r.Preset, guard: r.Guard, parent: r.ParentSessionID,
			acpSessionID: r.ACPSessionID, grants: map[string]*envGrants{}}
	case RecPresetIntent:
		var r intentRecord
		if err := strictjson.Decode(rec.Data, &r); err != nil {
			return err
		}
		sess.lastPreset, sess.explicitMode = r.Key, true
	case RecKnobChanged:
		var r knobRecord
		if err := strictjson.Decode(rec.Data, &r); err != nil {
			return err
		}
		switch r.Knob {
		case "sandbox_mode":
			m, err := profiles.ParseMode(r.To)
			if err != nil {
				return err
			}
			sess.mode = m
		case "approval_policy":
			p, err := profiles.ParseApprovalPolicy(r.To)
			if err != nil {
				return err
			}
			sess.policy = p
		default:
			return fmt.Errorf("unknown knob %q", r.Knob)
		}
	case RecTurnBegun:
		var r turnRecord
		if err := strictjson.Decode(rec.Data, &r); err != nil {
			return err
		}
		if sess.turn != nil {
			return fmt.Errorf("turn %s begun while %s is open", r.TurnID, sess.turn.id)
		}
		sess.turn = &turn{id: r.TurnID}
	case RecTurnEnded:
		var r turnRecord
		if err := strictjson.Decode(rec.Data, &r); err != nil {
			return err
		}
		if sess.turn == nil || sess.turn.id != r.TurnID {
			return fmt.Errorf("turn %s ended but was not open", r.TurnID)
		}
		sess.endTurnLocked()
	case RecGrantApplied:
		var r grantRecord
		if err := strictjson.Decode(rec.Data, &r); err != nil {
			return err
		}
		if r.Withheld == "" && r.Scope == profiles.ScopeTurn && (sess.turn == nil || sess.turn.id != r.TurnID) {
			return fmt.Errorf("a grant of turn %s outside it", r.TurnID)
		}
		sess.applyGrantLocked(r)
	case RecApprovalAsked:
		var r askedRecord
		if err := strictjson.Decode(rec.Data, &r); err != nil {
			return err
		}
		if st.pending[r.ApprovalID] || st.decided[r.ApprovalID] {
			return fmt.Errorf("approval %s asked twice", r.ApprovalID)
		}
		st.pending[r.ApprovalID] = true
	case RecApprovalDecided:
		var r decidedRecord
		if err := strictjson.Decode(rec.Data, &r); err != nil {
			return err
		}
		switch {
		case st.decided[r.ApprovalID]:
			return fmt.Errorf("approval %s decided twice", r.ApprovalID)
		case !st.pending[r.ApprovalID]:
			return fmt.Errorf("approval %s decided without being asked", r.ApprovalID)
		}
		delete(st.pending, r.ApprovalID)
		st.decided[r.ApprovalID] = true
	case RecCallStarted:
		var r callStartedRecord
		if err := strictjson.Decode(rec.Data, &r); err != nil {
			return err
		}
		st.calls[r.CallID] = true
	case RecCallFinished:
		var r callFinishedRecord
		if err := strictjson.Decode(rec.Data, &r); err != nil {
			return err
		}
		delete(st.calls, r.CallID)
	case RecSessionClosed:
		if len(st.pending) > 0 || len(st.calls) > 0 || sess.turn != nil {
			// The server closes a session only once nothing is open.
			return errors.New("while approvals, calls or a turn are open")
		}
		st.closed = true
	default:
		return fmt.Errorf("unknown record type %q", rec.Type)
	}
	return nil
}

// settle records the end of what the dead server left open.
func (s *Server) settle(sess *session) error {
	st := sess.replay
	sess.replay = nil
	for id := range st.pending {
		if err := sess.append(RecApprovalDecided, decidedRecord{ApprovalID: id, Outcome: "cancelled"}); err != nil {
			return err
		}
	}
	for id := range st.calls {
		if err := sess.append(RecCallFinished, callFinishedRecord{CallID: id, Outcome: "lost", Error: "the server ended while the call ran, or before the call's end was written"}); err != nil {
			return err
		}
	}
	if sess.turn != nil {
		if err := sess.append(RecTurnEnded, turnRecord{TurnID: sess.turn.id}); err != nil {
			return err
		}
		sess.endTurnLocked()
	}
	return nil
}

// endTurnLocked closes the open turn: its grants end, its pending
// approvals settle cancelled (turn.cancel). sess.mu is held.
func (sess *session) endTurnLocked() {
	t := sess.turn
	sess.turn = nil
	for _, g := range sess.grants {
		if g.turnID == t.id {
			g.turn, g.turnID, g.turnStrict = profiles.Profile{}, "", false
		}
	}
	if t.cancel != nil {
		t.cancel()
	}
}
