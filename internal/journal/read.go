package journal

import "fmt"

// Records reads the session's log back from disk, as Replay reads it (the
// records before the first problem that stops it), after every record
// taken so far is written (Flush): sbx serve's call/status finds there
// what became of a call that is no longer running.
func (w *Writer) Records() ([]Record, error) {
	if err := w.Flush(); err != nil {
		return nil, err
	}
	data, err := readLog(w.path)
	if err != nil {
		return nil, fmt.Errorf("journal: read %s: %w", w.path, err)
	}
	return replayData(w.path, w.id, data).session.Records, nil
}

// CallRecords is what records say of one call: its last call/finished
// (nil when none is), and whether the last of its records is a
// call/started (a call id used again after its end). Records whose data
// does not decode strictly are not the call's.
type CallRecords struct {
	Started  bool
	Finished *CallFinished
}

// FindCall reads what recs (a session's, in order) say of call id: sbx
// serve's call/status answers from it for a call no longer running.
func FindCall(recs []Record, id string) CallRecords {
	var c CallRecords
	for _, rec := range recs {
		if rec.Type != TypeCallStarted && rec.Type != TypeCallFinished {
			continue
		}
		p, err := Decode(rec)
		if err != nil {
			continue
		}
		switch p := p.(type) {
		case *CallStarted:
			if p.CallID == id {
				c.Started = true
			}
		case *CallFinished:
			if p.CallID == id {
				c.Started, c.Finished = false, p
			}
		}
	}
	return c
}
