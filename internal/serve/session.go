package serve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/sbx-sandbox/sbx/internal/journal"
	"github.com/sbx-sandbox/sbx/internal/profiles"
)

// session is one open session. Its state (the facts pinned at open, the
// knobs and preset, the open turn, the grants, the approvals and calls, the
// close) is a journal.State, and it changes only as a replay of its log
// changes it: a handler builds a record's payload, and commit checks it
// (State.Check), writes it, then steps State.Apply with it, the one
// transition function a restarted server (Restore) rebuilds the session
// with. So the live state and the restored one cannot diverge
// (TestLiveStateIsRestored).
//
// Two locks: logMu is the writer's (the records' order is the order of
// their effects, and st changes only under it), mu the readers' (st is
// changed under both, so a reader holding mu is not held up by a write's
// fsync). Order: logMu, then mu.
type session struct {
	id  string
	log Log

	logMu sync.Mutex

	mu sync.Mutex
	st *journal.State
	// turn is the running side of the open turn (st.OpenTurn): its
	// context, made when turn/begun is applied and cancelled when
	// turn/ended is (applied).
	turn *turn
	// closing is set (under the server's mu) when session/close begins:
	// lookup and exec's register refuse the session from then on.
	closing bool
}

// goneLocked is unknown_session once the session is closed; sess.mu or
// sess.logMu is held. Every method that looked the session up and then
// acts on it under the lock asks, so that nothing follows session/closed
// in the log.
func (s *session) goneLocked() *Error {
	if s.st.Closed() {
		return unknownSession(s.id)
	}
	return nil
}

// turn is the session's open turn. ctx ends with it: approvals still
// pending then settle cancelled.
type turn struct {
	id     string
	ctx    context.Context
	cancel context.CancelFunc
}

// opened is the facts pinned at open (session/opened's data): they never
// change after it.
func (s *session) opened() journal.SessionOpened {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.Opened
}

// childLocked reports whether the session is a delegated child (its approval
// policy is pinned to never); sess.mu or sess.logMu is held.
func (s *session) childLocked() bool { return s.st.Opened.ParentSessionID != "" }

// append makes p's record durable and steps the state with it; it returns
// once Log.Append did.
func (s *session) append(p journal.Payload) error {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	return s.appendLocked(p)
}

// appendLocked is append with sess.logMu held: a handler that decides what
// to record from the state holds it from its reading to its writing.
func (s *session) appendLocked(p journal.Payload) error {
	return s.commitLocked(p, s.log.Append)
}

// commitLocked is the one way the session's state changes: p's record is
// checked against the state (refused, nothing written, when the state,
// and so a restarted server, would not take it), handed to put (an
// Append, or a Queue or Later that takes its place in the log's order
// now), then applied (State.Apply), in the log's order since logMu is
// held throughout.
func (s *session) commitLocked(p journal.Payload, put func(journal.Record) error) error {
	rec, err := journal.NewRecord(s.id, p)
	if err != nil {
		return err
	}
	judged, err := s.st.Check(rec)
	if err != nil {
		return fmt.Errorf("log %s: %w", rec.Type, err)
	}
	if err := put(rec); err != nil {
		return fmt.Errorf("log %s: %w", rec.Type, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := judged.Apply(); err != nil {
		// Check took it: only a bug in State gets here.
		return fmt.Errorf("apply %s: %w", rec.Type, err)
	}
	s.appliedLocked(p)
	return nil
}

// appliedLocked does what an applied record means for the session's
// running parts, which no log holds: a begun turn gets its context, an
// ended one is cancelled (its pending approvals settle cancelled). sess.mu
// is held.
func (s *session) appliedLocked(p journal.Payload) {
	switch p := p.(type) {
	case journal.TurnBegun:
		t := &turn{id: p.TurnID}
		t.ctx, t.cancel = contextWithCancel()
		s.turn = t
	case journal.TurnEnded:
		if t := s.turn; t != nil && t.id == p.TurnID {
			s.turn = nil
			t.cancel()
		}
	}
}

// later appends a record written after the fact, which gates nothing:
// it takes its place in the order now and is made durable by the next
// group commit (LaterLog), not before later returns. A Log that cannot
// (MemLog) appends it durable at once. The state is stepped when it takes
// its place: no effect waits for it.
//
// IMPORTANT: the state then says the call finished before the log has it
// on disk; a crash in between loses the record, and the restarted server
// finishes the call "lost" (docs/log.md): the one place live and restored
// state may differ, and only across a crash.
func (s *session) later(p journal.Payload) error {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	put := s.log.Append
	if l, ok := s.log.(LaterLog); ok {
		put = l.Later
	}
	return s.commitLocked(p, put)
}

// queue orders the record now, before every record appended after it, and
// returns durable, which returns once it is durable: its effect waits for
// durable, the work that only prepares it need not. A Log that cannot
// queue (QueueLog) appends it here, durable at once. The state is stepped
// when the record takes its place (the order is the log's): what it says
// (a call started) is acted on only after durable.
//
// IMPORTANT: should that fsync fail, the state holds a call/started the
// log may not: the Writer is poisoned then (every later record fails, the
// call does not run), so the session writes nothing more that could build
// on it.
func (s *session) queue(p journal.Payload) (durable func() error, err error) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	durable = func() error { return nil }
	put := s.log.Append
	if q, ok := s.log.(QueueLog); ok {
		put = func(rec journal.Record) error {
			wait, err := q.Queue(rec)
			if err != nil {
				return err
			}
			durable = func() error {
				if err := wait(); err != nil {
					return fmt.Errorf("log %s: %w", rec.Type, err)
				}
				return nil
			}
			return nil
		}
	}
	if err := s.commitLocked(p, put); err != nil {
		return nil, err
	}
	return durable, nil
}

// facts is the session's permission state as the protocol shows it.
type facts struct {
	SessionID      string                  `json:"session_id"`
	SandboxMode    profiles.Mode           `json:"sandbox_mode"`
	ApprovalPolicy profiles.ApprovalPolicy `json:"approval_policy"`
	// Preset is derived: the last choice while it matches, else the first
	// matching preset, else "custom".
	Preset string `json:"preset"`
	// NotApplying names the categories of a granular approval policy that
	// sbx records and echoes but has no prompt for (Codex's rules, skills
	// and MCP elicitations): they change nothing here.
	NotApplying []string `json:"approval_not_applying,omitempty"`
}

// factsLocked is the session's facts; s.mu is held.
func (s *session) factsLocked(table profiles.PresetTable) facts {
	st := s.st
	f := facts{SessionID: s.id, SandboxMode: st.Mode, ApprovalPolicy: st.Policy, Preset: table.Derive(st.Mode, st.Policy, st.Preset)}
	if _, ok := st.Policy.Granular(); ok {
		f.NotApplying = profiles.GranularNotApplying
	}
	return f
}

// grantsFor are the stored grants a call of environment env gets in turn
// turnID: the session's, and the turn's when they belong to that turn.
func (s *session) grantsFor(env, turnID string) profiles.Grants {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.st.Grants[env]
	if g == nil {
		return profiles.Grants{}
	}
	out := profiles.Grants{Session: g.Session}
	if g.TurnID == turnID {
		out.Turn, out.TurnStrict = g.Turn, g.TurnStrict
	}
	return out
}

// openTurn returns the open turn when it is turnID.
func (s *session) openTurn(turnID string) (*turn, *Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.openTurnLocked(turnID)
}

// openTurnLocked is openTurn with sess.mu or sess.logMu held.
func (s *session) openTurnLocked(turnID string) (*turn, *Error) {
	if e := s.goneLocked(); e != nil {
		return nil, e
	}
	open := s.st.OpenTurn()
	if open == "" || open != turnID {
		e := newError(CodeNoOpenTurn, KindNoOpenTurn, "turn %q is not the open turn of session %s", turnID, s.id)
		if open == "" {
			e.Message = fmt.Sprintf("session %s has no open turn (turn/begin first)", s.id)
		}
		e.Data.SessionID, e.Data.TurnID = s.id, turnID
		return nil, e
	}
	return s.turn, nil
}

// newID is 16 random bytes in hex; should the system's random source
// fail, a time-based id (ids name, they do not authorise).
func newID(prefix string) string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Sprintf("%st%x", prefix, time.Now().UnixNano())
	}
	return prefix + hex.EncodeToString(b[:])
}

// newestUndecided is the newest undecided asked record that match takes,
// false when there is none: the audit facts the browser panel claims by
// (WebAnswerer.Claim).
func (s *session) newestUndecided(match func(journal.ApprovalAsked) bool) (journal.ApprovalAsked, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	undecided := s.st.Undecided()
	for i := len(undecided) - 1; i >= 0; i-- {
		if match(undecided[i]) {
			return undecided[i], true
		}
	}
	return journal.ApprovalAsked{}, false
}
