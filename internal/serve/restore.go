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
	// The session holds the very state the replay stepped: what it
	// settles and serves from here steps the same State.Apply.
	sess := &session{id: st.Opened.SessionID, st: st}
	if st.Closed() {
		// Nothing to serve, nothing to append to.
		return sess, st, nil
	}
	log, err := s.opt.OpenLog(sess.id)
	if err != nil {
		return nil, nil, fmt.Errorf("open the log: %w", err)
	}
	sess.log = log
	if id := st.OpenTurn(); id != "" {
		// The dead server's turn, settled (ended) before it is served.
		sess.turn = &turn{id: id}
		sess.turn.ctx, sess.turn.cancel = contextWithCancel()
	}
	return sess, st, nil
}

// settle records the end of what the dead server left open (st, the
// state its log left), each on the log before the session is served.
func (s *Server) settle(sess *session, st *journal.State) error {
	approvals, turns := st.Pending()
	for _, id := range approvals {
		if err := sess.append(journal.ApprovalDecided{ApprovalID: id, Outcome: string(escalate.Cancelled)}); err != nil {
			return err
		}
	}
	for _, id := range st.OpenCalls() {
		if err := sess.append(journal.CallFinished{CallID: id, Outcome: journal.OutcomeLost, Error: "the server ended while the call ran, or before the call's end was written"}); err != nil {
			return err
		}
	}
	// Its turn grants end with it (journal.EndTurn, in State.Apply).
	for _, id := range turns {
		if err := sess.append(journal.TurnEnded{TurnID: id}); err != nil {
			return err
		}
	}
	return nil
}
