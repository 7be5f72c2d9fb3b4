package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Record is one entry of a session's log: what happened (Type), to which
// session, when, and the facts of it (Data, a JSON object whose shape
// belongs to the server; journal reads only the keys listed at RecordType).
type Record struct {
	Type      string          `json:"type" strict:"required"`
	SessionID string          `json:"session_id" strict:"required"`
	Time      time.Time       `json:"time" strict:"required"`
	Data      json.RawMessage `json:"data,omitempty"`
	// Seq numbers a session's records 1, 2, 3, ... with no gap. Append
	// assigns it (a caller leaves it 0); replay stops at a gap or repeat,
	// which only a lost or spliced record can make.
	Seq uint64 `json:"seq" strict:"required"`
}

// The record types, a closed vocabulary: Append refuses and replay stops at
// any other. The Data keys journal itself reads (the rest are the server's):
//
//	session/opened    first record of every session, once
//	turn/begun        {"turn_id"}
//	turn/ended        {"turn_id"} of a turn begun and not yet ended
//	approval/asked    {"approval_id"}, an id not asked before in the session
//	approval/decided  {"approval_id", "outcome"} of an asked approval, once;
//	                  outcome one of allowed-once, rejected, cancelled, unavailable
//	session/closed    the last record, once nothing is pending: every asked
//	                  approval decided, every begun turn ended
const (
	TypeSessionOpened   = "session/opened"
	TypePresetIntent    = "preset/intent"
	TypeKnobChanged     = "knob/changed"
	TypeTurnBegun       = "turn/begun"
	TypeTurnEnded       = "turn/ended"
	TypeGrantApplied    = "grant/applied"
	TypeApprovalAsked   = "approval/asked"
	TypeApprovalDecided = "approval/decided"
	TypeCallStarted     = "call/started"
	TypeCallFinished    = "call/finished"
	TypeSessionClosed   = "session/closed"
)

// Types lists every record type, in the order of the constants.
var Types = []string{
	TypeSessionOpened, TypePresetIntent, TypeKnobChanged, TypeTurnBegun, TypeTurnEnded,
	TypeGrantApplied, TypeApprovalAsked, TypeApprovalDecided, TypeCallStarted, TypeCallFinished, TypeSessionClosed,
}

func knownType(t string) bool {
	for _, k := range Types {
		if k == t {
			return true
		}
	}
	return false
}

// MaxSessionIDLen bounds a session id: it becomes a file name (NAME_MAX is
// 255 on the file systems sbx runs on, and the name gets a suffix).
const MaxSessionIDLen = 128

// ErrBadSessionID matches every error of ValidateSessionID.
var ErrBadSessionID = errors.New("invalid session id")

// ValidateSessionID says whether id can name a log file: 1 to
// MaxSessionIDLen bytes of ASCII letters, digits, '.', '_' and '-', not
// starting with '.' (so no "..", no hidden file) and no path separator of
// any OS. The error names the first offending byte; it matches
// ErrBadSessionID.
func ValidateSessionID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: empty", ErrBadSessionID)
	case len(id) > MaxSessionIDLen:
		return fmt.Errorf("%w: %d bytes, at most %d", ErrBadSessionID, len(id), MaxSessionIDLen)
	case id[0] == '.':
		return fmt.Errorf("%w %q: starts with '.'", ErrBadSessionID, id)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9') || c == '.' || c == '_' || c == '-' {
			continue
		}
		return fmt.Errorf("%w %q: byte %d (%q) is not a letter, digit, '.', '_' or '-'", ErrBadSessionID, id, i, c)
	}
	return nil
}

// logSuffix ends every log file's name: SESSION_ID.log.
const logSuffix = ".log"
