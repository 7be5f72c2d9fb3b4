package serve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/sbx-sandbox/sbx/internal/journal"
	"github.com/sbx-sandbox/sbx/internal/profiles"
)

// session is one open session: its permission facts, pinned when it
// opened (a later change of the server's defaults does not reach it), its
// open turn and its stored grants. mu guards the state; logMu keeps the
// records in the order their effects happen.
type session struct {
	id  string
	log Log

	logMu sync.Mutex

	mu  sync.Mutex
	cwd string
	// environmentID is the default environment of the session's calls and
	// grants.
	environmentID string
	mode          profiles.Mode
	policy        profiles.ApprovalPolicy
	// explicitMode says the mode is the session's own override (a preset
	// or sandbox_mode given at open or set since), not the default: the
	// one thing a child session takes from it.
	explicitMode bool
	// lastPreset is the last preset selected, which wins the derivation
	// while it still matches.
	lastPreset string
	guard      string
	parent     string
	// acpSessionID is the ACP session the session is bound to, pinned at
	// open ("" when none).
	acpSessionID string
	turn         *turn
	// grants are the stored grants, by environment id.
	grants map[string]*envGrants
	// undecided are the session's approval/asked records not yet
	// decided, oldest first: the audit facts the browser panel claims by
	// (WebAnswerer.Claim).
	undecided []askedRecord
	// closed is set (under mu) once session/closed is durable: a request
	// that looked the session up before it may not act on it any more.
	closed bool
	// closing is set (under the server's mu) when session/close begins:
	// lookup and exec's register refuse the session from then on.
	closing bool
}

// goneLocked is unknown_session once the session is closed; sess.mu is
// held. Every method that looked the session up and then acts on it under
// sess.mu asks, so that nothing follows session/closed in the log.
func (s *session) goneLocked() *Error {
	if s.closed {
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

// child reports whether the session is a delegated child (its approval
// policy is pinned to never).
func (s *session) child() bool { return s.parent != "" }

// append makes the record durable; it returns once Log.Append did.
func (s *session) append(typ string, data journal.Payload) error {
	rec, err := record(typ, s.id, data)
	if err != nil {
		return err
	}
	s.logMu.Lock()
	defer s.logMu.Unlock()
	if err := s.log.Append(rec); err != nil {
		return fmt.Errorf("log %s: %w", typ, err)
	}
	return nil
}

// later appends a record written after the fact, which gates nothing:
// it takes its place in the order now and is made durable by the next
// group commit (LaterLog), not before later returns. A Log that cannot
// (MemLog) appends it durable at once.
func (s *session) later(typ string, data journal.Payload) error {
	rec, err := record(typ, s.id, data)
	if err != nil {
		return err
	}
	s.logMu.Lock()
	defer s.logMu.Unlock()
	l, ok := s.log.(LaterLog)
	if !ok {
		err = s.log.Append(rec)
	} else {
		err = l.Later(rec)
	}
	if err != nil {
		return fmt.Errorf("log %s: %w", typ, err)
	}
	return nil
}

// queue orders the record now, before every record appended after it, and
// returns durable, which returns once it is durable: its effect waits for
// durable, the work that only prepares it need not. A Log that cannot
// queue (QueueLog) appends it here, durable at once.
func (s *session) queue(typ string, data journal.Payload) (durable func() error, err error) {
	rec, err := record(typ, s.id, data)
	if err != nil {
		return nil, err
	}
	s.logMu.Lock()
	defer s.logMu.Unlock()
	q, ok := s.log.(QueueLog)
	if !ok {
		if err := s.log.Append(rec); err != nil {
			return nil, fmt.Errorf("log %s: %w", typ, err)
		}
		return func() error { return nil }, nil
	}
	wait, err := q.Queue(rec)
	if err != nil {
		return nil, fmt.Errorf("log %s: %w", typ, err)
	}
	return func() error {
		if err := wait(); err != nil {
			return fmt.Errorf("log %s: %w", typ, err)
		}
		return nil
	}, nil
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
	f := facts{SessionID: s.id, SandboxMode: s.mode, ApprovalPolicy: s.policy, Preset: table.Derive(s.mode, s.policy, s.lastPreset)}
	if _, ok := s.policy.Granular(); ok {
		f.NotApplying = profiles.GranularNotApplying
	}
	return f
}

// grantsFor are the stored grants a call of environment env gets in turn
// turnID: the session's, and the turn's when they belong to that turn.
func (s *session) grantsFor(env, turnID string) profiles.Grants {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.grants[env]
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
	if e := s.goneLocked(); e != nil {
		return nil, e
	}
	if s.turn == nil || s.turn.id != turnID {
		e := newError(CodeNoOpenTurn, KindNoOpenTurn, "turn %q is not the open turn of session %s", turnID, s.id)
		if s.turn == nil {
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

// noteAsked: r is durable in the log, and undecided.
func (s *session) noteAsked(r askedRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.undecided = append(s.undecided, r)
}

// noteDecided: the approval is settled (its decided record written, or
// failed: it is not answered any more either way).
func (s *session) noteDecided(approvalID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.undecided = slices.DeleteFunc(s.undecided, func(r askedRecord) bool { return r.ApprovalID == approvalID })
}

// newestUndecided is the newest undecided asked record that match takes,
// false when there is none.
func (s *session) newestUndecided(match func(askedRecord) bool) (askedRecord, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.undecided) - 1; i >= 0; i-- {
		if match(s.undecided[i]) {
			return s.undecided[i], true
		}
	}
	return askedRecord{}, false
}
