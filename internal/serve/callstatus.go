package serve

import (
	"encoding/json"
	"errors"

	"github.com/sbx-sandbox/sbx/internal/journal"
)

// call/status {session_id, call_id}: what became of a call of the
// session, for a client that lost its answer (a dropped connection, a
// restarted server, a request timeout). From the live table while the
// call is in flight, and the session's durable log:
//
//   - running: in flight on this server, its end not yet written;
//   - finished: its call/finished record says how (outcome, exit_code,
//     error), lost among them: a restarted server records a call lost
//     when its end was never written (Restore), and the status says so;
//   - started: call/started is in the log and not its end, and it is not
//     in flight (no server should leave one so: ask again);
//   - unknown: the session has no call of that id.

type callStatusParams struct {
	SessionID string `json:"session_id"`
	CallID    string `json:"call_id"`
}

type callStatusResult struct {
	SessionID string `json:"session_id"`
	CallID    string `json:"call_id"`
	// Status is running, finished, lost, started or unknown.
	Status   string `json:"status"`
	Outcome  string `json:"outcome,omitempty"`
	ExitCode *int   `json:"exit_code,omitempty"`
	Error    string `json:"error,omitempty"`
}

// recordsLog is a Log that can read its records back: MemLog, and
// journal.Writer (from disk).
type recordsLog interface {
	Records() ([]journal.Record, error)
}

func (s *Server) callStatus(params json.RawMessage) (any, *Error) {
	var p callStatusParams
	sess, e := s.decodeSession(params, &p, &p.SessionID)
	if e != nil {
		return nil, e
	}
	if p.CallID == "" {
		return nil, required("call_id")
	}
	res := callStatusResult{SessionID: sess.id, CallID: p.CallID, Status: "unknown"}
	s.mu.Lock()
	rc := s.calls[p.CallID]
	s.mu.Unlock()
	var recs []journal.Record
	var err error
	switch l := sess.log.(type) {
	case *MemLog:
		recs = l.Records()
	case recordsLog:
		recs, err = l.Records()
	default:
		err = errors.New("this session's log cannot be read back")
	}
	if err != nil {
		return nil, asError(err)
	}
	c := journal.FindCall(recs, p.CallID)
	if f := c.Finished; f != nil {
		res.Status, res.Outcome, res.ExitCode, res.Error = "finished", f.Outcome, f.ExitCode, f.Error
		if f.Outcome == journal.OutcomeLost {
			res.Status = "lost"
		}
	}
	if c.Started {
		// Started again after an end: the end's facts stay, as they are
		// the last the log has of the call id.
		res.Status = "started"
	}
	// The table was read before the log: a call unregisters once its
	// records are written, so a call out of the table has its end in the
	// log, and one still in it whose end is written is finished.
	if res.Status != "finished" && res.Status != "lost" && rc != nil && rc.sess == sess {
		res.Status = "running"
	}
	return res, nil
}
