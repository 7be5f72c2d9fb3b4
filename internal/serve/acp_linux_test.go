package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/journal"
)

// fakeACP is a scripted ACP client on the other end of a socketpair from
// an ACPAnswerer.
type fakeACP struct {
	t     *testing.T
	f     *os.File
	lines chan map[string]any
}

func newFakeACP(t *testing.T) (*fakeACP, *ACPAnswerer) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	sbxEnd, err := ACPFile(fds[0])
	if err != nil {
		t.Fatalf("ACPFile of a socketpair: %v", err)
	}
	unix.SetNonblock(fds[1], true) // pollable: Close ends the reader below
	theirs := os.NewFile(uintptr(fds[1]), "client-end")
	a := NewACPAnswerer(sbxEnd, 0, t.Logf)
	f := &fakeACP{t: t, f: theirs, lines: make(chan map[string]any, 64)}
	go func() {
		sc := bufio.NewScanner(theirs)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("sbx wrote a line that is not JSON: %q", sc.Text())
				continue
			}
			f.lines <- m
		}
		close(f.lines)
	}()
	t.Cleanup(func() { theirs.Close(); a.Close() })
	return f, a
}

// next waits for sbx's next message, which must be of method ("": a
// response).
func (f *fakeACP) next(method string) map[string]any {
	f.t.Helper()
	select {
	case m, ok := <-f.lines:
		if !ok {
			f.t.Fatalf("the connection ended, want %s", method)
		}
		if got, _ := m["method"].(string); got != method {
			f.t.Fatalf("got %v, want %s", m, method)
		}
		return m
	case <-time.After(10 * time.Second):
		f.t.Fatalf("no %s within 10s", method)
	}
	return nil
}

// none checks that sbx sends nothing within d.
func (f *fakeACP) none(d time.Duration) {
	f.t.Helper()
	select {
	case m, ok := <-f.lines:
		if ok {
			f.t.Errorf("unexpected message %v", m)
		}
	case <-time.After(d):
	}
}

func (f *fakeACP) send(line string) {
	f.t.Helper()
	if _, err := f.f.WriteString(line + "\n"); err != nil {
		f.t.Fatalf("write: %v", err)
	}
}

// reply answers request id with the raw JSON result.
func (f *fakeACP) reply(id any, result string) {
	idb, _ := json.Marshal(id)
	f.send(`{"jsonrpc": "2.0", "id": ` + string(idb) + `, "result": ` + result + `}`)
}

// acpServer starts a server whose waterfall is the ACP answerer, then
// next (which records that it was asked and rejects).
func acpServer(t *testing.T, opt Options) (*client, *fakeACP, chan Question) {
	t.Helper()
	f, a := newFakeACP(t)
	passed := make(chan Question, 8)
	next := Always{AnswererFunc(func(_ context.Context, q Question) (escalate.Outcome, error) {
		passed <- q
		return escalate.Rejected, nil
	})}
	opt.Answerer = Waterfall{a, next}
	return newClient(t, opt), f, passed
}

// TestACPAnswers: session/request_permission carries the call and exactly
// the two options; only the allow-once option selected runs the call;
// every other answer denies it, each with its outcome.
func TestACPAnswers(t *testing.T) {
	c, f, passed := acpServer(t, Options{})
	ws, turn := c.openTurn("s", map[string]any{"preset": "auto", "acp_session_id": "acp-1"})
	for _, tt := range []struct {
		name, result, outcome string
	}{
		{"allow once", `{"outcome": {"outcome": "selected", "optionId": "allow-once"}}`, "allowed-once"},
		{"allow once with _meta", `{"outcome": {"outcome": "selected", "optionId": "allow-once", "_meta": {"x": 1}}, "_meta": null}`, "allowed-once"},
		{"reject once", `{"outcome": {"outcome": "selected", "optionId": "reject-once"}}`, "rejected"},
		{"allow always", `{"outcome": {"outcome": "selected", "optionId": "allow-always"}}`, "rejected"},
		{"unknown option", `{"outcome": {"outcome": "selected", "optionId": "yes"}}`, "rejected"},
		{"option kind as id", `{"outcome": {"outcome": "selected", "optionId": "allow_once"}}`, "rejected"},
		{"cancelled", `{"outcome": {"outcome": "cancelled"}}`, "cancelled"},
		{"error response", "", "rejected"},
		{"unknown key", `{"outcome": {"outcome": "selected", "optionId": "allow-once", "scope": "session"}}`, "unavailable"},
		{"case variant", `{"outcome": {"outcome": "selected", "OptionId": "allow-once"}}`, "unavailable"},
		{"duplicate key", `{"outcome": {"outcome": "selected", "optionId": "reject-once", "optionId": "allow-once"}}`, "unavailable"},
		{"selected without option", `{"outcome": {"outcome": "selected"}}`, "unavailable"},
		{"cancelled with option", `{"outcome": {"outcome": "cancelled", "optionId": "allow-once"}}`, "unavailable"},
		{"unknown outcome", `{"outcome": {"outcome": "allowed"}}`, "unavailable"},
		{"flat outcome", `{"outcome": "selected", "optionId": "allow-once"}`, "unavailable"},
		{"null result", `null`, "unavailable"},
		{"not JSON-RPC 2.0", `line:{"jsonrpc": "1.0", "id": "ID", "result": {"outcome": {"outcome": "selected", "optionId": "allow-once"}}}`, "unavailable"},
		{"duplicate id", `line:{"jsonrpc": "2.0", "id": "x", "id": "ID", "result": {"outcome": {"outcome": "selected", "optionId": "allow-once"}}}`, "unavailable"},
		{"case-variant key", `line:{"jsonrpc": "2.0", "id": "ID", "RESULT": {"outcome": {"outcome": "selected", "optionId": "allow-once"}}}`, "unavailable"},
		{"result and error", `{"outcome": {"outcome": "selected", "optionId": "allow-once"}}, "error": {"code": 1, "message": "x"}`, "unavailable"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := t.TempDir()
			callID := "c-" + strings.ReplaceAll(tt.name, " ", "-")
			pending := c.start("exec", escalating("s", turn, callID, ws, out))
			req := f.next("session/request_permission")
			p := req["params"].(map[string]any)
			tc := p["toolCall"].(map[string]any)
			meta := p["_meta"].(map[string]any)["sbx"].(map[string]any)
			approval, _ := meta["approval_id"].(string)
			if req["jsonrpc"] != "2.0" || req["id"] != ACPRequestID(approval) || p["sessionId"] != "acp-1" ||
				tc["toolCallId"] != callID || tc["title"] != "write the output" || tc["kind"] != "execute" ||
				fmt.Sprint(tc["rawInput"]) != "map[command:[sh -c echo ran > "+out+"/marker]]" || meta["session_id"] != "s" {
				t.Fatalf("session/request_permission %v", req)
			}
			// The one question, as every answerer gets it (an addition of #28).
			if meta["cwd"] != ws || meta["new_permissions"] == nil || meta["additional_permissions"] == nil || meta["tool"] != "shell" {
				t.Errorf("_meta.sbx %v: want the whole question", meta)
			}
			if opts, _ := json.Marshal(p["options"]); string(opts) != `[{"kind":"allow_once","name":"Allow once","optionId":"allow-once"},{"kind":"reject_once","name":"Reject","optionId":"reject-once"}]` {
				t.Fatalf("options %s", opts)
			}
			switch {
			case tt.result == "":
				f.send(fmt.Sprintf(`{"jsonrpc": "2.0", "id": %q, "error": {"code": -32603, "message": "no"}}`, req["id"]))
			case strings.HasPrefix(tt.result, "line:"): // a whole line, its id ID
				f.send(strings.ReplaceAll(strings.TrimPrefix(tt.result, "line:"), "ID", req["id"].(string)))
			default:
				f.reply(req["id"], tt.result)
			}
			m := c.wait(pending)
			if tt.outcome == "allowed-once" {
				if m["error"] != nil || !ran(out) {
					t.Fatalf("allowed-once: %v ran=%v", m, ran(out))
				}
			} else if code, data := errorOf(t, "exec", m); code != CodeDenied || data["outcome"] != tt.outcome || ran(out) {
				t.Fatalf("%d %v ran=%v, want denied %s", code, data, ran(out), tt.outcome)
			}
			decided := c.recordData("s", journal.TypeApprovalDecided)
			if d := decided[len(decided)-1]; d["approval_id"] != approval || d["outcome"] != tt.outcome {
				t.Errorf("decided %v, want %s", d, tt.outcome)
			}
			// The answer is for this call only: nothing was stored.
			if g := c.recordData("s", journal.TypeGrantApplied); len(g) != 0 {
				t.Errorf("an ACP answer stored a grant: %v", g)
			}
		})
	}
	select {
	case q := <-passed:
		t.Errorf("a bound approval went down the waterfall: %+v", q)
	default:
	}
}

// TestACPBinding: only a session opened with acp_session_id is asked
// over ACP; another session's approval passes down the waterfall and the
// ACP client hears nothing. acp_session_id is decoded strictly and pinned
// in session/opened.
func TestACPBinding(t *testing.T) {
	c, f, passed := acpServer(t, Options{})
	ws, turn := c.openTurn("unbound", map[string]any{"preset": "auto"})
	out := t.TempDir()
	m := c.call("exec", escalating("unbound", turn, "c1", ws, out))
	if code, data := errorOf(t, "exec", m); code != CodeDenied || data["outcome"] != "rejected" {
		t.Fatalf("%d %v", code, data)
	}
	if q := <-passed; q.SessionID != "unbound" || q.ACPSessionID != "" {
		t.Errorf("passed %+v", q)
	}
	f.none(100 * time.Millisecond)

	for _, bad := range []map[string]any{
		{"acp_session_id": ""},
		{"acp_session_id": 5},
		{"ACP_SESSION_ID": "acp-1"},
	} {
		bad["cwd"] = ws
		if code, data := c.fail("session/open", bad); code != CodeInvalidParams {
			t.Errorf("session/open %v: %d %v", bad, code, data)
		}
	}
	line := fmt.Sprintf(`{"jsonrpc": "2.0", "id": "dup", "method": "session/open", "params": {"cwd": %q, "acp_session_id": "a", "acp_session_id": "b"}}`, ws)
	if code, _ := errorOf(t, "session/open", c.wait(c.sendLine("dup", line))); code != CodeInvalidParams && code != CodeInvalidRequest {
		t.Errorf("duplicate acp_session_id: %d", code)
	}
	c.ok("session/open", map[string]any{"session_id": "bound", "cwd": ws, "acp_session_id": "acp-7"})
	if r := c.recordData("bound", journal.TypeSessionOpened); len(r) != 1 || r[0]["acp_session_id"] != "acp-7" {
		t.Errorf("session/opened %v", r)
	}
	if r := c.recordData("unbound", journal.TypeSessionOpened); r[0]["acp_session_id"] != nil {
		t.Errorf("unbound session/opened %v", r)
	}

	// The binding survives a restart.
	srv := New(Options{OpenLog: (&MemLogs{}).Open, Logf: t.Logf})
	if problems := srv.Restore(replayed(c.logs, "bound")); len(problems) > 0 {
		t.Fatalf("restore: %v", problems)
	}
	if s := srv.sessions["bound"]; s == nil || s.opened().ACPSessionID != "acp-7" {
		t.Errorf("restored %+v", s)
	}

	// A question without a call_id is not claimed.
	var a *ACPAnswerer = c.srv.opt.Answerer.(Waterfall)[0].(*ACPAnswerer)
	if a.Claim(Question{ACPSessionID: "acp-7"}) || !a.Claim(Question{ACPSessionID: "acp-7", CallID: "c"}) {
		t.Error("Claim: a call_id and an acp_session_id are both needed")
	}
}

// TestACPCancel: a call cancelled or its turn ended while the ACP client
// is asked settles cancelled, withdraws the request with $/cancel_request
// {requestId}, and an answer after it is dropped.
func TestACPCancel(t *testing.T) {
	for _, how := range []string{"exec/cancel", "turn/end"} {
		t.Run(how, func(t *testing.T) {
			c, f, _ := acpServer(t, Options{})
			ws, turn := c.openTurn("s", map[string]any{"preset": "auto", "acp_session_id": "acp-1"})
			out := t.TempDir()
			pending := c.start("exec", escalating("s", turn, "c1", ws, out))
			req := f.next("session/request_permission")
			cancelAsk(t, c, how, turn, pending)
			w := f.next("$/cancel_request")
			if p := w["params"].(map[string]any); len(p) != 1 || p["requestId"] != req["id"] || w["id"] != nil {
				t.Errorf("$/cancel_request %v", w)
			}
			// What the SDK answers a cancelled request with, then a late allow.
			f.send(fmt.Sprintf(`{"jsonrpc": "2.0", "id": %q, "error": {"code": -32800, "message": "Request cancelled"}}`, req["id"]))
			f.reply(req["id"], `{"outcome": {"outcome": "selected", "optionId": "allow-once"}}`)
			time.Sleep(100 * time.Millisecond)
			if d := c.recordData("s", journal.TypeApprovalDecided); len(d) != 1 || d[0]["outcome"] != "cancelled" || ran(out) {
				t.Errorf("decided %v ran %v", d, ran(out))
			}
		})
	}
}

// TestACPTimeout: no answer within the answer timeout is unavailable; the
// request is withdrawn and a later answer is dropped.
func TestACPTimeout(t *testing.T) {
	c, f, _ := acpServer(t, Options{AnswerTimeout: 300 * time.Millisecond})
	ws, turn := c.openTurn("s", map[string]any{"preset": "auto", "acp_session_id": "acp-1"})
	out := t.TempDir()
	pending := c.start("exec", escalating("s", turn, "c1", ws, out))
	req := f.next("session/request_permission")
	code, data := errorOf(t, "exec", c.wait(pending))
	if code != CodeDenied || data["outcome"] != "unavailable" || ran(out) {
		t.Fatalf("%d %v ran=%v", code, data, ran(out))
	}
	if w := f.next("$/cancel_request"); w["params"].(map[string]any)["requestId"] != req["id"] {
		t.Errorf("$/cancel_request %v", w)
	}
	f.reply(req["id"], `{"outcome": {"outcome": "selected", "optionId": "allow-once"}}`)
	time.Sleep(100 * time.Millisecond)
	if d := c.recordData("s", journal.TypeApprovalDecided); len(d) != 1 || d[0]["outcome"] != "unavailable" || ran(out) {
		t.Errorf("decided %v ran %v", d, ran(out))
	}
}

// TestACPClosed: the client going away while asked is unavailable; after
// it, the ACP answerer claims nothing and approvals go down the waterfall.
// A request from the client gets method_not_found.
func TestACPClosed(t *testing.T) {
	c, f, passed := acpServer(t, Options{})
	ws, turn := c.openTurn("s", map[string]any{"preset": "auto", "acp_session_id": "acp-1"})
	f.send(`{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}`)
	if r := f.next(""); r["id"] != float64(1) || r["error"].(map[string]any)["code"] != float64(CodeMethodNotFound) {
		t.Errorf("reply to the client's request %v", r)
	}
	f.send(`{"jsonrpc": "2.0", "method": "session/update", "params": {}}`) // a notification: skipped
	out := t.TempDir()
	pending := c.start("exec", escalating("s", turn, "c1", ws, out))
	f.next("session/request_permission")
	f.f.Close()
	code, data := errorOf(t, "exec", c.wait(pending))
	if code != CodeDenied || data["outcome"] != "unavailable" || ran(out) {
		t.Fatalf("%d %v ran=%v", code, data, ran(out))
	}
	m := c.call("exec", escalating("s", turn, "c2", ws, out))
	if code, data := errorOf(t, "exec", m); code != CodeDenied || data["outcome"] != "rejected" {
		t.Fatalf("after the close: %d %v", code, data)
	}
	if q := <-passed; q.CallID != "c2" {
		t.Errorf("passed %+v", q)
	}
	if got := c.records("s"); !slices.Contains(got, journal.TypeApprovalDecided) {
		t.Errorf("records %v", got)
	}
}

// TestACPFile: --acp-fd takes only a connected stream socket past stderr,
// and makes it close-on-exec.
func TestACPFile(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for _, fd := range []int{1, int(r.Fd()), 999} {
		if _, err := ACPFile(fd); err == nil {
			t.Errorf("ACPFile(%d): accepted", fd)
		}
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[1])
	if _, err := ACPFile(fds[0]); err == nil || !strings.Contains(err.Error(), "stream") {
		t.Errorf("a datagram socket: %v", err)
	}
	unix.Close(fds[0])
	if fds, err = unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0); err != nil { // no CLOEXEC: as inherited
		t.Fatal(err)
	}
	defer unix.Close(fds[1])
	f, err := ACPFile(fds[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if flags, err := unix.FcntlInt(f.Fd(), unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC == 0 {
		t.Errorf("fd flags %#x %v: want FD_CLOEXEC", flags, err)
	}
	if _, err := DialACP(t.TempDir() + "/none.sock"); err == nil {
		t.Error("DialACP of no socket: connected")
	}
}

// TestACPShutdown: the server's shutdown, and closing the ACP answerer
// (sbx serve's last step), withdraw a pending session/request_permission
// with $/cancel_request before the connection ends; the approval settles
// cancelled.
func TestACPShutdown(t *testing.T) {
	for _, how := range []string{"shutdown", "close"} {
		t.Run(how, func(t *testing.T) {
			f, a := newFakeACP(t)
			c := newClient(t, Options{Answerer: Waterfall{a}})
			ws, turn := c.openTurn("s", map[string]any{"preset": "auto", "acp_session_id": "acp-1"})
			out := t.TempDir()
			pending := c.start("exec", escalating("s", turn, "c1", ws, out))
			req := f.next("session/request_permission")
			if how == "shutdown" {
				c.ok("shutdown", nil)
			} else {
				a.Close()
			}
			if w := f.next("$/cancel_request"); w["params"].(map[string]any)["requestId"] != req["id"] {
				t.Errorf("$/cancel_request %v", w)
			}
			if code, data := errorOf(t, "exec", c.wait(pending)); code != CodeDenied || data["outcome"] != "cancelled" || ran(out) {
				t.Errorf("%d %v ran=%v", code, data, ran(out))
			}
			a.Close()
			if m, ok := <-f.lines; ok {
				t.Errorf("after the withdrawal: %v", m)
			}
		})
	}
}
