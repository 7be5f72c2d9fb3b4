package serve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// DefaultMaxMessage bounds one message (one line) in either direction of
// the wire; sbx serve --max-message changes it.
const DefaultMaxMessage = 64 << 20

// message is one JSON-RPC 2.0 object as read: a request (id and method),
// a notification (method, no id) or, later, a response to a request of the
// server's (id, result or error).
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  *string         `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

// response is what the server writes for a request.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// notification is what the server writes unasked (exec/output).
type notification struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  any    `json:"params"`
}

// errTooLarge is a line longer than the limit; it was skipped, not read.
var errTooLarge = errors.New("message too large")

// lineReader reads one line at a time, refusing a line over max bytes
// without holding more than max of it: the rest is read and dropped up to
// its newline, so the connection goes on with the next message.
type lineReader struct {
	r   *bufio.Reader
	max int
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line without its newline. A last line without a
// newline counts; io.EOF comes after it.
func (l *lineReader) next() ([]byte, error) {
	var line []byte
	for {
		chunk, err := l.r.ReadSlice('\n')
		if len(line)+len(chunk) > l.max+1 { // +1: the newline itself
			if errors.Is(err, bufio.ErrBufferFull) {
				if derr := l.discard(); derr != nil {
					return nil, derr
				}
			}
			return nil, errTooLarge
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r")), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return line, nil
		default:
			return nil, err
		}
	}
}

// discard drops the rest of the current line.
func (l *lineReader) discard() error {
	for {
		_, err := l.r.ReadSlice('\n')
		if !errors.Is(err, bufio.ErrBufferFull) {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// lineWriter writes messages, one line each, one at a time.
type lineWriter struct {
	mu  sync.Mutex
	w   io.Writer
	max int
	err error // the first write error: the connection is gone
}

func (w *lineWriter) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode message: %w", err)
	}
	if len(b) > w.max {
		return fmt.Errorf("%w: %d bytes, the limit is %d", errTooLarge, len(b), w.max)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if _, err := w.w.Write(append(b, '\n')); err != nil {
		w.err = err
	}
	return w.err
}
