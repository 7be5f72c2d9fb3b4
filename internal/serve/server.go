package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/sbx-sandbox/sbx/internal/call"
	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// ProtocolVersion is the version of the protocol (docs/serve.md). It
// changes only when a method or field changes meaning or goes away.
const ProtocolVersion = "1"

// Options configure a Server.
type Options struct {
	// Answerer answers approval questions (a Waterfall for sbx serve);
	// nil: none, so every approval is unavailable and denied.
	Answerer Answerer
	// Client is the client answerer, when the waterfall has one: the
	// connections that initialize with approvals attach to it, and the
	// responses to its approval/requested are routed to it. nil: no
	// client is asked, and every response a client sends is refused.
	Client *ClientAnswerer
	// AnswerTimeout bounds each approval's ask (0: DefaultAnswerTimeout);
	// past it the approval is unavailable, denied.
	AnswerTimeout time.Duration
	// OpenLog opens each session's log; nil keeps records in memory only.
	OpenLog OpenLog
	// Defaults is the deployment default a session opened without preset
	// or sandbox_mode gets; read at each session/open (nil: the built-in
	// table's default).
	Defaults func() profiles.Preset
	// MaxMessage bounds a message in either direction (0:
	// DefaultMaxMessage).
	MaxMessage int
	// Env is the environment the commands' environments are made from
	// (nil: os.Environ()).
	Env []string
	// Executable is the sbx binary whose __fs stage makes an fs change
	// (nil: os.Executable).
	Executable func() (string, error)
	// Version is the server's version for initialize.
	Version string
	// Capabilities is added to initialize's capabilities (sbx serve puts
	// the sbx doctor checks there).
	Capabilities map[string]any
	// Logf logs what the server does not tell a client (refused peers,
	// write errors); nil: standard error.
	Logf func(format string, args ...any)
	// Control are the server's own paths that every call it launches
	// keeps out (call.ControlPaths): sbx serve's state directory, masked,
	// and its socket's directory, read-only.
	//
	// IMPORTANT: they are mounts. Where the call gets no mount namespace
	// (no user namespaces for an unprivileged server, no CAP_SYS_ADMIN for
	// root) the report has the mask and mountns downgrades, the state
	// directory stays readable, and one inside a writable root writable
	// (the supervisor refuses the writes it sees, best effort).
	Control call.ControlPaths
	// Metrics counts calls, denials, approvals and sessions for sbx serve
	// --metrics (nil: nothing is counted).
	Metrics *Metrics
	// Hooks are for tests.
	Hooks *Hooks
}

// Hooks let a test stop a call at the points where cancellation is
// checked, to make the races deterministic. Each is called on the call's
// goroutine and may block.
type Hooks struct {
	// BeforeAsk: approval is needed, nothing is recorded or asked yet.
	BeforeAsk func(callID string)
	// Asking: approval/asked is durable, the answerer is about to be called.
	Asking func(callID string)
	// Decided: approval/decided is durable.
	Decided func(callID string, outcome escalate.Outcome)
	// Dispatching: approved and prepared, the command is about to start.
	Dispatching func(callID string)
}

// Server serves the protocol: sessions, turns, grants and exec calls. One
// Server holds the sessions of all its connections.
type Server struct {
	opt   Options
	table profiles.PresetTable

	mu       sync.Mutex
	sessions map[string]*session
	// calls are the calls in flight, by call id, across connections.
	calls map[string]*runningCall
	// closed are the ids of the sessions closed (session/close, and the
	// closed logs Restore found): an id is not opened again, for its log
	// ends with session/closed.
	closed   map[string]bool
	shutdown bool
	// asking ends at shutdown (stopAsking): every approval still pending
	// then settles cancelled, and none is asked after it.
	asking     context.Context
	stopAsking context.CancelFunc
	// changed fires when a session opens or its preset changes (the
	// browser panel's event stream).
	changed broadcast
}

// New makes a server.
func New(opt Options) *Server {
	if opt.OpenLog == nil {
		logs := &MemLogs{}
		opt.OpenLog = logs.Open
	}
	if opt.Defaults == nil {
		opt.Defaults = func() profiles.Preset { return profiles.Builtin().Default() }
	}
	if opt.MaxMessage <= 0 {
		opt.MaxMessage = DefaultMaxMessage
	}
	if opt.Env == nil {
		opt.Env = os.Environ()
	}
	if opt.Executable == nil {
		opt.Executable = os.Executable
	}
	if opt.Logf == nil {
		opt.Logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, "sbx serve: "+format+"\n", args...) }
	}
	s := &Server{opt: opt, table: profiles.Builtin(), sessions: map[string]*session{}, calls: map[string]*runningCall{}, closed: map[string]bool{}}
	s.asking, s.stopAsking = context.WithCancel(context.Background())
	return s
}

// Shutdown shuts the server down as the shutdown method does: it takes no
// more connections (ServeListener ends once the last one has) and every
// pending approval settles cancelled, each recorded by its call, and its
// request withdrawn ($/cancelRequest, ACP's $/cancel_request). Calls in
// flight go on, without approvals. sbx serve calls it on SIGTERM, SIGINT
// and SIGHUP before the connections end, so that the settling is on the
// log and the withdrawals on the wire first.
func (s *Server) Shutdown() {
	s.mu.Lock()
	s.shutdown = true
	s.mu.Unlock()
	s.stopAsking()
}

// Logf logs through the server's Options.Logf.
func (s *Server) Logf(format string, args ...any) { s.opt.Logf(format, args...) }

// ShuttingDown reports whether a client asked the server to shut down.
func (s *Server) ShuttingDown() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shutdown
}

// ErrExitWithoutShutdown is ServeConn's error for an exit that no shutdown
// came before (sbx serve then exits 1, as an LSP server does).
var ErrExitWithoutShutdown = errors.New("exit without shutdown")

// ServeConn serves one connection until the client sends exit or goes
// away (r ends). Then its running calls are killed and its pending
// approvals settle cancelled, and ServeConn returns once they finished
// and their records are written. It returns nil after exit that followed
// shutdown, ErrExitWithoutShutdown after one that did not, and io.EOF
// when the client went away.
func (s *Server) ServeConn(ctx context.Context, r io.Reader, w io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	c := &conn{srv: s, ctx: ctx, out: &lineWriter{w: w, max: s.opt.MaxMessage}, requests: map[string]*runningCall{}}
	defer func() {
		if s.opt.Client != nil {
			s.opt.Client.detach(c)
		}
		cancel()
		c.wg.Wait()
	}()
	lines := newLineReader(r, s.opt.MaxMessage)
	for {
		line, err := lines.next()
		if errors.Is(err, errTooLarge) {
			c.reply(nil, nil, newError(CodeTooLarge, KindTooLarge, "message longer than %d bytes: refused unread", s.opt.MaxMessage))
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return io.EOF
			}
			return fmt.Errorf("read: %w", err)
		}
		if len(line) == 0 {
			continue
		}
		if done, err := c.handle(line); done {
			return err
		}
	}
}

// conn is one client connection.
type conn struct {
	srv *Server
	ctx context.Context // ends when the client goes away or exits
	out *lineWriter
	wg  sync.WaitGroup // the exec calls in flight

	mu          sync.Mutex
	initialized bool
	shutdown    bool
	// grantKey is the key grants/apply's response carries the grant
	// under, fixed by the first initialize.
	grantKey profiles.GrantKey
	// requests are the exec requests in flight, by their JSON-RPC id.
	requests map[string]*runningCall
	// bound are the sessions the connection opened or named: only their
	// approvals are sent to it (ClientAnswerer).
	bound map[string]bool
}

// reply writes the response to a request (id nil: the id could not be
// read, as JSON-RPC answers a parse error). It is the one writer of
// responses: a method's goes through its replier (dispatch.go), which
// calls it once; the errors of the envelope (parse, invalid request,
// method not found, admission) come from handle itself, before any
// method runs.
func (c *conn) reply(id json.RawMessage, result any, e *Error) {
	if id == nil {
		id = json.RawMessage("null")
	}
	resp := response{JSONRPC: "2.0", ID: id}
	if e != nil {
		resp.Error = e
	} else if result == nil {
		resp.Result = json.RawMessage("null")
	} else {
		resp.Result = result
	}
	if err := c.out.send(resp); err != nil {
		c.srv.Logf("reply: %v", err)
		if errors.Is(err, errTooLarge) && e == nil {
			c.reply(id, nil, newError(CodeTooLarge, KindTooLarge, "the result is larger than the message limit: %v", err))
		}
	}
}

// notify sends a notification.
func (c *conn) notify(method string, params any) error {
	return c.out.send(notification{JSONRPC: "2.0", Method: method, Params: params})
}

// handle reads and dispatches one message. done is true once the
// connection is to end (exit).
func (c *conn) handle(line []byte) (done bool, err error) {
	var m message
	if err := strictjson.Decode(line, &m); err != nil {
		var probe any
		if json.Unmarshal(line, &probe) != nil {
			c.reply(nil, nil, newError(CodeParse, KindParse, "parse error: %v", err))
			return false, nil
		}
		if isResponse(line) {
			// A response cannot be answered with an error response.
			c.refuse(idOf(line), RefusedMalformed, err.Error())
			return false, nil
		}
		c.reply(idOf(line), nil, newError(CodeInvalidRequest, KindInvalidRequest, "invalid request: %v", err))
		return false, nil
	}
	if m.JSONRPC != "2.0" {
		c.reply(validID(m.ID), nil, newError(CodeInvalidRequest, KindInvalidRequest, `invalid request: jsonrpc must be "2.0"`))
		return false, nil
	}
	if m.Method == nil {
		// A response to a request of ours (approval/requested).
		c.response(m)
		return false, nil
	}
	if m.ID != nil && !goodID(m.ID) {
		c.reply(nil, nil, newError(CodeInvalidRequest, KindInvalidRequest, "invalid request: id must be a string, a number or null"))
		return false, nil
	}
	name := *m.Method
	meth, ok := methodIndex[name]
	if !ok {
		if m.ID != nil {
			c.reply(m.ID, nil, newError(CodeMethodNotFound, KindMethodNotFound, "method not found: %s", name))
		}
		return false, nil
	}
	if meth.exit {
		c.mu.Lock()
		shut := c.shutdown
		c.mu.Unlock()
		if !shut {
			return true, ErrExitWithoutShutdown
		}
		return true, nil
	}
	if e := c.admit(meth.admit); e != nil {
		if m.ID != nil {
			c.reply(m.ID, nil, e)
		}
		return false, nil
	}
	params := m.Params
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage("{}")
	}
	// Before the method runs: an exec's approval may be asked before its
	// handler returns, and must find the connection bound.
	c.bindNamed(params)
	c.dispatch(meth, m.ID, params)
	return false, nil
}

// bindNamed binds the connection to the open session its request's
// params name in session_id, if any (any method: a client that
// reconnects names its session with its next request, say
// session/permissions).
func (c *conn) bindNamed(params json.RawMessage) {
	var p struct {
		SessionID string `json:"session_id"`
	}
	if json.Unmarshal(params, &p) != nil || p.SessionID == "" {
		return
	}
	c.srv.mu.Lock()
	sess := c.srv.sessions[p.SessionID]
	c.srv.mu.Unlock()
	if sess != nil {
		c.bind(p.SessionID)
	}
}

// bind makes the connection one of the session's: the client answerer
// sends it the session's approvals, the pending ones at once.
func (c *conn) bind(sessionID string) {
	c.mu.Lock()
	if c.bound == nil {
		c.bound = map[string]bool{}
	}
	fresh := !c.bound[sessionID]
	c.bound[sessionID] = true
	c.mu.Unlock()
	if cl := c.srv.opt.Client; fresh && cl != nil {
		cl.bind(c, sessionID)
	}
}

// boundTo reports whether the connection is one of the session's.
func (c *conn) boundTo(sessionID string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bound[sessionID]
}

// admit refuses methods before initialize and after shutdown, as the
// method's row says (method.admit).
func (c *conn) admit(when admission) *Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case when == admitAlways:
		return nil
	case c.shutdown || c.srv.ShuttingDown() && when != admitUntilOwnShutdown:
		return newError(CodeShuttingDown, KindShuttingDown, "the server is shutting down: only exit is accepted")
	case !c.initialized:
		return newError(CodeNotInitialized, KindNotInitialized, "initialize first")
	}
	return nil
}

// idOf reads the id of an otherwise invalid request, if it has a good one.
func idOf(line []byte) json.RawMessage {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(line, &m) != nil {
		return nil
	}
	return validID(m.ID)
}

func validID(id json.RawMessage) json.RawMessage {
	if goodID(id) {
		return id
	}
	return nil
}

// goodID: JSON-RPC ids are strings, numbers or null.
func goodID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	var v any
	if json.Unmarshal(id, &v) != nil {
		return false
	}
	switch v.(type) {
	case string, float64, nil:
		return true
	}
	return false
}

// decodeParams decodes params strictly into v; errors are invalid_params
// naming the field.
func decodeParams(params json.RawMessage, v any) *Error {
	if err := strictjson.Decode(params, v); err != nil {
		var fe *strictjson.FieldError
		if errors.As(err, &fe) {
			return paramError(fe.Field, fe.Err)
		}
		return &Error{Code: CodeInvalidParams, Message: "params: " + err.Error(), Data: ErrorData{Kind: KindInvalidParams, Field: "params"}}
	}
	return nil
}

// decodeSession decodes a method's params into p and looks up the session
// they name in *id (a field of p, read after the decode).
func (s *Server) decodeSession(params json.RawMessage, p any, id *string) (*session, *Error) {
	if e := decodeParams(params, p); e != nil {
		return nil, e
	}
	return s.lookup(*id)
}

// required is the invalid_params error of a missing parameter.
func required(field string) *Error { return paramError(field, errors.New("required")) }

// lookup returns the open session id. A session being closed is unknown
// already: nothing new starts in it.
func (s *Server) lookup(id string) (*session, *Error) {
	if id == "" {
		return nil, required("session_id")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[id]
	if sess == nil || sess.closing {
		return nil, unknownSession(id)
	}
	return sess, nil
}

func unknownSession(id string) *Error {
	e := newError(CodeUnknownSession, KindUnknownSession, "unknown session %q", id)
	e.Data.SessionID = id
	return e
}

// running reports whether a call of that id is in flight.
func (s *Server) running(callID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[callID] != nil
}
