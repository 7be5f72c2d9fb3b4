package serve

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"

	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/journal"
	"github.com/sbx-sandbox/sbx/internal/netproxy"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

//go:embed web/panel.html web/panel.js web/panel.css
var webFiles embed.FS

// The browser panel's time bounds: a request's head and body must come
// within webReadTimeout, a response go out within webWriteTimeout, and an
// idle event stream gets a comment every webKeepalive (a gone browser is
// noticed by the failed write).
var (
	webReadTimeout  = 10 * time.Second
	webWriteTimeout = 10 * time.Second
	webKeepalive    = 15 * time.Second
)

// maxWebConns bounds the panel's connections at once (event streams
// included), and maxWebConnsPerClient those of one client (a uid, as the
// kernel's socket table says; "unknown" when it does not): one more is
// closed unread, and logged. One local client, whatever it holds, leaves
// the others most of the slots (issue 27 §6).
const (
	maxWebConns          = 64
	maxWebConnsPerClient = 16
)

// TokenHeader carries the panel's token on every /api request.
const TokenHeader = "X-Sbx-Token"

// WebAnswerer is the browser panel (sbx serve --web 127.0.0.1:PORT): a
// page on a loopback port that shows the pending approvals as cards and
// the sessions' presets, and answers them.
//
// It claims a question only while at least one panel is connected (an
// event stream is open), and then by the audit fact, as the seed's proxy
// answerer does: it looks for the newest approval/asked record of the
// question's session, tool and call that is undecided and not claimed by
// another pending item (on the board already), and claims the question
// only when that record is the question's own. A question without such a
// record (none was made durable, it is decided already, a newer ask of
// the same call is undecided, it is pending already) is not claimed:
// the waterfall passes on, and the panel never makes up an approval to
// answer.
//
// Its approvals are the client answerer's (board): one set of pending
// approvals, settled by one path, whoever answers. A click and a client's
// response racing for one approval: the first settles it, the other is
// refused as expired.
type WebAnswerer struct {
	board *ClientAnswerer
	mu    sync.Mutex
	// panels counts the open event streams.
	panels int
	// srv is the server whose sessions the panel shows (ListenWeb's).
	srv *Server
}

// NewWebAnswerer makes the panel's answerer on board, the server's client
// answerer (Options.Client), or one of its own when the waterfall has no
// client answerer (then no client is asked).
func NewWebAnswerer(board *ClientAnswerer) *WebAnswerer { return &WebAnswerer{board: board} }

// Claim: a panel is connected, and q's approval/asked record is the
// newest matching, undecided one no pending item claimed.
func (w *WebAnswerer) Claim(q Question) bool {
	w.mu.Lock()
	panels, srv := w.panels, w.srv
	w.mu.Unlock()
	if panels == 0 || srv == nil {
		return false
	}
	sess, e := srv.lookup(q.SessionID)
	if e != nil {
		return false
	}
	tool := toolName(q)
	rec, ok := sess.newestUndecided(func(r journal.ApprovalAsked) bool {
		return r.SessionID == q.SessionID && r.ToolName == tool && r.CallID == q.CallID && !w.board.isPending(RPCID(r.ApprovalID))
	})
	return ok && rec.ApprovalID == q.ApprovalID
}

// Approve puts q on the board (the panels see it, and so do the clients
// attached to it) and waits for its first answer or for ctx.
func (w *WebAnswerer) Approve(ctx context.Context, q Question) (escalate.Outcome, error) {
	return w.board.Approve(ctx, q)
}

// ParseWebAddr reads --web's address: 127.0.0.1 or [::1] and a port (0:
// any). Anything else is refused: the panel answers approvals, and only
// this machine may reach it.
func ParseWebAddr(s string) (netip.AddrPort, error) { return ParseLoopback(s, "the panel binds") }

// WebPanel is a bound panel: its listener, authority and token.
type WebPanel struct {
	w     *WebAnswerer
	srv   *Server
	l     *netproxy.Listener
	auth  string // the bound authority, "127.0.0.1:PORT"
	token string // hex of 32 random bytes
}

// ListenWeb binds the panel on addr (ParseWebAddr's) for srv's sessions
// and makes its token.
func (w *WebAnswerer) ListenWeb(srv *Server, addr netip.AddrPort) (*WebPanel, error) {
	if _, err := ParseWebAddr(addr.String()); err != nil {
		return nil, err
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("token: %w", err)
	}
	l, err := netproxy.Listen(addr)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	w.srv = srv
	w.mu.Unlock()
	return &WebPanel{w: w, srv: srv, l: l, auth: l.Addr().String(), token: hex.EncodeToString(b[:])}, nil
}

// URL is the panel's address with its token: what sbx serve prints.
func (p *WebPanel) URL() string { return "http://" + p.auth + "/?token=" + p.token }

// Authority is the bound host:port, the only Host the panel accepts.
func (p *WebPanel) Authority() string { return p.auth }

// Close stops the panel: the listener closes, open streams end.
func (p *WebPanel) Close() error { return p.l.Close() }

// Serve serves the panel until ctx ends (or the listener fails).
func (p *WebPanel) Serve(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { p.l.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	var slots webSlots
	for {
		c, err := p.l.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, os.ErrClosed) {
				return nil // ended, or closed by Close
			}
			return fmt.Errorf("web: accept: %w", err)
		}
		client := webClient(c)
		if why := slots.take(client); why != "" {
			p.srv.Logf("web: refused a connection of %s: %s", client, why)
			c.Close()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer slots.give(client)
			defer c.Close()
			done := context.AfterFunc(ctx, func() { c.Close() })
			defer done()
			p.serveConn(ctx, c)
		}()
	}
}

// webSlots counts the panel's open connections, in all and per client.
type webSlots struct {
	mu     sync.Mutex
	all    int
	client map[string]int
}

// take counts a connection of client in, or says why not.
func (s *webSlots) take(client string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.all >= maxWebConns:
		return fmt.Sprintf("%d are open", maxWebConns)
	case s.client[client] >= maxWebConnsPerClient:
		return fmt.Sprintf("%d of its are open", maxWebConnsPerClient)
	}
	if s.client == nil {
		s.client = map[string]int{}
	}
	s.all++
	s.client[client]++
	return ""
}

// give counts a connection of client out.
func (s *webSlots) give(client string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all--
	if s.client[client]--; s.client[client] == 0 {
		delete(s.client, client)
	}
}

// webClient names the client at the other end of c: "uid N", the owner of
// its socket, or "unknown" when the kernel's socket table does not say
// (then all such connections share one client's slots).
func webClient(c netproxy.Conn) string {
	local, remote, err := netproxy.Addrs(c)
	if err != nil {
		return "unknown"
	}
	uid, err := peerUID(local, remote)
	if err != nil {
		return "unknown"
	}
	return fmt.Sprintf("uid %d", uid)
}

// serveConn serves one request and closes (the event stream: until the
// browser or the server goes away).
func (p *WebPanel) serveConn(ctx context.Context, c netproxy.Conn) {
	c.SetReadDeadline(time.Now().Add(webReadTimeout))
	c.SetWriteDeadline(time.Now().Add(webWriteTimeout))
	br := bufio.NewReaderSize(c, maxRequestLine)
	req, e := readRequest(br)
	if e != nil {
		if e.status != 0 {
			p.refuse(c, nil, e)
		}
		return
	}
	if e := p.route(ctx, c, req); e != nil {
		p.refuse(c, req, e)
	}
}

// refuse answers e as {"error": {kind, message}} and logs it.
func (p *WebPanel) refuse(c netproxy.Conn, req *httpRequest, e *httpError) {
	what := "a request"
	if req != nil {
		what = req.method + " " + req.path
	}
	p.srv.Logf("web: refused %s: %d %s: %s", what, e.status, e.kind, e.msg)
	body, _ := json.Marshal(map[string]any{"error": map[string]string{"kind": e.kind, "message": e.msg}})
	writeResponse(c, e.status, "application/json", body)
}

// pageHeaders keep the page to itself: its own scripts and fetches only,
// never in a frame.
var pageHeaders = []string{"Content-Security-Policy: default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"}

func (p *WebPanel) route(ctx context.Context, c netproxy.Conn, req *httpRequest) *httpError {
	if req.header["host"] != p.auth {
		// DNS rebinding: a name that resolves here is not this authority.
		return &httpError{status: 421, kind: "wrong_host", msg: fmt.Sprintf("Host %q is not %s", req.header["host"], p.auth)}
	}
	static := map[string]string{"/": "web/panel.html", "/panel.js": "web/panel.js", "/panel.css": "web/panel.css"}
	if name, ok := static[req.path]; ok {
		if req.method != "GET" {
			return &httpError{status: 405, kind: "method_not_allowed", msg: req.method + " " + req.path}
		}
		body, _ := webFiles.ReadFile(name)
		types := map[string]string{"html": "text/html; charset=utf-8", "js": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8"}
		ext := name[strings.LastIndexByte(name, '.')+1:]
		writeResponse(c, 200, types[ext], body, pageHeaders...)
		return nil
	}
	routes := map[string]string{"/api/events": "GET", "/api/answer": "POST", "/api/preset": "POST"}
	method, ok := routes[req.path]
	if !ok {
		return &httpError{status: 404, kind: "not_found", msg: req.path}
	}
	if req.method != method {
		return &httpError{status: 405, kind: "method_not_allowed", msg: req.method + " " + req.path}
	}
	if e := p.trust(req); e != nil {
		return e
	}
	switch req.path {
	case "/api/events":
		return p.events(ctx, c)
	case "/api/answer":
		return p.answer(c, req)
	}
	return p.preset(c, req)
}

// trust is every /api request's checks: not a cross-site request, an
// Origin (when given) of this authority, and the token. (The Host was
// checked for every request.)
func (p *WebPanel) trust(req *httpRequest) *httpError {
	if req.header["sec-fetch-site"] == "cross-site" {
		return &httpError{status: 403, kind: "cross_site", msg: "Sec-Fetch-Site: cross-site"}
	}
	if o, ok := req.header["origin"]; ok && o != "http://"+p.auth {
		return &httpError{status: 403, kind: "wrong_origin", msg: fmt.Sprintf("Origin %q is not http://%s", o, p.auth)}
	}
	got, ok := req.header[strings.ToLower(TokenHeader)]
	if !ok {
		return &httpError{status: 403, kind: "no_token", msg: TokenHeader + " is missing (open the URL sbx serve printed)"}
	}
	if subtle.ConstantTimeCompare([]byte(got), []byte(p.token)) != 1 {
		return &httpError{status: 403, kind: "wrong_token", msg: TokenHeader + " is not this server's token"}
	}
	if req.method == "POST" {
		if ct, _, _ := strings.Cut(req.header["content-type"], ";"); strings.TrimSpace(ct) != "application/json" {
			return &httpError{status: 415, kind: "bad_content_type", msg: "Content-Type: want application/json"}
		}
	}
	return nil
}

// webState is what an event of the stream carries: everything the page
// shows, whole (the page redraws from it).
type webState struct {
	Approvals []approvalRequested `json:"approvals"`
	Sessions  []permissionsResult `json:"sessions"`
}

// state is the pending approvals, oldest first, and every session's
// presets (session/permissions' result).
func (p *WebPanel) state() webState {
	st := webState{Approvals: p.w.board.pendingParams(), Sessions: []permissionsResult{}}
	p.srv.mu.Lock()
	sessions := make([]*session, 0, len(p.srv.sessions))
	for _, s := range p.srv.sessions {
		sessions = append(sessions, s)
	}
	p.srv.mu.Unlock()
	sort.Slice(sessions, func(i, j int) bool { return sessions[i].id < sessions[j].id })
	for _, s := range sessions {
		st.Sessions = append(st.Sessions, p.srv.permissionsOf(s))
	}
	return st
}

// events is the event stream: the state at once, then again whenever it
// changed. While it is open the panel claims approvals.
func (p *WebPanel) events(ctx context.Context, c netproxy.Conn) *httpError {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c.SetReadDeadline(time.Time{})
	go func() {
		// The browser sends nothing more: a read that ends is its close.
		var b [1]byte
		c.Read(b[:])
		cancel()
	}()
	if writeHead(c, 200, "text/event-stream", -1) != nil {
		return nil
	}
	p.w.mu.Lock()
	p.w.panels++
	p.w.mu.Unlock()
	defer func() {
		p.w.mu.Lock()
		p.w.panels--
		p.w.mu.Unlock()
	}()
	var last []byte
	for {
		approvals, sessions := p.w.board.changed.wait(), p.srv.changed.wait()
		b, _ := json.Marshal(p.state())
		if string(b) != string(last) {
			c.SetWriteDeadline(time.Now().Add(webWriteTimeout))
			if _, err := fmt.Fprintf(c, "event: state\ndata: %s\n\n", b); err != nil {
				return nil
			}
			last = b
		}
		select {
		case <-ctx.Done():
			return nil
		case <-approvals:
		case <-sessions:
		case <-time.After(webKeepalive):
			c.SetWriteDeadline(time.Now().Add(webWriteTimeout))
			if _, err := fmt.Fprint(c, ": keepalive\n\n"); err != nil {
				return nil
			}
		}
	}
}

// webAnswer is POST /api/answer's body, decoded strictly.
type webAnswer struct {
	ApprovalID *string `json:"approval_id"`
	Outcome    *string `json:"outcome"`
}

// answer settles a pending approval through the client answerer's path.
// An approval not pending (unknown, settled already by any answerer or a
// cancellation) is a conflict, and nothing changes.
func (p *WebPanel) answer(c netproxy.Conn, req *httpRequest) *httpError {
	var a webAnswer
	if e := decodeBody(req.body, &a); e != nil {
		return e
	}
	if a.ApprovalID == nil || a.Outcome == nil {
		return badRequest("approval_id and outcome are required")
	}
	outcome := escalate.Outcome(*a.Outcome)
	if outcome != escalate.AllowedOnce && outcome != escalate.Rejected {
		return badRequest("outcome %q: the panel answers allowed-once or rejected", *a.Outcome)
	}
	rpcID := RPCID(*a.ApprovalID)
	b := p.w.board
	b.mu.Lock()
	ask, later := b.pending[rpcID], b.settled[rpcID]
	b.mu.Unlock()
	kind, why := later, "approval "+*a.ApprovalID+" is already settled"
	switch {
	case ask == nil && later == "":
		kind, why = "unknown_approval", "no approval "+*a.ApprovalID+" is pending"
	case ask != nil:
		kind, why = b.decide(ask, nil, outcome)
	}
	if kind != "" {
		return &httpError{status: 409, kind: kind, msg: why}
	}
	p.srv.Logf("web: approval %s answered %s", *a.ApprovalID, outcome)
	body, _ := json.Marshal(map[string]string{"approval_id": *a.ApprovalID, "outcome": string(outcome)})
	writeResponse(c, 200, "application/json", body)
	return nil
}

// webPreset is POST /api/preset's body, decoded strictly. confirm: true
// is required to select a preset of danger-full-access.
type webPreset struct {
	SessionID *string `json:"session_id"`
	Key       *string `json:"key"`
	Confirm   *bool   `json:"confirm"`
}

// preset selects a session's preset through session/set_preset itself.
func (p *WebPanel) preset(c netproxy.Conn, req *httpRequest) *httpError {
	var a webPreset
	if e := decodeBody(req.body, &a); e != nil {
		return e
	}
	if a.SessionID == nil || a.Key == nil {
		return badRequest("session_id and key are required")
	}
	if pr, err := p.srv.table.Select(*a.Key); err == nil && pr.SandboxMode == profiles.DangerFullAccess && (a.Confirm == nil || !*a.Confirm) {
		return &httpError{status: 409, kind: "confirm_required", msg: fmt.Sprintf("preset %s is danger-full-access: send confirm: true", pr.Key)}
	}
	params, _ := json.Marshal(presetParams{SessionID: *a.SessionID, Key: *a.Key})
	res, e := p.srv.setPreset(params)
	if e != nil {
		status := 400
		switch e.Data.Kind {
		case KindUnknownSession:
			status = 404
		case KindInternal:
			status = 500
		}
		return &httpError{status: status, kind: e.Data.Kind, msg: e.Message}
	}
	p.srv.Logf("web: session %s preset %s", *a.SessionID, *a.Key)
	body, _ := json.Marshal(res)
	writeResponse(c, 200, "application/json", body)
	return nil
}

// decodeBody decodes a request body strictly (exact keys, no duplicates,
// at every depth), as every message of the protocol is.
func decodeBody(body []byte, v any) *httpError {
	if err := strictjson.Decode(body, v); err != nil {
		return badRequest("body: %v", err)
	}
	return nil
}

// isPending reports whether the approval request of rpcID is pending.
func (a *ClientAnswerer) isPending(rpcID string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.pending[rpcID] != nil
}

// pendingParams are the pending approvals' approval/requested params,
// oldest first.
func (a *ClientAnswerer) pendingParams() []approvalRequested {
	a.mu.Lock()
	asks := make([]*clientAsk, 0, len(a.pending))
	for _, ask := range a.pending {
		asks = append(asks, ask)
	}
	a.mu.Unlock()
	slices.SortFunc(asks, func(x, y *clientAsk) int { return int(x.seq - y.seq) })
	out := make([]approvalRequested, 0, len(asks))
	for _, ask := range asks {
		out = append(out, ask.req.Params.(approvalRequested))
	}
	return out
}
