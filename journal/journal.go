// Package journal is the durable, append-only log of sbx serve's sessions.
//
// IMPORTANT: this is a stub with only the agreed record shape, so that
// package serve compiles on its branch; the journal branch has the real
// package (framing, fsync, replay) and replaces this file at merge.
package journal

import (
	"encoding/json"
	"time"
)

// Record is one entry of a session's log.
type Record struct {
	Type      string
	SessionID string
	Time      time.Time
	Data      json.RawMessage
}

// Session is one session's records as replayed.
type Session struct {
	ID      string
	Records []Record
}
