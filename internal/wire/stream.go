package wire

import (
	"encoding/json"
	"io"
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
