package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/journal"
)

// panelServer is a server whose waterfall is (the client answerer, when
// withClient, then) the browser panel, bound on 127.0.0.1:0 and served
// until the test ends; c is an initialized client (one that answers
// approvals when withClient).
type panelServer struct {
	t     *testing.T
	c     *client
	panel *WebPanel
	logs  *logBuf
}

type logBuf struct {
	mu    sync.Mutex
	lines []string
}

func (l *logBuf) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logBuf) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}

func newPanelServer(t *testing.T, withClient bool) *panelServer {
	t.Helper()
	board := NewClientAnswerer()
	web := NewWebAnswerer(board)
	logs := &logBuf{}
	opt := Options{Answerer: Waterfall{web}, Logf: logs.logf}
	if withClient {
		opt.Client, opt.Answerer = board, Waterfall{board, web}
	}
	c := startClient(t, opt)
	caps := map[string]any{}
	if withClient {
		caps = approvalsCaps
	}
	c.ok("initialize", caps)
	panel, err := web.ListenWeb(c.srv, netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := panel.Serve(ctx); err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return &panelServer{t: t, c: c, panel: panel, logs: logs}
}

// raw sends a request as written and returns the response.
func (p *panelServer) raw(req string) *http.Response {
	p.t.Helper()
	conn, err := net.Dial("tcp", p.panel.Authority())
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, req); err != nil {
		p.t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		p.t.Fatalf("response to %q: %v", req, err)
	}
	return resp
}

// good are the headers of a request of the page itself.
func (p *panelServer) good() map[string]string {
	return map[string]string{"Host": p.panel.Authority(), "Origin": "http://" + p.panel.Authority(),
		"Sec-Fetch-Site": "same-origin", TokenHeader: p.panel.token, "Content-Type": "application/json"}
}

// request sends method path with headers (a "" value leaves one out) and
// body, and returns the status and the decoded JSON body.
func (p *panelServer) request(method, path string, headers map[string]string, body string) (int, map[string]any) {
	p.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\n", method, path)
	for k, v := range headers {
		if v != "" {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", len(body), body)
	resp := p.raw(b.String())
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

func (p *panelServer) post(path, body string) (int, map[string]any) {
	p.t.Helper()
	return p.request("POST", path, p.good(), body)
}

// stream opens the event stream; the states it carries come on the
// channel, and it ends with the test (or close).
func (p *panelServer) stream() (states chan webState, stop func()) {
	p.t.Helper()
	conn, err := net.Dial("tcp", p.panel.Authority())
	if err != nil {
		p.t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("GET /api/events HTTP/1.1\r\n")
	for k, v := range p.good() {
		if k != "Content-Type" {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	b.WriteString("\r\n")
	io.WriteString(conn, b.String())
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		p.t.Fatalf("event stream: %v %v", resp, err)
	}
	states = make(chan webState, 64)
	go func() {
		defer func() { recover() }() // a late state after close
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var st webState
				if err := json.Unmarshal([]byte(data), &st); err != nil {
					p.t.Errorf("event %q: %v", data, err)
				}
				states <- st
			}
		}
		close(states)
	}()
	p.t.Cleanup(func() { conn.Close() })
	deadline := time.Now().Add(5 * time.Second)
	for p.panelCount() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	return states, func() { conn.Close() }
}

// until waits for a state that ok accepts.
func until(t *testing.T, states chan webState, what string, ok func(webState) bool) webState {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case st, open := <-states:
			if !open {
				t.Fatalf("event stream ended waiting for %s", what)
			}
			if ok(st) {
				return st
			}
		case <-deadline:
			t.Fatalf("no state with %s within 10s", what)
		}
	}
}

func pendingOne(st webState) bool  { return len(st.Approvals) == 1 }
func pendingNone(st webState) bool { return len(st.Approvals) == 0 }

func answerBody(approval, outcome string) string {
	return fmt.Sprintf(`{"approval_id": %q, "outcome": %q}`, approval, outcome)
}

// TestWebParseAddr: --web binds loopback only, by address.
func TestWebParseAddr(t *testing.T) {
	for _, s := range []string{"127.0.0.1:0", "127.0.0.1:8080", "[::1]:9000"} {
		if _, err := ParseWebAddr(s); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	for _, s := range []string{"0.0.0.0:80", "[::]:80", "10.0.0.1:80", "127.0.0.2:80", "[::ffff:127.0.0.1]:80", "localhost:80", "127.0.0.1", ":80", "[fe80::1%lo]:80"} {
		if _, err := ParseWebAddr(s); err == nil {
			t.Errorf("%s: accepted", s)
		}
	}
}

// TestWebHTTPRefused: malformed, oversized and unsupported requests are
// refused with their status, the connection closed, and logged.
func TestWebHTTPRefused(t *testing.T) {
	p := newPanelServer(t, false)
	host := "Host: " + p.panel.Authority() + "\r\n"
	for _, tt := range []struct {
		name, req string
		status    int
	}{
		{"two words", "GET /\r\n\r\n", 400},
		{"four words", "GET / x HTTP/1.1\r\n\r\n", 400},
		{"HTTP/2", "GET / HTTP/2.0\r\n" + host + "\r\n", 505},
		{"absolute form", "GET http://x/ HTTP/1.1\r\n" + host + "\r\n", 400},
		{"bare LF", "GET / HTTP/1.1\n" + host + "\r\n", 400},
		{"no colon", "GET / HTTP/1.1\r\n" + host + "Broken\r\n\r\n", 400},
		{"space before colon", "GET / HTTP/1.1\r\n" + host + "X-A : b\r\n\r\n", 400},
		{"folded header", "GET / HTTP/1.1\r\n" + host + "X-A: b\r\n c\r\n\r\n", 400},
		{"duplicate header", "GET / HTTP/1.1\r\n" + host + "X-A: b\r\nx-a: c\r\n\r\n", 400},
		{"duplicate host", "GET / HTTP/1.1\r\n" + host + host + "\r\n", 400},
		{"long request line", "GET /" + strings.Repeat("a", 5000) + " HTTP/1.1\r\n" + host + "\r\n", 431},
		{"large head", "GET / HTTP/1.1\r\n" + host + manyHeaders(20, strings.Repeat("p", 1000)) + "\r\n", 431},
		{"many headers", "GET / HTTP/1.1\r\n" + host + manyHeaders(70, "v") + "\r\n", 431},
		{"large body", "POST /api/answer HTTP/1.1\r\n" + host + "Content-Length: 100000\r\n\r\n", 413},
		{"bad length", "POST /api/answer HTTP/1.1\r\n" + host + "Content-Length: +5\r\n\r\n", 400},
		{"chunked", "POST /api/answer HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n", 501},
		{"unknown path", "GET /etc/passwd HTTP/1.1\r\n" + host + "\r\n", 404},
		{"wrong method", "DELETE /api/answer HTTP/1.1\r\n" + host + "\r\n", 405},
		{"POST the page", "POST / HTTP/1.1\r\n" + host + "Content-Length: 0\r\n\r\n", 405},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := p.raw(tt.req)
			resp.Body.Close()
			if resp.StatusCode != tt.status || !resp.Close {
				t.Errorf("status %d (Connection: close %v), want %d", resp.StatusCode, resp.Close, tt.status)
			}
		})
	}
	if !p.logs.has("web: refused") {
		t.Errorf("refusals not logged: %v", p.logs.lines)
	}
}

func manyHeaders(n int, value string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "X-H%d: %s\r\n", i, value)
	}
	return b.String()
}

// TestWebReadTimeout: a request whose head does not come in time is
// dropped.
func TestWebReadTimeout(t *testing.T) {
	old := webReadTimeout
	webReadTimeout = 200 * time.Millisecond
	t.Cleanup(func() { webReadTimeout = old })
	p := newPanelServer(t, false)
	conn, err := net.Dial("tcp", p.panel.Authority())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "GET / HTTP/1.1\r\nHost: ")
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err == nil && resp.StatusCode != 400 {
		t.Errorf("a slow request got %d", resp.StatusCode)
	}
	if err != nil && strings.Contains(err.Error(), "timeout") {
		t.Errorf("the server did not drop a slow request: %v", err)
	}
}

// TestWebStrictBodies: the bodies are decoded strictly: an unknown, a
// differently cased or a repeated key, a missing one, a wrong type,
// trailing data, an outcome a person does not give: 400, and nothing
// changes.
func TestWebStrictBodies(t *testing.T) {
	p := newPanelServer(t, false)
	for _, body := range []string{
		``, `[]`, `{`, `{"approval_id": "a", "outcome": "rejected"} {}`,
		`{"approval_id": "a", "outcome": "rejected", "extra": 1}`,
		`{"APPROVAL_ID": "a", "outcome": "rejected"}`,
		`{"approval_id": "a", "approval_id": "b", "outcome": "rejected"}`,
		`{"approval_id": "a", "outcome": "rejected", "outcome": "allowed-once"}`,
		`{"approval_id": "a"}`, `{"approval_id": 1, "outcome": "rejected"}`,
		`{"approval_id": "a", "outcome": "cancelled"}`, `{"approval_id": "a", "outcome": "unavailable"}`,
		`{"approval_id": "a", "outcome": "allow"}`, `{"approval_id": "a", "outcome": "Allowed-Once"}`,
	} {
		if status, m := p.post("/api/answer", body); status != 400 || m["error"] == nil {
			t.Errorf("answer %s: %d %v, want 400", body, status, m)
		}
	}
	for _, body := range []string{
		`{"session_id": "s", "key": "auto", "Key": "full-access"}`,
		`{"session_id": "s", "key": "auto", "key": "full-access", "confirm": true}`,
		`{"session_id": "s", "key": "auto", "confirm": "yes"}`,
		`{"session_id": "s"}`,
	} {
		if status, m := p.post("/api/preset", body); status != 400 || m["error"] == nil {
			t.Errorf("preset %s: %d %v, want 400", body, status, m)
		}
	}
}

// TestWebTrust: every /api request needs the bound Host, no cross-site
// fetch, a same-authority Origin when there is one, the token and (a
// POST) a JSON body; each refusal is a 421 or 403 and logged. The page
// itself needs the Host only.
func TestWebTrust(t *testing.T) {
	p := newPanelServer(t, false)
	auth := p.panel.Authority()
	_, port, _ := strings.Cut(auth, ":")
	wrongToken := strings.Repeat("0", len(p.panel.token))
	for _, tt := range []struct {
		name   string
		change map[string]string
		status int
		log    string
	}{
		{"good", nil, 409, ""},
		{"no Origin, no Sec-Fetch-Site", map[string]string{"Origin": "", "Sec-Fetch-Site": ""}, 409, ""},
		{"wrong Host (DNS rebinding)", map[string]string{"Host": "attacker.example:" + port}, 421, "wrong_host"},
		{"localhost Host", map[string]string{"Host": "localhost:" + port}, 421, "wrong_host"},
		{"another port", map[string]string{"Host": "127.0.0.1:1"}, 421, "wrong_host"},
		{"no Host", map[string]string{"Host": ""}, 421, "wrong_host"},
		{"cross-site", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403, "cross_site"},
		{"another Origin", map[string]string{"Origin": "http://attacker.example"}, 403, "wrong_origin"},
		{"another port's Origin", map[string]string{"Origin": "http://127.0.0.1:1"}, 403, "wrong_origin"},
		{"https Origin", map[string]string{"Origin": "https://" + auth}, 403, "wrong_origin"},
		{"null Origin", map[string]string{"Origin": "null"}, 403, "wrong_origin"},
		{"no token", map[string]string{TokenHeader: ""}, 403, "no_token"},
		{"wrong token", map[string]string{TokenHeader: wrongToken}, 403, "wrong_token"},
		{"token prefix", map[string]string{TokenHeader: p.panel.token[:10]}, 403, "wrong_token"},
		{"form post", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, "bad_content_type"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := p.good()
			for k, v := range tt.change {
				h[k] = v
			}
			status, m := p.request("POST", "/api/answer", h, answerBody("nothing", "allowed-once"))
			if status != tt.status {
				t.Errorf("answer: %d %v, want %d", status, m, tt.status)
			}
			if tt.log != "" && !p.logs.has("refused POST /api/answer: "+fmt.Sprint(tt.status)+" "+tt.log) {
				t.Errorf("not logged: %v", p.logs.lines)
			}
			delete(h, "Content-Type")
			if status, _ := p.request("GET", "/api/events", h, ""); tt.status != 409 && tt.status != 415 && status != tt.status {
				t.Errorf("events: %d, want %d", status, tt.status)
			}
			if status, _ := p.request("POST", "/api/preset", p.with(tt.change), `{"session_id": "nope", "key": "auto"}`); tt.status != 409 && status != tt.status {
				t.Errorf("preset: %d, want %d", status, tt.status)
			}
		})
	}
	// The page: the Host is checked; it holds no secret, so no token.
	if status, _ := p.request("GET", "/", map[string]string{"Host": auth}, ""); status != 200 {
		t.Errorf("page: %d", status)
	}
	if status, _ := p.request("GET", "/panel.js", map[string]string{"Host": "attacker.example:" + port}, ""); status != 421 {
		t.Errorf("page with a wrong Host: %d", status)
	}
}

func (p *panelServer) with(change map[string]string) map[string]string {
	h := p.good()
	for k, v := range change {
		h[k] = v
	}
	return h
}

// TestWebClaim: with no panel connected the web answerer does not claim
// (the waterfall passes on: unavailable); with one, the approval shows as
// a card's data, allowed-once runs the call, rejected does not, and a
// settled approval leaves the stream and is a conflict to answer again.
func TestWebClaim(t *testing.T) {
	p := newPanelServer(t, false)
	c := p.c
	ws, turn := c.openTurn("s", map[string]any{"preset": "auto"})
	out := t.TempDir()
	m := c.call("exec", escalating("s", turn, "c-nopanel", ws, out))
	if code, data := errorOf(t, "exec", m); code != CodeDenied || data["outcome"] != "unavailable" || ran(out) {
		t.Fatalf("no panel: %d %v", code, data)
	}
	states, closeStream := p.stream()
	for _, tt := range []struct {
		outcome string
		ran     bool
	}{{"allowed-once", true}, {"rejected", false}} {
		out := t.TempDir()
		pending := c.start("exec", escalating("s", turn, "c-"+tt.outcome, ws, out))
		st := until(t, states, "a pending approval", pendingOne)
		a := st.Approvals[0]
		if a.SessionID != "s" || a.ToolName != "shell" || a.CallID != "c-"+tt.outcome || a.Reason != "write the output" ||
			fmt.Sprint(a.Command) != "[sh -c echo ran > "+out+"/marker]" {
			t.Fatalf("card %+v", a)
		}
		if status, m := p.post("/api/answer", answerBody(a.ApprovalID, tt.outcome)); status != 200 || m["outcome"] != tt.outcome {
			t.Fatalf("answer: %d %v", status, m)
		}
		res := c.wait(pending)
		if tt.ran && (res["error"] != nil || !ran(out)) {
			t.Fatalf("allowed-once: %v", res)
		}
		if !tt.ran {
			if code, data := errorOf(t, "exec", res); code != CodeDenied || data["outcome"] != "rejected" || ran(out) {
				t.Fatalf("rejected: %d %v", code, data)
			}
		}
		until(t, states, "no pending approval", pendingNone)
		if status, m := p.post("/api/answer", answerBody(a.ApprovalID, "allowed-once")); status != 409 || m["error"].(map[string]any)["kind"] != RefusedExpired {
			t.Errorf("answer again: %d %v", status, m)
		}
	}
	if status, m := p.post("/api/answer", answerBody("never-asked", "allowed-once")); status != 409 || m["error"].(map[string]any)["kind"] != "unknown_approval" {
		t.Errorf("unknown approval: %d %v", status, m)
	}
	// The panel closed: no claim again.
	closeStream()
	deadline := time.Now().Add(5 * time.Second)
	for p.panelCount() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	m = c.call("exec", escalating("s", turn, "c-closed", ws, t.TempDir()))
	if code, data := errorOf(t, "exec", m); code != CodeDenied || data["outcome"] != "unavailable" {
		t.Fatalf("panel closed: %d %v", code, data)
	}
}

func (p *panelServer) panelCount() int {
	p.panel.w.mu.Lock()
	defer p.panel.w.mu.Unlock()
	return p.panel.w.panels
}

// TestWebCancelled: an approval cancelled while its card shows leaves
// the stream, and answering it is a conflict.
func TestWebCancelled(t *testing.T) {
	p := newPanelServer(t, false)
	c := p.c
	ws, turn := c.openTurn("s", map[string]any{"preset": "auto"})
	states, _ := p.stream()
	out := t.TempDir()
	pending := c.start("exec", escalating("s", turn, "c1", ws, out))
	a := until(t, states, "a pending approval", pendingOne).Approvals[0]
	c.ok("exec/cancel", map[string]any{"call_id": "c1"})
	until(t, states, "no pending approval", pendingNone)
	cancelled(t, c.wait(pending), OutcomeAbortedBeforeDispatch)
	if status, m := p.post("/api/answer", answerBody(a.ApprovalID, "allowed-once")); status != 409 || m["error"].(map[string]any)["kind"] != RefusedExpired || ran(out) {
		t.Errorf("answer a cancelled approval: %d %v", status, m)
	}
}

// TestWebRacesClient: the panel and a client answer one approval; the
// first settles it, the other is refused as expired, whichever it is.
func TestWebRacesClient(t *testing.T) {
	p := newPanelServer(t, true)
	c := p.c
	ws, turn := c.openTurn("s", map[string]any{"preset": "auto"})
	states, _ := p.stream()
	for i, order := range []string{"client first", "web first", "at once", "at once", "at once"} {
		out := t.TempDir()
		callID := fmt.Sprintf("c%d", i)
		pending := c.start("exec", escalating("s", turn, callID, ws, out))
		req := c.note("approval/requested")
		a := until(t, states, "a pending approval", pendingOne).Approvals[0]
		if req["id"] != RPCID(a.ApprovalID) {
			t.Fatalf("the client and the panel see different approvals: %v %+v", req, a)
		}
		var status int
		var body map[string]any
		web := func() { status, body = p.post("/api/answer", answerBody(a.ApprovalID, "allowed-once")) }
		client := func() {
			c.answer(req["id"], map[string]any{"session_id": "s", "approval_id": a.ApprovalID, "outcome": "rejected"})
		}
		switch order {
		case "client first":
			client()
			until(t, states, "no pending approval", pendingNone)
			web()
		case "web first":
			web()
			client()
		default:
			var wg sync.WaitGroup
			wg.Add(2)
			go func() { defer wg.Done(); web() }()
			go func() { defer wg.Done(); client() }()
			wg.Wait()
		}
		res := c.wait(pending)
		if status == 200 {
			// The panel won: the call ran, the client's answer is expired.
			c.refused(RefusedExpired)
			if res["error"] != nil || !ran(out) {
				t.Fatalf("%s: the panel won but %v", order, res)
			}
		} else {
			if status != 409 || body["error"].(map[string]any)["kind"] != RefusedExpired {
				t.Fatalf("%s: the panel lost with %d %v", order, status, body)
			}
			if code, data := errorOf(t, "exec", res); code != CodeDenied || data["outcome"] != "rejected" || ran(out) {
				t.Fatalf("%s: the client won but %d %v", order, code, data)
			}
			c.noNote("approval/response_refused", 50*time.Millisecond)
		}
		if (order == "client first") != (status != 200) && order != "at once" {
			t.Errorf("%s: the wrong one won (panel %d)", order, status)
		}
		if n := len(p.panel.w.board.pendingParams()); n != 0 {
			t.Fatalf("%d approvals still pending", n)
		}
	}
}

// TestWebPreset: the selector writes through session/set_preset: its
// records and result; custom is refused; danger-full-access needs
// confirm: true and changes nothing without it; the stream shows the
// change.
func TestWebPreset(t *testing.T) {
	p := newPanelServer(t, false)
	c := p.c
	c.ok("session/open", map[string]any{"session_id": "s", "cwd": t.TempDir(), "preset": "auto"})
	states, _ := p.stream()
	st := until(t, states, "the session", func(st webState) bool { return len(st.Sessions) == 1 })
	if s := st.Sessions[0]; s.Current.Preset != "auto" || len(s.Presets) == 0 || len(s.Selectable) == 0 {
		t.Fatalf("session %+v", s)
	}
	for _, pr := range st.Sessions[0].Presets {
		if pr.Key == "custom" {
			t.Errorf("custom offered")
		}
	}
	before := len(c.records("s"))
	if status, m := p.post("/api/preset", `{"session_id": "s", "key": "full-access"}`); status != 409 || m["error"].(map[string]any)["kind"] != "confirm_required" {
		t.Errorf("full-access without confirm: %d %v", status, m)
	}
	if status, m := p.post("/api/preset", `{"session_id": "s", "key": "full-access", "confirm": false}`); status != 409 {
		t.Errorf("full-access with confirm false: %d %v", status, m)
	}
	if status, m := p.post("/api/preset", `{"session_id": "s", "key": "custom", "confirm": true}`); status != 400 || m["error"].(map[string]any)["kind"] != KindInvalidParams {
		t.Errorf("custom: %d %v", status, m)
	}
	if status, m := p.post("/api/preset", `{"session_id": "nope", "key": "auto"}`); status != 404 || m["error"].(map[string]any)["kind"] != KindUnknownSession {
		t.Errorf("unknown session: %d %v", status, m)
	}
	if n := len(c.records("s")); n != before {
		t.Errorf("refused preset changes wrote records: %v", c.records("s")[before:])
	}
	if status, m := p.post("/api/preset", `{"session_id": "s", "key": "read-only"}`); status != 200 || m["preset"] != "read-only" || m["sandbox_mode"] != "read-only" {
		t.Errorf("read-only: %d %v", status, m)
	}
	until(t, states, "read-only", func(st webState) bool { return st.Sessions[0].Current.Preset == "read-only" })
	if status, m := p.post("/api/preset", `{"session_id": "s", "key": "full-access", "confirm": true}`); status != 200 || m["sandbox_mode"] != "danger-full-access" {
		t.Errorf("full-access confirmed: %d %v", status, m)
	}
	until(t, states, "full-access", func(st webState) bool { return st.Sessions[0].Current.Preset == "full-access" })
	want := []string{journal.TypePresetIntent, journal.TypeKnobChanged, journal.TypePresetIntent, journal.TypeKnobChanged, journal.TypeKnobChanged}
	if got := c.records("s")[before:]; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("records %v, want %v (session/set_preset's)", got, want)
	}
	if got := c.ok("session/permissions", map[string]any{"session_id": "s"})["current"].(map[string]any); got["preset"] != "full-access" {
		t.Errorf("session/permissions %v", got)
	}
}

// TestWebIPv6: [::1] is served with its bracketed authority as the Host.
func TestWebIPv6(t *testing.T) {
	web := NewWebAnswerer(NewClientAnswerer())
	srv := New(Options{Answerer: Waterfall{web}, Logf: t.Logf})
	panel, err := web.ListenWeb(srv, netip.MustParseAddrPort("[::1]:0"))
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); panel.Serve(ctx) }()
	defer func() { cancel(); <-done }()
	if !strings.HasPrefix(panel.URL(), "http://[::1]:") {
		t.Errorf("URL %s", panel.URL())
	}
	p := &panelServer{t: t, panel: panel}
	if status, _ := p.request("GET", "/", map[string]string{"Host": panel.Authority()}, ""); status != 200 {
		t.Errorf("page: %d", status)
	}
	if status, _ := p.request("GET", "/", map[string]string{"Host": "127.0.0.1:" + panel.Authority()[strings.LastIndexByte(panel.Authority(), ':')+1:]}, ""); status != 421 {
		t.Errorf("the IPv4 authority: %d", status)
	}
}

// TestWebConnectionCap: connections past maxWebConns are closed unread.
func TestWebConnectionCap(t *testing.T) {
	p := newPanelServer(t, false)
	var conns []net.Conn
	for range maxWebConns {
		c, err := net.Dial("tcp", p.panel.Authority())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for !p.logs.has("web: refused a connection") && time.Now().Before(deadline) {
		c, err := net.Dial("tcp", p.panel.Authority())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		time.Sleep(10 * time.Millisecond)
	}
	if !p.logs.has("web: refused a connection") {
		t.Fatal("no connection refused past the cap")
	}
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	if !p.servedWithin(5 * time.Second) {
		t.Fatal("the panel did not recover")
	}
}

// servedWithin reports whether the panel answers a GET / with 200 within
// d. Tried without p.raw's Fatal: a slot may not be free yet.
func (p *panelServer) servedWithin(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		c, err := net.Dial("tcp", p.panel.Authority())
		if err == nil {
			io.WriteString(c, "GET / HTTP/1.1\r\nHost: "+p.panel.Authority()+"\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			c.Close()
			if err == nil && resp.StatusCode == 200 {
				return true
			}
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestWebClaimsTheAuditFact: with a panel open, the panel claims a
// question only when its approval/asked record is the newest of its
// session, tool and call that is undecided and not claimed by another
// pending item; a question without such a record (never recorded,
// decided, superseded, pending already, another call's) is not claimed,
// and goes down the waterfall: the panel invents no approval.
func TestWebClaimsTheAuditFact(t *testing.T) {
	p := newPanelServer(t, false)
	p.c.openTurn("s", map[string]any{"preset": "auto"})
	w := p.panel.w
	q := func(approval, call string) Question {
		return Question{SessionID: "s", ApprovalID: approval, CallID: call}
	}
	if w.Claim(q("a1", "c1")) {
		t.Fatal("claimed with no panel open")
	}
	p.stream()
	waitFor(t, func() bool { return p.panelCount() > 0 })
	sess, _ := p.c.srv.lookup("s")
	asked := func(approval, call string) journal.ApprovalAsked {
		return journal.ApprovalAsked{ApprovalID: approval, SessionID: "s", ToolName: "shell", CallID: call}
	}
	if w.Claim(q("ghost", "c1")) {
		t.Error("claimed an approval that was never recorded as asked")
	}
	for _, r := range []journal.ApprovalAsked{asked("a1", "c1"), asked("a2", "c1"), asked("b1", "c2")} {
		if err := sess.append(r); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name string
		q    Question
		want bool
	}{
		{"the newest of its call", q("a2", "c1"), true},
		{"superseded by a newer ask of its call", q("a1", "c1"), false},
		{"another call's", q("a2", "c2"), false},
		{"its own call's", q("b1", "c2"), true},
		{"another session's", Question{SessionID: "other", ApprovalID: "b1", CallID: "c2"}, false},
		{"another tool's", Question{SessionID: "s", ApprovalID: "b1", CallID: "c2", Tool: "fs"}, false},
	} {
		if got := w.Claim(tt.q); got != tt.want {
			t.Errorf("%s: claimed %v, want %v", tt.name, got, tt.want)
		}
	}
	// a2 claimed by a pending item: a1 is then the newest unclaimed one.
	w.board.mu.Lock()
	w.board.pending[RPCID("a2")] = &clientAsk{rpcID: RPCID("a2"), sessionID: "s", approvalID: "a2",
		req: request{Params: approvalRequested{SessionID: "s", ApprovalID: "a2", ToolName: "shell", CallID: "c1"}}}
	w.board.mu.Unlock()
	if w.Claim(q("a2", "c1")) || !w.Claim(q("a1", "c1")) {
		t.Error("a pending item's approval is claimed again, or the one before it is not")
	}
	if err := sess.append(journal.ApprovalDecided{ApprovalID: "a1", Outcome: string(escalate.Rejected)}); err != nil {
		t.Fatal(err)
	}
	if w.Claim(q("a1", "c1")) {
		t.Error("claimed a decided approval")
	}
	// Down the waterfall: the next answerer is asked instead.
	var passed []string
	next := Always{AnswererFunc(func(_ context.Context, q Question) (escalate.Outcome, error) {
		passed = append(passed, q.ApprovalID)
		return escalate.Rejected, nil
	})}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if o, _ := (Waterfall{w, next}).Approve(ctx, q("ghost", "c1")); o != escalate.Rejected || len(passed) != 1 {
		t.Errorf("a question without its record: %s, passed %v", o, passed)
	}
}
