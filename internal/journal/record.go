package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// Record is one entry of a session's log: what happened (Type), to which
// session, when, and the facts of it (Data, a JSON object whose shape
// is the payload type of Type, declared in vocab.go; Decode reads it).
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

// encodeRecord is rec's payload and back, the record replay decodes from
// it. What is written is what replay reads back: payload passes the strict
// rules replay decodes by (strictjson.Check: a duplicate key in Data
// would stop replay of the session), and back is rec as the payload holds
// it (Data compacted, Time at its encoded precision and zone) without a
// decode. The payload is json.Marshal(rec)'s bytes, written field by field
// so that Data is compacted once; TestEncodeRecordAsReplay holds both to
// encoding/json and strictjson.Decode.
func encodeRecord(rec Record) (payload []byte, back Record, err error) {
	// json.Marshal would write U+FFFD for invalid UTF-8: strings are exact,
	// and a record must not be logged as other than it was given.
	if !utf8.ValidString(rec.Type) || !utf8.ValidString(rec.SessionID) {
		return nil, Record{}, errors.New("type or session_id is not valid UTF-8")
	}
	back = rec
	back.Data = nil // replay's, when the payload has no "data"
	if len(rec.Data) > 0 {
		// json.Marshal compacts a RawMessage (and escapes <, >, &): the
		// payload holds this form, and replay returns it.
		if back.Data, err = json.Marshal(rec.Data); err != nil {
			return nil, Record{}, err
		}
	}
	typ, err := json.Marshal(rec.Type)
	if err != nil {
		return nil, Record{}, err
	}
	session, err := json.Marshal(rec.SessionID)
	if err != nil {
		return nil, Record{}, err
	}
	when, err := rec.Time.MarshalJSON()
	if err != nil {
		return nil, Record{}, err
	}
	payload = make([]byte, 0, len(back.Data)+len(typ)+len(session)+len(when)+64)
	payload = append(append(payload, `{"type":`...), typ...)
	payload = append(append(payload, `,"session_id":`...), session...)
	payload = append(append(payload, `,"time":`...), when...)
	if len(back.Data) > 0 {
		payload = append(append(payload, `,"data":`...), back.Data...)
	}
	payload = append(strconv.AppendUint(append(payload, `,"seq":`...), rec.Seq, 10), '}')
	if err := strictjson.Check(payload, &back); err != nil {
		return nil, Record{}, err
	}
	// time.Time's JSON is RFC 3339 with nanoseconds; its decode is
	// time.Parse of that text (UTC for "Z", else the zone of the offset).
	if err := back.Time.UnmarshalJSON(when); err != nil {
		return nil, Record{}, err
	}
	return payload, back, nil
}
