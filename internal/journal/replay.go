package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// Session is one session as its log tells it: the records replay accepted,
// in order.
type Session struct {
	ID      string
	Records []Record
}

// ProblemKind says what is wrong.
type ProblemKind string

const (
	// ProblemTorn: the last frame is incomplete, as a crash in the middle of
	// an append leaves it. Never an acknowledged record: Append returns
	// only after the whole frame is on disk.
	ProblemTorn ProblemKind = "torn"
	// ProblemCorrupt: a frame's magic, version, length or checksum is bad.
	ProblemCorrupt ProblemKind = "corrupt"
	// ProblemInvalid: an intact frame whose record cannot be trusted (not
	// strict JSON, another session's, a gap in seq, an unknown type).
	ProblemInvalid ProblemKind = "invalid"
	// ProblemRejected: a record that breaks a rule of the session (an
	// approval/decided without its approval/asked, a second decided, ...).
	ProblemRejected ProblemKind = "rejected"
	// ProblemFile: a file in the directory that is not a readable log
	// (a name that is no session id, a symbolic link, a directory).
	ProblemFile ProblemKind = "file"
)

// Effect says what replay did about a problem.
type Effect string

const (
	// EffectDropped: the last record of the file was dropped; all before it
	// were read.
	EffectDropped Effect = "dropped"
	// EffectStopped: replay of the session stopped here; nothing at or after
	// Offset was applied, though more bytes follow.
	EffectStopped Effect = "stopped"
	// EffectRejected: this record was not applied; replay went on.
	EffectRejected Effect = "rejected"
	// EffectSkipped: the file was not read.
	EffectSkipped Effect = "skipped"
)

// Problem is something replay dropped or rejected: in which file, at which
// byte offset (of the frame), why, and what it did about it.
type Problem struct {
	File      string      `json:"file"`
	SessionID string      `json:"session_id,omitempty"`
	Offset    int64       `json:"offset"`
	Seq       uint64      `json:"seq,omitempty"`
	Kind      ProblemKind `json:"kind"`
	Effect    Effect      `json:"effect"`
	Reason    string      `json:"reason"`
}

func (p Problem) String() string {
	var effect string
	switch p.Effect {
	case EffectDropped:
		effect = "the last record is dropped"
	case EffectStopped:
		effect = "replay of this session stops here"
	case EffectRejected:
		effect = "the record is rejected, replay goes on"
	case EffectSkipped:
		effect = "the file is skipped"
	}
	seq := ""
	if p.Seq != 0 {
		seq = fmt.Sprintf(" (seq %d)", p.Seq)
	}
	return fmt.Sprintf("%s: offset %d%s: %s: %s; %s", p.File, p.Offset, seq, p.Kind, p.Reason, effect)
}

// Replay reads every log in dir (the files SESSION_ID.log; other names are
// not journal's and are left alone) and returns its sessions, in file name
// order, with what it dropped or rejected. A file whose records are all
// dropped yields no Session. The error is for a directory or file that
// cannot be read at all (a dir that does not exist included: match it with
// errors.Is(err, fs.ErrNotExist)); problems of content are Problems.
//
// Replay only reads. To append to a session again, Open it: that also cuts
// a dropped tail off, so that new records do not follow a torn one.
func Replay(dir string) ([]Session, []Problem, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("journal: replay: %w", err)
	}
	var sessions []Session
	var problems []Problem
	for _, e := range entries {
		name := e.Name()
		id, ok := strings.CutSuffix(name, logSuffix)
		if !ok {
			continue
		}
		path := filepath.Join(dir, name)
		if err := ValidateSessionID(id); err != nil {
			problems = append(problems, Problem{File: path, Kind: ProblemFile, Effect: EffectSkipped, Reason: err.Error()})
			continue
		}
		if !e.Type().IsRegular() {
			problems = append(problems, Problem{File: path, SessionID: id, Kind: ProblemFile, Effect: EffectSkipped, Reason: fmt.Sprintf("not a regular file (%s)", e.Type())})
			continue
		}
		data, err := readLog(path)
		if err != nil {
			return nil, nil, fmt.Errorf("journal: replay: %w", err)
		}
		r := replayData(path, id, data)
		problems = append(problems, r.problems...)
		if len(r.session.Records) > 0 {
			sessions = append(sessions, r.session)
		}
	}
	return sessions, problems, nil
}

// readLog reads a log file without following a symbolic link planted in
// its place after the directory was listed.
func readLog(path string) ([]byte, error) {
	f, err := openNoFollow(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("not a regular file (%s)", st.Mode().Type())}
	}
	data := make([]byte, st.Size())
	n, err := f.ReadAt(data, 0)
	if err != nil && n != len(data) {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return data, nil
}

// fileReplay is the replay of one log.
type fileReplay struct {
	session  Session
	problems []Problem
	state    *State
	// end is where the frames that were read end: the size the file would
	// have without a dropped tail.
	end int64
	// stopped says a problem stopped the replay before the end of the file.
	stopped bool
}

// replayData replays the log data of session id, read from file.
func replayData(file, id string, data []byte) fileReplay {
	r := fileReplay{session: Session{ID: id}, state: NewState(id)}
	frames, fe := scanFrames(data)
	problem := func(off int64, seq uint64, kind ProblemKind, effect Effect, reason string) {
		r.problems = append(r.problems, Problem{File: file, SessionID: id, Offset: off, Seq: seq, Kind: kind, Effect: effect, Reason: reason})
	}
	for _, f := range frames {
		var rec Record
		if err := strictjson.Decode(f.payload, &rec); err != nil {
			r.stopped = true
			problem(f.off, 0, ProblemInvalid, EffectStopped, fmt.Sprintf("record: %v; %d bytes from here not read", err, int64(len(data))-f.off))
			return r
		}
		var rerr *ruleError
		if rerr = r.state.place(rec); rerr == nil {
			errors.As(r.state.Apply(rec), &rerr)
		}
		switch {
		case rerr != nil && rerr.level == levelStop:
			r.stopped = true
			problem(f.off, rec.Seq, ProblemInvalid, EffectStopped, fmt.Sprintf("%s; %d bytes from here not read", rerr.reason, int64(len(data))-f.off))
			return r
		case rerr != nil && rerr.level == levelReject:
			problem(f.off, rec.Seq, ProblemRejected, EffectRejected, rerr.reason)
		default:
			// Accepted, a record only a server would refuse included: the
			// log holds it, and Restore says what it makes of it.
			r.session.Records = append(r.session.Records, rec)
		}
		r.end = f.off + int64(headerSize+len(f.payload))
	}
	if fe != nil {
		if fe.tail {
			problem(fe.off, 0, fe.kind, EffectDropped, fmt.Sprintf("%s (the last %d bytes of the file)", fe.reason, int64(len(data))-fe.off))
		} else {
			r.stopped = true
			problem(fe.off, 0, fe.kind, EffectStopped, fmt.Sprintf("%s; %d bytes from here not read", fe.reason, int64(len(data))-fe.off))
		}
	}
	return r
}

// Pending is what the records of s leave open: the approvals asked and not
// decided, and the turns begun and not ended, each in the order they came.
func Pending(s Session) (approvals, turns []string) {
	return sessionState(s).Pending()
}

// Settle returns the records a server appends to s when it restarts, so
// that nothing stays open across the restart: for each pending approval an
// approval/decided with outcome cancelled (no answer can arrive for it any
// more; the call it was for never ran), then for each open turn a
// turn/ended (its turn grants end with it). Append them in order, with the
// Writer of the session, before serving it again; the records come with
// Type, SessionID and Data set (Append adds Seq and Time). Settle of a
// settled session is empty.
func Settle(s Session) []Record {
	approvals, turns := Pending(s)
	var out []Record
	for _, id := range approvals {
		out = append(out, settleRecord(s.ID, ApprovalDecided{ApprovalID: id, Outcome: string(settledOutcome)}))
	}
	for _, id := range turns {
		out = append(out, settleRecord(s.ID, TurnEnded{TurnID: id}))
	}
	return out
}

// sessionState steps a State over records replay accepted already.
func sessionState(s Session) *State {
	st := NewState(s.ID)
	for _, rec := range s.Records {
		// Rejected records are not in s.Records: their Seqs are gaps here.
		st.next = rec.Seq
		_ = st.Apply(rec) // replay accepted it: at worst a server's rule fails
	}
	return st
}

// settledOutcome is the outcome Settle gives a pending approval.
const settledOutcome = escalate.Cancelled

// settleRecord is the record of p for session, without Seq and Time.
func settleRecord(session string, p Payload) Record {
	b, _ := json.Marshal(p) // strings only: it cannot fail
	return Record{Type: p.RecordType(), SessionID: session, Data: b}
}
