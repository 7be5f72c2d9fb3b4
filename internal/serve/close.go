package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/sbx-sandbox/sbx/internal/journal"
)

// closeSession is session/close {session_id}: the session ends for good.
// From the request on, the session is unknown to every method (lookup
// refuses a session being closed), its running calls are cancelled as a
// client disconnect cancels them (their pending approvals settle
// cancelled, each recorded, and the clients asked get $/cancelRequest),
// and once they have finished and their records are written, its open
// turn is ended and session/closed is recorded. The result, null, comes
// after that: the log holds the close when the client reads it.
//
// The wait runs off the connection's reader, as an exec does, so that
// the connection's other messages are still read meanwhile.
func (c *conn) closeSession(_ context.Context, params json.RawMessage, r *replier) error {
	var p sessionParams
	if e := decodeParams(params, &p); e != nil {
		return e
	}
	sess, calls, e := c.srv.beginClose(p.SessionID)
	if e != nil {
		return e
	}
	for _, rc := range calls {
		rc.cancel()
	}
	r.later(func() {
		for _, rc := range calls {
			<-rc.done
		}
		if e := c.srv.finishClose(sess); e != nil {
			r.reply(nil, e)
			return
		}
		r.reply(nil, nil)
	})
	return nil
}

// beginClose marks the session closing and returns its running calls.
// Under s.mu, as exec's register: a call registers before (and is
// returned here) or is refused.
func (s *Server) beginClose(id string) (*session, []*runningCall, *Error) {
	sess, e := s.lookup(id)
	if e != nil {
		return nil, nil, e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess.closing {
		// Another session/close took it meanwhile.
		return nil, nil, unknownSession(id)
	}
	sess.closing = true
	var calls []*runningCall
	for _, rc := range s.calls {
		if rc.sess == sess {
			calls = append(calls, rc)
		}
	}
	return sess, calls, nil
}

// finishClose records the end of the open turn and session/closed, then
// forgets the session. Should a record fail, the session stays open
// (closing is undone: what is recorded is what happened, a turn ended at
// most) and the error says so.
func (s *Server) finishClose(sess *session) *Error {
	sess.logMu.Lock()
	err := sess.closeLocked()
	sess.logMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		sess.closing = false
		return asError(fmt.Errorf("session/close %s: %w", sess.id, err))
	}
	delete(s.sessions, sess.id)
	s.opt.Metrics.session(-1) // metrics: sessions open
	s.closed[sess.id] = true
	s.changed.fire()
	return nil
}

// closeLocked ends the open turn and records session/closed; sess.logMu
// is held.
func (sess *session) closeLocked() error {
	if open := sess.st.OpenTurn(); open != "" {
		if err := sess.appendLocked(journal.TurnEnded{TurnID: open}); err != nil {
			return err
		}
	}
	return sess.appendLocked(journal.SessionClosed{})
}
