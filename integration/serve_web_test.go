//go:build linux

package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// sbx serve's browser panel (docs/serve.md, "Browser panel") over the real
// binary: approvals answered over HTTP run or deny the call; a bad --web
// is 125; and, in serve_web_browser_test.go, the page in a real browser.

// webServer is sbx serve with --web 127.0.0.1:0, and the panel's URL as it
// printed it.
type webServer struct {
	*server
	url   string // http://127.0.0.1:PORT/?token=...
	base  string // http://127.0.0.1:PORT
	token string
	// urlFile holds the URL with the token (private to the server).
	urlFile string
}

// panelAt is what sbx serve prints when its standard error is no terminal:
// the address without the token, and the file that holds the whole URL
// (issue 27 §1: standard error may be a file a call can read).
var panelAt = regexp.MustCompile(`sbx serve: approval panel at (http://127\.0\.0\.1:[0-9]+)/ \(its URL with the token is in (/[^)]+)\)\n`)

var panelURL = regexp.MustCompile(`^(http://127\.0\.0\.1:[0-9]+)/\?token=([0-9a-f]{64})\n$`)

func startWeb(t *testing.T, args ...string) *webServer {
	t.Helper()
	s := startServer(t, append([]string{"--web", "127.0.0.1:0"}, args...)...)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if m := panelAt.FindStringSubmatch(s.stderr.String()); m != nil {
			if strings.Contains(s.stderr.String(), "token=") {
				t.Fatalf("the token is on standard error, which is no terminal: %s", s.stderr)
			}
			b, err := os.ReadFile(m[2])
			u := panelURL.FindStringSubmatch(string(b))
			if err != nil || u == nil || u[1] != m[1] {
				t.Fatalf("%s: %q %v; want the panel's URL with its token", m[2], b, err)
			}
			if fi, err := os.Stat(m[2]); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("%s: %v %v; want mode 0600", m[2], fi.Mode(), err)
			}
			return &webServer{server: s, url: u[1] + "/?token=" + u[2], base: u[1], token: u[2], urlFile: m[2]}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no panel URL on stderr: %s", s.stderr)
	return nil
}

// webState is an event of the panel's stream.
type webState struct {
	Approvals []struct {
		SessionID  string   `json:"session_id"`
		ApprovalID string   `json:"approval_id"`
		CallID     string   `json:"call_id"`
		Reason     string   `json:"reason"`
		Command    []string `json:"command"`
	} `json:"approvals"`
	Sessions []struct {
		Current struct {
			SessionID string `json:"session_id"`
			Preset    string `json:"preset"`
		} `json:"current"`
	} `json:"sessions"`
}

// events opens the event stream as the page does.
func (w *webServer) events(t *testing.T) chan webState {
	t.Helper()
	req, _ := http.NewRequest("GET", w.base+"/api/events", nil)
	req.Header.Set("X-Sbx-Token", w.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("events: %v %v", resp, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	ch := make(chan webState, 64)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var st webState
				json.Unmarshal([]byte(data), &st)
				ch <- st
			}
		}
		close(ch)
	}()
	return ch
}

// post sends a JSON body with the token, as the page does.
func (w *webServer) post(t *testing.T, path, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", w.base+path, strings.NewReader(body))
	req.Header.Set("X-Sbx-Token", w.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	bufio.NewReader(resp.Body).WriteTo(&b)
	return resp.StatusCode, b.String()
}

// nextPending waits for a state with one pending approval.
func nextPending(t *testing.T, states chan webState) string {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case st, ok := <-states:
			if !ok {
				t.Fatal("the event stream ended")
			}
			if len(st.Approvals) == 1 {
				return st.Approvals[0].ApprovalID
			}
		case <-deadline:
			t.Fatal("no pending approval on the panel within 30s")
		}
	}
}

// TestServeWebAnswers: with a panel open (and no client declaring
// approvals), an escalation is pending on the panel; allowed-once through
// HTTP runs the call, rejected does not; a second answer is a conflict.
// Without a panel the waterfall passes on: unavailable.
func TestServeWebAnswers(t *testing.T) {
	w := startWeb(t)
	w.ok("initialize", map[string]any{})
	ws := t.TempDir()
	turn := w.session("s1", ws, map[string]any{"preset": "auto"})
	out := approvalTarget(t)
	if _, kind, data := rpcError(t, w.call("exec", escalatingExec("s1", turn, "c0", ws, out))); kind != "denied" || data["outcome"] != "unavailable" {
		t.Fatalf("no panel: %s %v", kind, data)
	}
	states := w.events(t)
	for i, outcome := range []string{"allowed-once", "rejected"} {
		out := approvalTarget(t)
		pending := w.start("exec", escalatingExec("s1", turn, fmt.Sprint("c", i+1), ws, out))
		approval := nextPending(t, states)
		if status, body := w.post(t, "/api/answer", fmt.Sprintf(`{"approval_id": %q, "outcome": %q}`, approval, outcome)); status != 200 {
			t.Fatalf("%s: %d %s", outcome, status, body)
		}
		m := w.get(pending)
		if outcome == "allowed-once" {
			if m["error"] != nil || !markerWritten(out) {
				t.Fatalf("allowed-once: %v, ran %v", m, markerWritten(out))
			}
		} else if _, kind, data := rpcError(t, m); kind != "denied" || data["outcome"] != "rejected" || markerWritten(out) {
			t.Fatalf("rejected: %s %v, ran %v", kind, data, markerWritten(out))
		}
		if status, body := w.post(t, "/api/answer", fmt.Sprintf(`{"approval_id": %q, "outcome": "allowed-once"}`, approval)); status != 409 || !strings.Contains(body, "expired") {
			t.Errorf("answered again: %d %s", status, body)
		}
	}
	// The refusals of the page's requests are logged on stderr.
	req, _ := http.NewRequest("GET", w.base+"/api/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 403 {
		t.Fatalf("no token: %v %v", resp, err)
	}
	resp.Body.Close()
	u, _ := url.Parse(w.base)
	req, _ = http.NewRequest("GET", w.base+"/", nil)
	req.Host = "rebound.example:" + u.Port()
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 421 {
		t.Fatalf("wrong Host: %v %v", resp, err)
	}
	for _, want := range []string{"web: refused GET /api/events: 403 no_token", "web: refused GET /: 421 wrong_host"} {
		w.logged(t, want)
	}
}

// logged waits for want on the server's stderr (copied from its pipe a
// little later).
func (w *webServer) logged(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(w.stderr.String(), want) {
		if time.Now().After(deadline) {
			t.Errorf("stderr lacks %q: %s", want, w.stderr)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestServeWebRefused: --web off loopback, or web without --web, is 125
// naming the flag, and nothing is served.
func TestServeWebRefused(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--web", "0.0.0.0:0"}, "--web:"},
		{[]string{"--web", "192.0.2.1:8080"}, "--web:"},
		{[]string{"--web", "localhost:0"}, "--web:"},
		{[]string{"--answerers", "client,web"}, "--answerers: web needs --web"},
	} {
		cmd := exec.Command(sbxBin, append([]string{"serve", "--ephemeral"}, tt.args...)...)
		cmd.Env = baseEnv()
		b, err := cmd.CombinedOutput()
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 125 || !strings.Contains(string(b), tt.want) {
			t.Errorf("%v: %v %s", tt.args, err, b)
		}
	}
}
