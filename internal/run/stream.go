package run

import (
	"sync"
	"unicode/utf8"

	"github.com/sbx-sandbox/sbx/internal/wire"
)

// eventWriter turns each write into one output event. Nothing is
// buffered: memory stays bounded however much the command prints.
type eventWriter struct {
	mu     *sync.Mutex // shared by both streams: one event at a time
	sink   wire.EventSink
	stream string
	callID string
	// limit caps the bytes streamed (0: no cap); beyond it output is
	// dropped and the result says truncated.
	limit, written int64
	truncated      bool
}

func (w *eventWriter) Write(p []byte) (int, error) {
	n := len(p)
	if w.limit > 0 {
		room := w.limit - w.written
		if int64(len(p)) > room {
			p, w.truncated = p[:max(room, 0)], true
		}
	}
	if len(p) == 0 {
		return n, nil
	}
	w.written += int64(len(p))
	ev := wire.OutputEvent{Event: "output", Stream: w.stream, CallID: w.callID}
	if utf8.Valid(p) {
		ev.Data = string(p)
	} else {
		ev.DataBase64 = p
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.sink(ev); err != nil {
		return 0, err
	}
	return n, nil
}
