//go:build linux

package integration

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// The browser panel in a real browser: headless Chromium, driven over the
// DevTools protocol on --remote-debugging-pipe (fd 3 in, fd 4 out, each
// message ended by a NUL byte).

// chromiumBinary is the Chromium to drive: $SBX_CHROMIUM, else chromium
// or chromium-browser on $PATH.
func chromiumBinary() (string, error) {
	if p := os.Getenv("SBX_CHROMIUM"); p != "" {
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no chromium or chromium-browser on $PATH (apt-get install chromium, or set SBX_CHROMIUM)")
}

// cdp is one browser, and one page attached in flat mode.
type cdp struct {
	t       *testing.T
	cmd     *exec.Cmd
	w       *os.File
	mu      sync.Mutex
	next    int
	waiting map[int]chan cdpMessage
	events  chan cdpMessage
	session string
}

type cdpMessage struct {
	ID        int             `json:"id,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

func startChromium(t *testing.T) *cdp {
	t.Helper()
	bin, err := chromiumBinary()
	if err != nil {
		t.Skipf("browser tests: %v", err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe", "--no-first-run",
		"--no-default-browser-check", "--disable-extensions", "--no-proxy-server", "--disable-background-networking",
		"--window-size=1000,720", "--user-data-dir="+t.TempDir(), "about:blank")
	cmd.ExtraFiles = []*os.File{inR, outW} // fd 3: commands in, fd 4: answers and events out
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	inR.Close()
	outW.Close()
	c := &cdp{t: t, cmd: cmd, w: inW, waiting: map[int]chan cdpMessage{}, events: make(chan cdpMessage, 1024)}
	go func() {
		r := bufio.NewReader(outR)
		for {
			b, err := r.ReadBytes(0)
			if err != nil {
				return
			}
			var m cdpMessage
			if err := json.Unmarshal(b[:len(b)-1], &m); err != nil {
				t.Errorf("cdp: %q: %v", b, err)
				continue
			}
			if m.ID != 0 {
				c.mu.Lock()
				ch := c.waiting[m.ID]
				delete(c.waiting, m.ID)
				c.mu.Unlock()
				if ch != nil {
					ch <- m
				}
				continue
			}
			select {
			case c.events <- m:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		c.send("", "Browser.close", nil)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("chromium stderr: %s", stderr.String())
		}
	})
	var targets struct {
		TargetInfos []struct {
			TargetID string `json:"targetId"`
			Type     string `json:"type"`
		} `json:"targetInfos"`
	}
	c.call("", "Target.getTargets", nil, &targets)
	for _, ti := range targets.TargetInfos {
		if ti.Type == "page" {
			c.attach(ti.TargetID)
			return c
		}
	}
	t.Fatalf("chromium has no page: %+v", targets)
	return nil
}

// attach makes target the page the commands go to.
func (c *cdp) attach(target string) {
	var att struct {
		SessionID string `json:"sessionId"`
	}
	c.call("", "Target.attachToTarget", map[string]any{"targetId": target, "flatten": true}, &att)
	c.session = att.SessionID
	c.call(c.session, "Page.enable", nil, nil)
	c.call(c.session, "Runtime.enable", nil, nil)
}

// newTab opens a fresh tab (its own sessionStorage) and attaches to it.
func (c *cdp) newTab() {
	var tgt struct {
		TargetID string `json:"targetId"`
	}
	c.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &tgt)
	c.attach(tgt.TargetID)
}

func (c *cdp) send(session, method string, params any) chan cdpMessage {
	c.mu.Lock()
	c.next++
	id := c.next
	ch := make(chan cdpMessage, 1)
	c.waiting[id] = ch
	c.mu.Unlock()
	if params == nil {
		params = map[string]any{}
	}
	b, _ := json.Marshal(map[string]any{"id": id, "sessionId": session, "method": method, "params": params})
	if session == "" {
		b, _ = json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	}
	c.w.Write(append(b, 0))
	return ch
}

func (c *cdp) call(session, method string, params, result any) {
	c.t.Helper()
	select {
	case m := <-c.send(session, method, params):
		if m.Error != nil {
			c.t.Fatalf("%s: %s", method, m.Error.Message)
		}
		if result != nil {
			if err := json.Unmarshal(m.Result, result); err != nil {
				c.t.Fatalf("%s: %v", method, err)
			}
		}
	case <-time.After(30 * time.Second):
		c.t.Fatalf("%s: no answer from chromium within 30s", method)
	}
}

// eval evaluates expr in the page (awaiting a promise) into v.
func (c *cdp) eval(expr string, v any) {
	c.t.Helper()
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails any `json:"exceptionDetails"`
	}
	c.call(c.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &r)
	if r.ExceptionDetails != nil {
		c.t.Fatalf("%s: %v", expr, r.ExceptionDetails)
	}
	if v != nil {
		if err := json.Unmarshal(r.Result.Value, v); err != nil {
			c.t.Fatalf("%s: %s: %v", expr, r.Result.Value, err)
		}
	}
}

// waitFor polls expr (a boolean) until it is true.
func (c *cdp) waitFor(what, expr string) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var ok bool
		c.eval("!!("+expr+")", &ok)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			var body string
			c.eval("document.body ? document.body.innerText : ''", &body)
			c.t.Fatalf("%s: not within 30s; the page reads: %s", what, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *cdp) navigate(url string) {
	c.t.Helper()
	c.call(c.session, "Page.navigate", map[string]any{"url": url}, nil)
	c.waitFor("load "+url, `document.readyState === "complete" && location.href !== "about:blank"`)
}

// click clicks the element of selector as a person does: the mouse
// pressed and released at its centre, through the browser's input.
func (c *cdp) click(selector string) {
	c.t.Helper()
	var box struct{ X, Y float64 }
	c.eval(fmt.Sprintf(`(() => { const r = document.querySelector(%q).getBoundingClientRect(); return {X: r.x + r.width/2, Y: r.y + r.height/2}; })()`, selector), &box)
	for _, typ := range []string{"mousePressed", "mouseReleased"} {
		c.call(c.session, "Input.dispatchMouseEvent", map[string]any{"type": typ, "x": box.X, "y": box.Y, "button": "left", "clickCount": 1}, nil)
	}
}

// event waits for the next event of method.
func (c *cdp) event(method string) cdpMessage {
	c.t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case m := <-c.events:
			if m.Method == method {
				return m
			}
		case <-deadline:
			c.t.Fatalf("no %s within 30s", method)
		}
	}
}

// TestServeWebBrowser: the panel in headless Chromium. The page loads with
// the token and shows a pending escalation as a card (reason, command);
// a failed request unlocks the buttons; a click on "Allow once" locks
// both and runs the call; "Reject" denies it. A page of another origin
// cannot approve, even knowing the token; a wrong Host and a missing token
// are refused. Choosing full access asks for a confirmation first. A screenshot of the panel goes to $SBX_SCREENSHOT when set
// (docs/serve-web.png is one).
func TestServeWebBrowser(t *testing.T) {
	c := startChromium(t)
	w := startWeb(t)
	w.ok("initialize", map[string]any{})
	ws := t.TempDir()
	turn := w.session("s1", ws, map[string]any{"preset": "auto"})

	c.navigate(w.url)
	c.waitFor("the panel connected", `document.getElementById("status").textContent === "connected"`)
	var href string
	c.eval("location.href", &href)
	if strings.Contains(href, "token") {
		t.Errorf("the token stays in the address bar: %s", href)
	}
	c.waitFor("the session's selector", `document.querySelector("select[data-session-id=s1]")`)

	// A pending escalation is a card.
	out := approvalTarget(t)
	pending := w.start("exec", escalatingExec("s1", turn, "c1", ws, out))
	c.waitFor("a card", `document.querySelectorAll(".card").length === 1`)
	var text string
	c.eval(`document.querySelector(".card").innerText`, &text)
	if !strings.Contains(text, "write the output") || !strings.Contains(text, "sh -c 'echo ran > "+out+"/marker'") ||
		!strings.Contains(text, "Allow once") || !strings.Contains(text, "Reject") {
		t.Fatalf("card reads %q", text)
	}
	if path := os.Getenv("SBX_SCREENSHOT"); path != "" {
		var shot struct {
			Data string `json:"data"`
		}
		c.call(c.session, "Page.captureScreenshot", map[string]any{"format": "png"}, &shot)
		png, _ := base64.StdEncoding.DecodeString(shot.Data)
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// A request that fails in transport: the buttons lock, then unlock.
	c.call(c.session, "Fetch.enable", map[string]any{"patterns": []map[string]any{{"urlPattern": "*/api/answer*"}}}, nil)
	c.click(".card button.allow")
	paused := c.event("Fetch.requestPaused")
	var locked bool
	c.eval(`[...document.querySelectorAll(".card button")].every((b) => b.disabled)`, &locked)
	if !locked {
		t.Errorf("the buttons are not locked while the answer is sent")
	}
	var p struct {
		RequestID string `json:"requestId"`
	}
	json.Unmarshal(paused.Params, &p)
	c.call(c.session, "Fetch.failRequest", map[string]any{"requestId": p.RequestID, "errorReason": "ConnectionReset"}, nil)
	c.waitFor("the buttons unlocked", `[...document.querySelectorAll(".card button")].every((b) => !b.disabled) && document.querySelector(".card .note").textContent.startsWith("not sent")`)
	c.call(c.session, "Fetch.disable", nil, nil)
	if markerWritten(out) {
		t.Fatal("the call ran on an answer that was not sent")
	}

	// The real click: both buttons lock at once, the call runs.
	c.eval(`window.locked = new Set(); new MutationObserver((ms) => ms.forEach((m) => m.target.disabled && window.locked.add(m.target.className)))
		.observe(document.querySelector(".card"), {attributes: true, subtree: true, attributeFilter: ["disabled"]}); true`, nil)
	c.click(".card button.allow")
	var both bool
	c.eval(`window.locked.has("allow") && window.locked.has("reject")`, &both)
	if !both {
		c.eval(`[...window.locked].join(",")`, &text)
		t.Errorf("after the first click the locked buttons are %q, want both", text)
	}
	if m := w.get(pending); m["error"] != nil || !markerWritten(out) {
		t.Fatalf("allowed once in the browser: %v, ran %v", m, markerWritten(out))
	}
	c.waitFor("the card gone", `document.querySelectorAll(".card").length === 0`)
	if n := strings.Count(w.stderr.String(), "answered allowed-once"); n != 1 {
		t.Errorf("%d answers sent, want 1: %s", n, w.stderr)
	}

	// Reject.
	out = approvalTarget(t)
	pending = w.start("exec", escalatingExec("s1", turn, "c2", ws, out))
	c.waitFor("a card", `document.querySelectorAll(".card").length === 1`)
	c.click(".card button.reject")
	if _, kind, data := rpcError(t, w.get(pending)); kind != "denied" || data["outcome"] != "rejected" || markerWritten(out) {
		t.Fatalf("rejected in the browser: %s %v, ran %v", kind, data, markerWritten(out))
	}
	c.waitFor("the card gone", `document.querySelectorAll(".card").length === 0`)

	// The selector: full access asks first; cancelled, nothing changes;
	// confirmed, the session's preset is full-access.
	choose := `(() => { const s = document.querySelector("select[data-session-id=s1]"); s.value = "full-access"; s.dispatchEvent(new Event("change")); return true; })()`
	c.eval(choose, nil)
	c.waitFor("the confirmation", `document.querySelector(".confirm")`)
	c.click(".confirm button.confirm-no")
	c.waitFor("the confirmation gone", `!document.querySelector(".confirm")`)
	if cur := w.ok("session/permissions", map[string]any{"session_id": "s1"})["current"].(map[string]any); cur["preset"] != "auto" {
		t.Fatalf("cancelled, the preset is %v", cur["preset"])
	}
	c.eval(choose, nil)
	c.waitFor("the confirmation", `document.querySelector(".confirm")`)
	c.click(".confirm button.confirm-yes")
	c.waitFor("full-access shown", `document.querySelector("select[data-session-id=s1]").value === "full-access" && document.querySelector(".session").innerText.includes("danger-full-access")`)
	if cur := w.ok("session/permissions", map[string]any{"session_id": "s1"})["current"].(map[string]any); cur["preset"] != "full-access" {
		t.Fatalf("confirmed, the preset is %v", cur["preset"])
	}
	w.ok("session/set_preset", map[string]any{"session_id": "s1", "key": "auto"})
	c.waitFor("auto shown again", `document.querySelector("select[data-session-id=s1]").value === "auto"`)

	// A page of another origin, even one that knows the token, cannot
	// approve: its request (with the token header, preflighted; or a
	// simple one without) is refused.
	out = approvalTarget(t)
	pending = w.start("exec", escalatingExec("s1", turn, "c3", ws, out))
	c.waitFor("a card", `document.querySelectorAll(".card").length === 1`)
	var approval string
	c.eval(`document.querySelector(".card").dataset.approvalId`, &approval)
	evil := evilOrigin(t)
	c.newTab()
	c.navigate(evil + "/")
	body := fmt.Sprintf(`{"approval_id": %q, "outcome": "allowed-once"}`, approval)
	var results []string
	c.eval(fmt.Sprintf(`Promise.all([
		fetch(%[1]q, {method: "POST", headers: {"Content-Type": "application/json", "X-Sbx-Token": %[2]q}, body: %[3]q}).then((r) => "status " + r.status, (e) => "failed: " + e.message),
		fetch(%[1]q, {method: "POST", mode: "no-cors", body: %[3]q}).then((r) => "opaque " + r.type, (e) => "failed: " + e.message),
	])`, w.base+"/api/answer", w.token, body), &results)
	if !strings.HasPrefix(results[0], "failed") {
		t.Errorf("another origin's request with the token: %s", results[0])
	}
	w.logged(t, "web: refused POST /api/answer: 403 wrong_origin")
	w.call("exec/cancel", map[string]any{"call_id": "c3"})
	if m := w.get(pending); m["error"] == nil || markerWritten(out) {
		t.Fatalf("another origin approved: %v, ran %v (%v)", m, markerWritten(out), results)
	}

	// A wrong Host: the panel by another name (as DNS rebinding would
	// reach it) is refused.
	port := w.base[strings.LastIndexByte(w.base, ':')+1:]
	c.navigate("http://localhost:" + port + "/?token=" + w.token)
	c.eval("document.body.innerText", &text)
	if !strings.Contains(text, "wrong_host") {
		t.Errorf("the panel as localhost reads %q", text)
	}
	w.logged(t, "web: refused GET /: 421 wrong_host")

	// A missing token: a fresh tab on the panel without it is refused,
	// and says so.
	c.newTab()
	c.navigate(w.base + "/")
	c.waitFor("the missing token said", `document.getElementById("status").textContent.startsWith("no token")`)
	var status int
	c.eval(`fetch("/api/events").then((r) => r.status)`, &status)
	if status != 403 {
		t.Errorf("the stream without the token: %d", status)
	}
	w.logged(t, "web: refused GET /api/events: 403 no_token")
}

// evilOrigin serves a blank page on another loopback port: another origin.
func evilOrigin(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/html")
		fmt.Fprint(rw, "<!doctype html><title>another origin</title><p>another origin</p>")
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "http://" + l.Addr().String()
}
