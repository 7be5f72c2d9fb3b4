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
