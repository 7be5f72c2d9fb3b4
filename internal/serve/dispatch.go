package serve

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
)

// method is one row of the method table (methods.go): a method is added
// in one row, and Methods(), the dispatch and the admission rules are
// read from it.
//
// A method has exactly one of unary and stream, except exit, which ends
// the connection before any handler could run.
type method struct {
	name string
	// unary answers at once: its (result, error) is the reply, written by
	// the dispatcher's replier (an error as its error object: asError).
	// (A method of *conn, as a method expression: the connection comes
	// first.)
	unary func(c *conn, ctx context.Context, params json.RawMessage) (any, error)
	// stream replies itself, exactly once, through r: after notifications
	// or after a wait that runs off the connection's reader (r.later).
	// Returning an error replies it (the handler must not have replied
	// then); returning nil without a reply, or replying twice, is a bug
	// the replier reports (it logs it and answers internal once).
	stream func(c *conn, ctx context.Context, params json.RawMessage, r *replier) error
	// admit says when the method is taken (before initialize, during
	// shutdown); the zero value is after initialize and before shutdown.
	admit admission
	// needsID: a notification of it is dropped unrun (exec: without an id
	// nobody could be given the result, nor cancel it by its request id).
	needsID bool
	// exit ends the connection (the method exit).
	exit bool
}

// admission is when a method is taken.
type admission int

const (
	// admitInitialized: after initialize, and not once this connection or
	// the server is shutting down.
	admitInitialized admission = iota
	// admitAlways: before initialize and during shutdown too (initialize
	// itself, $/cancelRequest).
	admitAlways
	// admitUntilOwnShutdown: as admitInitialized, but still taken while
	// the server shuts down for another reason (a signal, another
	// connection's shutdown): the method shutdown, so that a client can
	// finish its own exit cleanly.
	admitUntilOwnShutdown
)

// onServer makes a unary handler of a Server method that needs nothing of
// the connection (the web panel calls some of them too). The *Error is
// returned as a nil error when nil, never as a typed nil in an error.
func onServer(f func(s *Server, params json.RawMessage) (any, *Error)) func(*conn, context.Context, json.RawMessage) (any, error) {
	return func(c *conn, _ context.Context, params json.RawMessage) (any, error) {
		res, e := f(c.srv, params)
		if e != nil {
			return nil, e
		}
		return res, nil
	}
}

// dispatch runs one method's handler for a request (id nil: a
// notification) and sees that it is answered exactly once.
func (c *conn) dispatch(m *method, id, params json.RawMessage) {
	if m.needsID && id == nil {
		return
	}
	r := &replier{c: c, method: m.name, id: id}
	if m.unary != nil {
		r.reply(m.unary(c, c.ctx, params))
		return
	}
	err := m.stream(c, c.ctx, params, r)
	if err != nil {
		r.reply(nil, err)
		return
	}
	r.returned()
}

// replyState is where a replier is in its one reply.
type replyState int

const (
	replyPending replyState = iota
	// replyLater: the handler handed the reply to r.later's function.
	replyLater
	replyDone
)

// errNoReply is the internal error a request gets when its handler
// returned (or its r.later function ended) without replying: a bug of
// the server, said rather than leaving the client waiting forever.
var errNoReply = errors.New("the server ended the request without a reply (a bug of sbx serve)")

// replier answers one request exactly once, as gopls's jsonrpc2 Replier
// must be called once: the first reply is written (nothing for a
// notification), a second is a handler's bug, logged and never written.
type replier struct {
	c      *conn
	method string
	id     json.RawMessage // nil: a notification, whose reply is dropped

	mu    sync.Mutex
	state replyState
}

// reply answers the request with result, or with err's error object
// (asError: an *Error as it is, a field error invalid_params, anything
// else internal). It reports whether this was the one reply.
func (r *replier) reply(result any, err error) bool {
	r.mu.Lock()
	if r.state == replyDone {
		r.mu.Unlock()
		r.c.srv.Logf("%s (id %s): a second reply, dropped (a bug of sbx serve): result %v, error %v", r.method, r.idText(), result, err)
		return false
	}
	r.state = replyDone
	r.mu.Unlock()
	if r.id == nil {
		return true
	}
	if e, ok := err.(*Error); ok && e == nil {
		// A nil *Error inside a non-nil error: no error.
		err = nil
	}
	if err != nil {
		r.c.reply(r.id, nil, asError(err))
		return true
	}
	r.c.reply(r.id, result, nil)
	return true
}

// later runs f off the connection's reader, counted in the connection's
// calls in flight (ServeConn waits for them), for a reply that waits for
// a command or for other calls. f must reply; if it returns without, the
// request is answered errNoReply and the bug logged.
//
// IMPORTANT: the check runs when f returns. An f that never returns holds
// its request unanswered, and ServeConn's end (it waits for the
// connection's calls in flight), until it does: exec's f returns once its
// command has ended or been killed, session/close's once the session's
// calls have.
func (r *replier) later(f func()) {
	r.mu.Lock()
	if r.state == replyPending {
		r.state = replyLater
	}
	r.mu.Unlock()
	r.c.wg.Add(1)
	go func() {
		defer r.c.wg.Done()
		f()
		r.ended(replyDone, "its later function returned without replying")
	}()
}

// returned is called when the handler returned: it replied, or handed
// the reply to later.
func (r *replier) returned() { r.ended(replyLater, "the handler returned without replying") }

// ended checks that the reply is at least at state want; one that is
// not is a bug, logged and answered errNoReply once.
func (r *replier) ended(want replyState, what string) {
	r.mu.Lock()
	ok := r.state >= want
	r.mu.Unlock()
	if ok {
		return
	}
	r.c.srv.Logf("%s (id %s): %s (a bug of sbx serve)", r.method, r.idText(), what)
	r.reply(nil, errNoReply)
}

func (r *replier) idText() string {
	if r.id == nil {
		return "none: a notification"
	}
	return string(r.id)
}
