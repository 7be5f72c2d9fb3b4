package execjson

import (
	"encoding/json"
	"io"
	"sync"
	"unicode/utf8"
)

// OutputEvent is one chunk of a streamed call's output: `sbx exec` with
// "stream": true prints these as NDJSON while the command runs, then one
// StreamResult line.
type OutputEvent struct {
	Event  string `json:"event"`  // "output"
	Stream string `json:"stream"` // "stdout" or "stderr"
	// Data is the chunk when it is valid UTF-8, else DataBase64 is (a
	// multi-byte character split between two reads makes both chunks so).
	Data       string `json:"data,omitempty"`
	DataBase64 []byte `json:"data_base64,omitempty"`
	// CallID echoes the request's call_id, so that events of concurrent
	// calls read from one place can be told apart.
	CallID string `json:"call_id,omitempty"`
}

// StreamResult is the last line of a streamed call: the result without the
// output, which went out in the events.
type StreamResult struct {
	Event string `json:"event"` // "result"
	Result
}

// EventSink receives the output events of a streamed call, one at a time
// (calls are serialised). `sbx exec` writes each as a line; the server
// sends each as a notification.
type EventSink func(OutputEvent) error

// LineSink is the EventSink of `sbx exec`: one compact JSON line per event.
func LineSink(out io.Writer) EventSink {
	return func(ev OutputEvent) error {
		b, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		_, err = out.Write(append(b, '\n'))
		return err
	}
}

// eventWriter turns each write into one output event. Nothing is
// buffered: memory stays bounded however much the command prints.
type eventWriter struct {
	mu     *sync.Mutex // shared by both streams: one event at a time
	sink   EventSink
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
	ev := OutputEvent{Event: "output", Stream: w.stream, CallID: w.callID}
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
