package main

import (
	"encoding/json"
	"io"
	"sync"
	"unicode/utf8"

	"github.com/sbx-sandbox/sbx/enforce/host"
)

// outputEvent is one chunk of a streamed call's output: `sbx exec` with
// "stream": true prints these as NDJSON while the command runs, then one
// streamResult line.
type outputEvent struct {
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

// streamResult is the last line of a streamed call: the result without the
// output, which went out in the events.
type streamResult struct {
	Event string `json:"event"` // "result"
	execResult
}

// eventWriter turns each write into one output event. Nothing is
// buffered: memory stays bounded however much the command prints.
type eventWriter struct {
	mu     *sync.Mutex // shared by both streams: one line at a time
	out    io.Writer
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
	ev := outputEvent{Event: "output", Stream: w.stream, CallID: w.callID}
	if utf8.Valid(p) {
		ev.Data = string(p)
	} else {
		ev.DataBase64 = p
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return 0, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.out.Write(append(b, '\n')); err != nil {
		return 0, err
	}
	return n, nil
}

// streamCall runs call with its output streamed to out as events, each
// with callID.
func streamCall(call host.Call, maxOutput int, in execInput, out io.Writer, callID string) (execResult, error) {
	var mu sync.Mutex
	stdout := &eventWriter{mu: &mu, out: out, stream: "stdout", callID: callID, limit: int64(maxOutput)}
	stderr := &eventWriter{mu: &mu, out: out, stream: "stderr", callID: callID, limit: int64(maxOutput)}
	rep, err := execCall(call, stdout, stderr, in)
	return execResult{callReport: callReport{Report: rep}, StdoutTruncated: stdout.truncated, StderrTruncated: stderr.truncated}, err
}

// writeJSONLine writes v as one compact line.
func writeJSONLine(w io.Writer, v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return writeJSON(w, v)
	}
	w.Write(append(b, '\n'))
	return 0
}
