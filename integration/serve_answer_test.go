//go:build linux

package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The answerers of sbx serve (docs/serve.md, "Answerers") over the real
// binary: the client answerer on stdio and on the socket, and the
// --answerers flag.

var approvalsInit = map[string]any{"capabilities": map[string]any{"approvals": true}}

// approvalTarget is a directory outside every writable root, which an
// escalating call writes its marker into once approved.
func approvalTarget(t *testing.T) string {
	t.Helper()
	out := outsidePath(t)
	if err := os.Mkdir(out, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(out, 0o777)
	return out
}

func escalatingExec(session, turn, callID, ws, out string) map[string]any {
	p := execParams(session, turn, callID, ws, "sh", "-c", "echo ran > "+out+"/marker")
	p["sandbox_permissions"], p["justification"] = "with_additional_permissions", "write the output"
	p["additional_permissions"] = map[string]any{"file_system": map[string]any{"write": []string{out}}}
	return p
}

func markerWritten(out string) bool {
	_, err := os.Stat(filepath.Join(out, "marker"))
	return err == nil
}

// nextNote waits for the next message of method in notes (requests and
// notifications of the server), skipping others.
func nextNote(t *testing.T, notes chan map[string]any, method string) map[string]any {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case m := <-notes:
			if m["method"] == method {
				return m
			}
		case <-deadline:
			t.Fatalf("no %s within 30s", method)
		}
	}
}

func answerLine(id any, session, approval, outcome string) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id,
		"result": map[string]any{"session_id": session, "approval_id": approval, "outcome": outcome}})
	return string(b)
}

// TestServeClientAnswerer: over stdio, a client that declares approvals is
// asked with approval/requested; each refused response kind is refused
// with its approval/response_refused and changes nothing; allowed-once runs
// the call, rejected does not; a cancellation withdraws the request and a
// timeout denies it, and answers after either are refused.
func TestServeClientAnswerer(t *testing.T) {
	s := startServer(t, "--answer-timeout", "2s")
	if caps := s.ok("initialize", approvalsInit)["capabilities"].(map[string]any); caps["approvals"] != true {
		t.Fatalf("capabilities %v", caps)
	}
	ws := workspace(t)
	turn := s.session("s", ws, map[string]any{"preset": "auto"})
	s.ok("session/open", map[string]any{"session_id": "other", "cwd": ws})
	out := approvalTarget(t)
	send := func(line string) { io.WriteString(s.in, line+"\n") }
	refused := func(kind string) {
		t.Helper()
		if p := nextNote(t, s.notes, "approval/response_refused")["params"].(map[string]any); p["kind"] != kind {
			t.Errorf("refusal %v, want %s", p, kind)
		}
	}

	pending := s.start("exec", escalatingExec("s", turn, "c1", ws, out))
	req := nextNote(t, s.notes, "approval/requested")
	id, params := req["id"].(string), req["params"].(map[string]any)
	approval, _ := params["approval_id"].(string)
	if id != "approval-"+approval || params["session_id"] != "s" || params["call_id"] != "c1" || params["tool_name"] != "shell" ||
		params["reason"] != "write the output" || fmt.Sprint(params["command"]) != "[sh -c echo ran > "+out+"/marker]" {
		t.Fatalf("approval/requested %v", req)
	}
	for _, tt := range []struct{ name, kind, line string }{
		{"malformed", "malformed", fmt.Sprintf(`{"jsonrpc": "2.0", "id": %q, "result": {"session_id": "s", "approval_id": %q, "outcome": "rejected", "outcome": "allowed-once"}}`, id, approval)},
		{"foreign session", "foreign_session", answerLine(id, "other", approval, "allowed-once")},
		{"foreign approval", "foreign_approval", answerLine(id, "s", "a-other", "allowed-once")},
		{"outcome cancelled", "invalid_outcome", answerLine(id, "s", approval, "cancelled")},
		{"unknown rpc id", "unknown_rpc_id", answerLine("approval-nope", "s", approval, "allowed-once")},
	} {
		send(tt.line)
		refused(tt.kind)
		if markerWritten(out) {
			t.Fatalf("%s: the call ran", tt.name)
		}
	}
	send(answerLine(id, "s", approval, "allowed-once"))
	if m := s.get(pending); m["error"] != nil || !markerWritten(out) {
		t.Fatalf("allowed-once: %v ran=%v", m, markerWritten(out))
	}
	send(answerLine(id, "s", approval, "allowed-once"))
	refused("expired")
	os.Remove(filepath.Join(out, "marker"))

	pending = s.start("exec", escalatingExec("s", turn, "c2", ws, out))
	req = nextNote(t, s.notes, "approval/requested")
	send(answerLine(req["id"], "s", req["params"].(map[string]any)["approval_id"].(string), "rejected"))
	if code, kind, d := rpcError(t, s.get(pending)); code != -32004 || kind != "denied" || d["outcome"] != "rejected" || markerWritten(out) {
		t.Errorf("rejected: %d %s %v ran=%v", code, kind, d, markerWritten(out))
	}

	pending = s.start("exec", escalatingExec("s", turn, "c3", ws, out))
	req = nextNote(t, s.notes, "approval/requested")
	s.ok("exec/cancel", map[string]any{"call_id": "c3"})
	if code, kind, d := rpcError(t, s.get(pending)); code != -32800 || kind != "cancelled" || d["outcome"] != "aborted_before_dispatch" {
		t.Errorf("cancelled during the ask: %d %s %v", code, kind, d)
	}
	if w := nextNote(t, s.notes, "$/cancelRequest")["params"].(map[string]any); w["id"] != req["id"] {
		t.Errorf("$/cancelRequest %v, want id %v", w, req["id"])
	}
	send(answerLine(req["id"], "s", req["params"].(map[string]any)["approval_id"].(string), "allowed-once"))
	refused("expired")

	pending = s.start("exec", escalatingExec("s", turn, "c4", ws, out))
	req = nextNote(t, s.notes, "approval/requested")
	if code, kind, d := rpcError(t, s.get(pending)); code != -32004 || kind != "denied" || d["outcome"] != "unavailable" {
		t.Errorf("timed out: %d %s %v", code, kind, d)
	}
	send(answerLine(req["id"], "s", req["params"].(map[string]any)["approval_id"].(string), "allowed-once"))
	refused("late")
	if markerWritten(out) {
		t.Error("a call ran after a rejection, a cancellation or a timeout")
	}
	if !strings.Contains(s.stderr.String(), "refused a response") {
		t.Errorf("the refusals were not logged: %s", s.stderr)
	}
}

// sockPeer is a client of sbx serve --listen.
type sockPeer struct {
	t     *testing.T
	c     net.Conn
	next  int
	resp  chan map[string]any
	notes chan map[string]any
	gone  chan struct{}
}

func dialServe(t *testing.T, path string) *sockPeer {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	p := &sockPeer{t: t, c: c, resp: make(chan map[string]any, 64), notes: make(chan map[string]any, 64), gone: make(chan struct{})}
	go func() {
		defer close(p.gone)
		sc := bufio.NewScanner(c)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				t.Errorf("not JSON: %q", sc.Text())
				continue
			}
			if _, ok := m["method"]; ok {
				p.notes <- m
			} else {
				p.resp <- m
			}
		}
	}()
	t.Cleanup(func() { c.Close() })
	return p
}

func (p *sockPeer) send(line string) {
	if _, err := io.WriteString(p.c, line+"\n"); err != nil {
		p.t.Fatalf("write: %v", err)
	}
}

// start sends a request; its response is the next on resp (one request
// in flight at a time per peer).
func (p *sockPeer) start(method string, params any) {
	p.next++
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": p.next, "method": method, "params": params})
	p.send(string(b))
}

func (p *sockPeer) get() map[string]any {
	p.t.Helper()
	select {
	case m := <-p.resp:
		return m
	case <-time.After(30 * time.Second):
		p.t.Fatal("no response within 30s")
	}
	return nil
}

func (p *sockPeer) ok(method string, params any) map[string]any {
	p.t.Helper()
	p.start(method, params)
	m := p.get()
	if m["error"] != nil {
		p.t.Fatalf("%s: %v", method, m["error"])
	}
	r, _ := m["result"].(map[string]any)
	return r
}

// TestServeClientReconnect: over the socket, a pending approval survives
// the disconnect of the client asked; the client that connects again and
// names the session is sent it with the same rpc id, and its allowed-once runs the call, which
// another connection is waiting for.
func TestServeClientReconnect(t *testing.T) {
	dir, err := os.MkdirTemp("", "sbx-serve-answer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "sbx.sock")
	cmd := exec.Command(sbxBin, "serve", "--listen", sock, "--ephemeral", "--answerers", "client")
	cmd.Env = baseEnv()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
	waitForPath(t, sock)

	runner, asked, first, out := askedApproval(t, sock)
	asked.c.Close()
	<-asked.gone
	time.Sleep(100 * time.Millisecond)
	if markerWritten(out) {
		t.Fatal("ran before any answer")
	}
	again := dialServe(t, sock)
	again.ok("initialize", approvalsInit)
	again.ok("session/permissions", map[string]any{"session_id": "s"})
	second := nextNote(t, again.notes, "approval/requested")
	if second["id"] != first["id"] || fmt.Sprint(second["params"]) != fmt.Sprint(first["params"]) {
		t.Fatalf("resent %v, first %v", second, first)
	}
	again.send(answerLine(second["id"], "s", second["params"].(map[string]any)["approval_id"].(string), "allowed-once"))
	if m := runner.get(); m["error"] != nil || !markerWritten(out) {
		t.Fatalf("after the reconnect: %v ran=%v; stderr %s", m, markerWritten(out), stderr.String())
	}
	select {
	case n := <-runner.notes:
		t.Errorf("a connection that did not declare approvals got %v", n)
	default:
	}
}

// askedApproval connects a runner and an approval client to the server on
// sock, opens session s and a turn on the runner, binds the client to the
// session (by naming it), and starts call c1, which escalates a write to
// out: it returns once the client got the approval/requested, with it.
func askedApproval(t *testing.T, sock string) (runner, asked *sockPeer, req map[string]any, out string) {
	t.Helper()
	runner = dialServe(t, sock)
	runner.ok("initialize", nil)
	asked = dialServe(t, sock)
	asked.ok("initialize", approvalsInit)
	ws := workspace(t)
	runner.ok("session/open", map[string]any{"session_id": "s", "cwd": ws, "preset": "auto"})
	turn := runner.ok("turn/begin", map[string]any{"session_id": "s"})["turn_id"].(string)
	// The answering client is the session's once it names it.
	asked.ok("session/permissions", map[string]any{"session_id": "s"})
	out = approvalTarget(t)
	runner.start("exec", escalatingExec("s", turn, "c1", ws, out))
	return runner, asked, nextNote(t, asked.notes, "approval/requested"), out
}

// TestServeAnswerersRefused: a bad --answerers is 125, naming it.
func TestServeAnswerersRefused(t *testing.T) {
	for _, args := range [][]string{
		{"--answerers", "client,acp"},
		{"--answerers", "terminal,terminal"},
		{"--answerers", "approver"},
	} {
		cmd := exec.Command(sbxBin, append([]string{"serve", "--ephemeral"}, args...)...)
		cmd.Env = baseEnv()
		b, err := cmd.CombinedOutput()
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 125 || !strings.Contains(string(b), "--answerers") {
			t.Errorf("%v: %v %s", args, err, b)
		}
	}
}

// TestServeCloseSession: over the socket, session/close from the
// answering connection settles the approval another connection's call
// waits for cancelled (withdrawn with $/cancelRequest), the call is
// aborted before dispatch, and the session is unknown afterwards; a
// server restarted on the same state directory does not rebuild it, and
// sbx log verify accepts the log that ends with session/closed.
func TestServeCloseSession(t *testing.T) {
	dir, err := os.MkdirTemp("", "sbx-serve-close-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	state := filepath.Join(dir, "state")
	serveOn := func(sock string) *exec.Cmd {
		cmd := exec.Command(sbxBin, "serve", "--listen", sock, "--state-dir", state, "--answerers", "client")
		cmd.Env = baseEnv()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
		waitForPath(t, sock)
		return cmd
	}
	first := serveOn(filepath.Join(dir, "a.sock"))
	runner, asked, req, out := askedApproval(t, filepath.Join(dir, "a.sock"))
	asked.start("session/close", map[string]any{"session_id": "s"})
	if m := asked.get(); m["error"] != nil || m["result"] != nil {
		t.Fatalf("session/close: %v", m)
	}
	if w := nextNote(t, asked.notes, "$/cancelRequest")["params"].(map[string]any); w["id"] != req["id"] {
		t.Errorf("$/cancelRequest %v, want %v", w, req["id"])
	}
	m := runner.get()
	if e, _ := m["error"].(map[string]any); e == nil || e["data"].(map[string]any)["outcome"] != "aborted_before_dispatch" || markerWritten(out) {
		t.Fatalf("the call: %v ran=%v", m, markerWritten(out))
	}
	runner.start("session/permissions", map[string]any{"session_id": "s"})
	if e, _ := runner.get()["error"].(map[string]any); e == nil || e["data"].(map[string]any)["kind"] != "unknown_session" {
		t.Errorf("after the close: %v", e)
	}
	first.Process.Signal(syscall.SIGTERM)
	first.Wait()

	serveOn(filepath.Join(dir, "b.sock"))
	again := dialServe(t, filepath.Join(dir, "b.sock"))
	again.ok("initialize", nil)
	again.start("session/permissions", map[string]any{"session_id": "s"})
	if e, _ := again.get()["error"].(map[string]any); e == nil || e["data"].(map[string]any)["kind"] != "unknown_session" {
		t.Errorf("a restarted server rebuilt the closed session: %v", e)
	}
	if v := sbx(t, opts{args: []string{"log", "verify", state}}); v.code != 0 {
		t.Errorf("sbx log verify: exit %d\nstdout: %s\nstderr: %s", v.code, v.stdout, v.stderr)
	}
	show := sbx(t, opts{args: []string{"log", "show", "--json", state}})
	for _, typ := range []string{`"approval/decided"`, `"cancelled"`, `"turn/ended"`, `"session/closed"`} {
		if !strings.Contains(show.stdout, typ) {
			t.Errorf("sbx log show has no %s:\n%s", typ, show.stdout)
		}
	}
}
