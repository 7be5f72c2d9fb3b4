package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
)

// Local is a client connection to a Server, speaking the protocol of
// docs/serve.md: in-process (Server.Local: served by ServeConn as a
// client on stdio or the socket is, without its bytes leaving the
// process) or to an sbx serve child's stdio (Dial). sbx mcp holds one per
// MCP session, so that every call goes through the same sessions, turns,
// grants, approvals and log as sbx serve's; nothing is bypassed.
type Local struct {
	w       io.WriteCloser
	handler LocalHandler
	// served gets the end of the serving side (nil: not waited for).
	served chan error

	mu      sync.Mutex
	next    int
	waiting map[string]chan localReply
	closed  bool
	sendMu  sync.Mutex
}

// LocalHandler answers the requests the server sends the client
// (approval/requested); its result (or error, sent as a JSON-RPC error,
// which the server reads as rejected) is the response. It runs on a
// goroutine of its own, and ctx ends when the server withdraws the request
// ($/cancelRequest) or the connection ends.
type LocalHandler func(ctx context.Context, method string, params json.RawMessage) (any, error)

type localReply struct {
	result json.RawMessage
	err    *Error
}

// Local connects an in-process client; handler may be nil (no request is
// expected: the client does not initialize with approvals). The
// connection ends with ctx or Close, as a client going away: its running
// calls are killed.
func (s *Server) Local(ctx context.Context, handler LocalHandler) *Local {
	toSrv, fromCl := io.Pipe()
	fromSrv, toCl := io.Pipe()
	l := &Local{w: fromCl, handler: handler, served: make(chan error, 1), waiting: map[string]chan localReply{}}
	go func() {
		err := s.ServeConn(ctx, toSrv, toCl)
		toCl.CloseWithError(io.EOF)
		toSrv.CloseWithError(io.EOF)
		l.served <- err
	}()
	go l.read(ctx, fromSrv)
	return l
}

// Dial is a client connection over r (the server's output) and w (its
// input), as to the stdio of an sbx serve child; Close closes w, which
// ends the server's connection.
func Dial(ctx context.Context, r io.Reader, w io.WriteCloser, handler LocalHandler) *Local {
	l := &Local{w: w, handler: handler, waiting: map[string]chan localReply{}}
	go l.read(ctx, r)
	return l
}

// Close ends the connection and waits for ServeConn to return (its calls
// killed and their records written).
func (l *Local) Close() error {
	l.w.Close()
	if l.served == nil {
		return nil
	}
	err := <-l.served
	l.served <- err
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// Call sends a request and decodes its result into result (nil: dropped).
// A JSON-RPC error comes back as *Error. ctx ending sends $/cancelRequest
// for it and goes on waiting for the response the server then sends.
func (l *Local) Call(ctx context.Context, method string, params, result any) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return errors.New("connection closed")
	}
	l.next++
	id := "local-" + strconv.Itoa(l.next)
	ch := make(chan localReply, 1)
	l.waiting[id] = ch
	l.mu.Unlock()
	if err := l.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		return err
	}
	var r localReply
	var ok bool
	select {
	case r, ok = <-ch:
	case <-ctx.Done():
		l.send(map[string]any{"jsonrpc": "2.0", "method": "$/cancelRequest", "params": map[string]any{"id": id}})
		r, ok = <-ch
	}
	if !ok {
		return errors.New("connection closed")
	}
	if r.err != nil {
		return r.err
	}
	if result != nil {
		return json.Unmarshal(r.result, result)
	}
	return nil
}

func (l *Local) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	l.sendMu.Lock()
	defer l.sendMu.Unlock()
	_, err = l.w.Write(append(b, '\n'))
	return err
}

// read routes the server's lines: responses to their callers, requests to
// the handler, $/cancelRequest to the request it withdraws.
func (l *Local) read(ctx context.Context, r io.Reader) {
	lines := newLineReader(r, 1<<30)
	asked := map[string]context.CancelFunc{}
	var askedMu sync.Mutex
	defer func() {
		l.mu.Lock()
		l.closed = true
		for id, ch := range l.waiting {
			close(ch)
			delete(l.waiting, id)
		}
		l.mu.Unlock()
		askedMu.Lock()
		for _, cancel := range asked {
			cancel()
		}
		askedMu.Unlock()
	}()
	for {
		line, err := lines.next()
		if err != nil {
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
			Error  *Error          `json:"error"`
		}
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		switch {
		case m.Method == "$/cancelRequest":
			var p struct {
				ID json.RawMessage `json:"id"`
			}
			json.Unmarshal(m.Params, &p)
			askedMu.Lock()
			if cancel := asked[string(p.ID)]; cancel != nil {
				cancel()
			}
			askedMu.Unlock()
		case m.Method != "" && m.ID != nil:
			hctx, cancel := context.WithCancel(ctx)
			key := string(m.ID)
			askedMu.Lock()
			asked[key] = cancel
			askedMu.Unlock()
			go func() {
				defer func() {
					askedMu.Lock()
					delete(asked, key)
					askedMu.Unlock()
					cancel()
				}()
				var res any
				err := fmt.Errorf("no handler for %s", m.Method)
				if l.handler != nil {
					res, err = l.handler(hctx, m.Method, m.Params)
				}
				if err != nil {
					l.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": CodeInternal, "message": err.Error()}})
					return
				}
				l.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": res})
			}()
		case m.Method == "" && m.ID != nil:
			var id string
			if json.Unmarshal(m.ID, &id) != nil {
				continue
			}
			l.mu.Lock()
			ch := l.waiting[id]
			delete(l.waiting, id)
			l.mu.Unlock()
			if ch != nil {
				ch <- localReply{result: m.Result, err: m.Error}
			}
		}
		// Notifications (exec/output, ...) are not asked for: dropped.
	}
}
