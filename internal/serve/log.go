package serve

import (
	"errors"
	"sync"

	"github.com/sbx-sandbox/sbx/internal/journal"
)

// Log is where a session's records go. Append returns once the record is
// durable (journal.Writer fsyncs): the server appends a record before it
// acts on or acknowledges what the record says, and an Append error stops
// that action (fail closed).
type Log interface {
	Append(rec journal.Record) error
}

// QueueLog is a Log that can take a record's place in the order at once
// and make it durable in the background (journal.Writer.Queue): the
// server then overlaps the fsync with work that only prepares the
// record's effect, and waits for durable before it acts.
type QueueLog interface {
	Log
	Queue(rec journal.Record) (durable func() error, err error)
}

// LaterLog is a Log that can take a record written after the fact
// (call/finished) without waiting for it to be durable
// (journal.Writer.Later): the answer then does not wait for an fsync. A
// crash before the next group commit loses the record; Restore finishes
// such a call "lost". No record that gates an effect goes this way.
type LaterLog interface {
	Log
	Later(rec journal.Record) error
}

// Flush makes every session's records durable, the call/finished records
// a LaterLog holds for its next group commit among them: sbx serve calls
// it before it exits, so that only a crash loses one.
func (s *Server) Flush() error {
	s.mu.Lock()
	var logs []Log
	for _, sess := range s.sessions {
		logs = append(logs, sess.log)
	}
	s.mu.Unlock()
	var errs []error
	for _, l := range logs {
		if f, ok := l.(interface{ Flush() error }); ok {
			errs = append(errs, f.Flush())
		}
	}
	return errors.Join(errs...)
}

// OpenLog opens the log of one session (journal.Open(dir, id) for the
// durable one). It is called once per session, at session/open.
type OpenLog func(sessionID string) (Log, error)

// MemLog keeps records in memory: for tests, and for a server run without
// a state directory (nothing survives it). It is safe for concurrent use.
type MemLog struct {
	mu      sync.Mutex
	records []journal.Record
	// Fail, when set, is returned by Append instead of keeping the record
	// (a full disk, in tests).
	Fail error
}

// Append keeps rec.
func (l *MemLog) Append(rec journal.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.Fail != nil {
		return l.Fail
	}
	l.records = append(l.records, rec)
	return nil
}

// Records returns a copy of what was appended, in order.
func (l *MemLog) Records() []journal.Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]journal.Record(nil), l.records...)
}

// MemLogs is an OpenLog that keeps every session's log in memory.
type MemLogs struct {
	mu   sync.Mutex
	logs map[string]*MemLog
}

// Open returns the session's MemLog, made on first use.
func (m *MemLogs) Open(sessionID string) (Log, error) { return m.Get(sessionID), nil }

// Get returns the session's MemLog.
func (m *MemLogs) Get(sessionID string) *MemLog {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.logs == nil {
		m.logs = map[string]*MemLog{}
	}
	l := m.logs[sessionID]
	if l == nil {
		l = &MemLog{}
		m.logs[sessionID] = l
	}
	return l
}
