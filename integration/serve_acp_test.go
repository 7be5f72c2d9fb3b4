//go:build linux

package integration

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The acp answerer of sbx serve (docs/serve.md, "ACP") against a real ACP
// client: testdata/acp/client.mjs, built on the official TypeScript SDK
// (@agentclientprotocol/sdk, pinned by its package-lock.json), which
// checks every message against the SDK's own schema.

// acpClientDir is testdata/acp with the SDK installed (npmClientDir).
func acpClientDir(t *testing.T) string {
	t.Helper()
	return npmClientDir(t, "acp", "@agentclientprotocol/sdk")
}

type npmError struct {
	err error
	out string
}

func (e *npmError) Error() string { return e.err.Error() + ": " + e.out }

// acpClient is a running client.mjs.
type acpClient struct {
	t      *testing.T
	socket string
	log    string
}

// startACPClient starts client.mjs answering as answer, listening on a
// fresh socket, and waits until it listens.
func startACPClient(t *testing.T, answer string) *acpClient {
	t.Helper()
	dir := acpClientDir(t)
	tmp, err := os.MkdirTemp("", "acp") // short: a socket path has 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	c := &acpClient{t: t, socket: filepath.Join(tmp, "acp.sock"), log: filepath.Join(tmp, "acp.log")}
	cmd := exec.Command("node", filepath.Join(dir, "client.mjs"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "ACP_SOCKET="+c.socket, "ACP_ANSWER="+answer, "ACP_LOG="+c.log)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if s := stderr.String(); s != "" {
			t.Logf("ACP client stderr: %s", s)
		}
	})
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		ready <- line
	}()
	select {
	case line := <-ready:
		if line != "listening\n" {
			t.Fatalf("the ACP client did not start: %q; stderr: %s", line, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the ACP client did not listen within 30s; stderr: %s", stderr.String())
	}
	return c
}

// events are what the client logged so far.
func (c *acpClient) events() []map[string]any {
	b, _ := os.ReadFile(c.log)
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// waitEvent waits for the first logged event of kind.
func (c *acpClient) waitEvent(kind string) map[string]any {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, e := range c.events() {
			if e["event"] == kind {
				return e
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatalf("the ACP client logged no %s within 30s: %v", kind, c.events())
	return nil
}

// requests are the session/request_permission requests the client got;
// no message may have failed its schema check.
func (c *acpClient) requests() []map[string]any {
	c.t.Helper()
	var out []map[string]any
	for _, e := range c.events() {
		if e["event"] == "invalid" {
			c.t.Errorf("a message failed the SDK's schema: %v", e)
		}
		if m, _ := e["message"].(map[string]any); e["event"] == "received" && m["method"] == "session/request_permission" {
			out = append(out, m)
		}
	}
	return out
}

// checkRequest checks the one session/request_permission the client got.
func checkRequest(t *testing.T, c *acpClient, callID, out string) map[string]any {
	t.Helper()
	reqs := c.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d session/request_permission, want 1: %v", len(reqs), reqs)
	}
	req := reqs[0]
	p := req["params"].(map[string]any)
	tc := p["toolCall"].(map[string]any)
	if p["sessionId"] != "acp-sess-1" || tc["toolCallId"] != callID || tc["title"] != "write the output" || tc["kind"] != "execute" {
		t.Errorf("session/request_permission %v", req)
	}
	if cmd, _ := json.Marshal(tc["rawInput"]); string(cmd) != `{"command":["sh","-c","echo ran \u003e `+out+`/marker"]}` {
		t.Errorf("rawInput %s", cmd)
	}
	var kinds []string
	for _, o := range p["options"].([]any) {
		kinds = append(kinds, o.(map[string]any)["kind"].(string))
	}
	if !slices.Equal(kinds, []string{"allow_once", "reject_once"}) {
		t.Errorf("options %v, want exactly allow_once and reject_once", p["options"])
	}
	if e := c.waitEvent("valid"); e["id"] != req["id"] {
		t.Errorf("the SDK's schema check: %v", e)
	}
	return req
}

// TestServeACP: sbx serve --acp-socket asks the SDK's client with
// session/request_permission for a bound session's call; the call runs
// only when the client selects the allow_once option: rejecting, the
// cancelled outcome and an allow_always answer (an option sbx never
// offered) deny it.
func TestServeACP(t *testing.T) {
	for _, tt := range []struct {
		answer, outcome string
	}{
		{"allow", "allowed-once"},
		{"reject", "rejected"},
		{"cancel", "cancelled"},
		{"allow_always", "rejected"},
	} {
		t.Run(tt.answer, func(t *testing.T) {
			c := startACPClient(t, tt.answer)
			s := startServer(t, "--ephemeral", "--acp-socket", c.socket)
			s.ok("initialize", map[string]any{})
			ws := workspace(t)
			turn := s.session("s", ws, map[string]any{"preset": "auto", "acp_session_id": "acp-sess-1"})
			out := approvalTarget(t)
			m := s.get(s.start("exec", escalatingExec("s", turn, "c1", ws, out)))
			if tt.outcome == "allowed-once" {
				if m["error"] != nil || !markerWritten(out) {
					t.Fatalf("allow: %v ran=%v; stderr %s", m, markerWritten(out), s.stderr)
				}
			} else if code, kind, d := rpcError(t, m); code != -32004 || kind != "denied" || d["outcome"] != tt.outcome || markerWritten(out) {
				t.Fatalf("%s: %d %s %v ran=%v, want denied %s", tt.answer, code, kind, d, markerWritten(out), tt.outcome)
			}
			req := checkRequest(t, c, "c1", out)
			if e := c.waitEvent("answered"); e["requestId"] != req["id"] {
				t.Errorf("answered %v", e)
			}
		})
	}
}

// TestServeACPCancel: a call cancelled while the SDK's client is asked is
// cancelled; the client gets $/cancel_request with the request's id (its
// handler is aborted) and the call never runs.
func TestServeACPCancel(t *testing.T) {
	c := startACPClient(t, "hang")
	s := startServer(t, "--ephemeral", "--acp-socket", c.socket)
	s.ok("initialize", map[string]any{})
	ws := workspace(t)
	turn := s.session("s", ws, map[string]any{"preset": "auto", "acp_session_id": "acp-sess-1"})
	out := approvalTarget(t)
	pending := s.start("exec", escalatingExec("s", turn, "c1", ws, out))
	c.waitEvent("valid")
	s.ok("exec/cancel", map[string]any{"call_id": "c1"})
	if code, kind, d := rpcError(t, s.get(pending)); code != -32800 || kind != "cancelled" || d["outcome"] != "aborted_before_dispatch" {
		t.Errorf("cancelled during the ask: %d %s %v", code, kind, d)
	}
	req := checkRequest(t, c, "c1", out)
	if e := c.waitEvent("aborted"); e["requestId"] != req["id"] {
		t.Errorf("aborted %v, want the request %v", e, req["id"])
	}
	var cancels []any
	for _, e := range c.events() {
		if e["event"] == "valid" && e["method"] == "$/cancel_request" {
			cancels = append(cancels, e["requestId"])
		}
	}
	if len(cancels) != 1 || cancels[0] != req["id"] {
		t.Errorf("$/cancel_request %v, want one for %v", cancels, req["id"])
	}
	time.Sleep(200 * time.Millisecond)
	if markerWritten(out) {
		t.Error("a cancelled call ran")
	}
}

// TestServeACPFD: --acp-fd takes a connection the caller made; a session
// without acp_session_id is not asked over it (with the default waterfall,
// acp then client, and no client declaring approvals: unavailable).
func TestServeACPFD(t *testing.T) {
	c := startACPClient(t, "allow")
	conn, err := net.Dial("unix", c.socket)
	if err != nil {
		t.Fatal(err)
	}
	f, err := conn.(*net.UnixConn).File()
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	s := startServerFiles(t, []*os.File{f}, "--ephemeral", "--acp-fd", "3")
	f.Close()
	s.ok("initialize", map[string]any{})
	ws := workspace(t)
	turn := s.session("unbound", ws, map[string]any{"preset": "auto"})
	out := approvalTarget(t)
	if code, _, d := rpcError(t, s.get(s.start("exec", escalatingExec("unbound", turn, "c0", ws, out)))); code != -32004 || d["outcome"] != "unavailable" || markerWritten(out) {
		t.Fatalf("an unbound session's call: %d %v ran=%v", code, d, markerWritten(out))
	}
	turn = s.session("s", ws, map[string]any{"preset": "auto", "acp_session_id": "acp-sess-1"})
	if m := s.get(s.start("exec", escalatingExec("s", turn, "c1", ws, out))); m["error"] != nil || !markerWritten(out) {
		t.Fatalf("allow over --acp-fd: %v ran=%v; stderr %s", m, markerWritten(out), s.stderr)
	}
	checkRequest(t, c, "c1", out) // exactly one: the unbound call's was not sent
}
