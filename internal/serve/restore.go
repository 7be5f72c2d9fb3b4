package serve

import (
	"errors"
	"fmt"

	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/journal"
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
		sess, st, err := s.replay(js)
		if err == nil && st.Closed() {
			s.mu.Lock()
			s.closed[sess.id] = true
			s.mu.Unlock()
			continue
		}
		if err == nil {
			err = s.settle(sess, st)
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

// replay rebuilds the session of js: the journal's transition function
// (journal.State.Apply) decides what each record does, and any record it
// finds fault with, by the log's rules or the server's, refuses the
// session. The state is returned for settle: what the log leaves open.
func (s *Server) replay(js journal.Session) (*session, *journal.State, error) {
	if len(js.Records) == 0 {
		return nil, nil, errors.New("the log does not begin with session/opened")
	}
	st := journal.NewState(js.ID)
	for i, rec := range js.Records {
		if err := st.Apply(rec); err != nil {
			return nil, nil, fmt.Errorf("record %d (%s): %w", i, rec.Type, err)
		}
	}
	o := st.Opened
	sess := &session{id: o.SessionID, cwd: o.Cwd, environmentID: o.EnvironmentID, mode: st.Mode, policy: st.Policy,
		explicitMode: st.ExplicitMode, lastPreset: st.Preset, guard: o.Guard, parent: o.ParentSessionID,
		acpSessionID: o.ACPSessionID, grants: st.Grants}
	if id := st.OpenTurn(); id != "" {
		sess.turn = &turn{id: id}
	}
	if st.Closed() {
		// Nothing to serve, nothing to append to.
		return sess, st, nil
	}
	log, err := s.opt.OpenLog(sess.id)
	if err != nil {
		return nil, nil, fmt.Errorf("open the log: %w", err)
	}
	sess.log = log
	return sess, st, nil
}

// settle records the end of what the dead server left open (st, the
// state its log left), each on the log before the session is served.
func (s *Server) settle(sess *session, st *journal.State) error {
	approvals, _ := st.Pending()
	for _, id := range approvals {
		if err := sess.append(RecApprovalDecided, decidedRecord{ApprovalID: id, Outcome: string(escalate.Cancelled)}); err != nil {
			return err
		}
	}
	for _, id := range st.OpenCalls() {
		if err := sess.append(RecCallFinished, callFinishedRecord{CallID: id, Outcome: journal.OutcomeLost, Error: "the server ended while the call ran, or before the call's end was written"}); err != nil {
			return err
		}
	}
	if sess.turn != nil {
		if err := sess.append(RecTurnEnded, turnEndedRecord{TurnID: sess.turn.id}); err != nil {
			return err
		}
		sess.endTurnLocked()
	}
	return nil
}

// endTurnLocked closes the open turn: its grants end (journal.EndTurn, as
// a replay of turn/ended does), its pending approvals settle cancelled
// (turn.cancel). sess.mu is held.
func (sess *session) endTurnLocked() {
	t := sess.turn
	sess.turn = nil
	journal.EndTurn(sess.grants, t.id)
	if t.cancel != nil {
		t.cancel()
	}
}
