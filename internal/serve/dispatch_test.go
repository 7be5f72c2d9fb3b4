package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestMethodTable: every row is one kind of method, names are unique, and
// Methods() (initialize's capabilities.methods) is derived from the rows
// in the order clients have always been given.
func TestMethodTable(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range methodTable {
		kinds := 0
		for _, set := range []bool{m.unary != nil, m.stream != nil, m.exit} {
			if set {
				kinds++
			}
		}
		if kinds != 1 {
			t.Errorf("%s: %d of unary, stream and exit set, want exactly one", m.name, kinds)
		}
		if seen[m.name] {
			t.Errorf("%s: two rows", m.name)
		}
		seen[m.name] = true
		if methodIndex[m.name] == nil || methodIndex[m.name].name != m.name {
			t.Errorf("%s: not indexed", m.name)
		}
	}
	want := []string{"initialize", "session/open", "session/set_preset", "session/permissions", "session/close", "turn/begin", "turn/end",
		"grants/apply", "exec", "exec/cancel", "call/status", "$/cancelRequest", "shutdown", "exit"}
	if got := Methods(); !slices.Equal(got, want) {
		t.Errorf("Methods() = %q, want %q", got, want)
	}
}

// TestMethodTableDocumented: a method in the table is in docs/serve.md's
// Methods table, and the docs name no method the server does not have.
// (docs/schema holds the exec request and result schemas only: no
// method list to check there.)
func TestMethodTableDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/serve.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "\n## Methods\n")
	if start < 0 {
		t.Fatal(`docs/serve.md has no "## Methods" section`)
	}
	section := doc[start+1:]
	if end := strings.Index(section[1:], "\n## "); end >= 0 {
		section = section[:end+1]
	}
	row := regexp.MustCompile("(?m)^\\| `([^`]+)` \\|")
	documented := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		documented[m[1]] = true
	}
	for _, name := range Methods() {
		if !documented[name] {
			t.Errorf("method %s is in the method table but not in docs/serve.md's Methods table", name)
		}
		delete(documented, name)
	}
	for name := range documented {
		t.Errorf("docs/serve.md's Methods table has %s, which the method table lacks", name)
	}
}

// dispatchConn is a connection writing to a buffer, with the server's log
// kept, to call dispatch directly with rows of a test's own.
type dispatchConn struct {
	*conn
	buf  *bytes.Buffer
	mu   sync.Mutex
	logs []string
}

func newDispatchConn(t *testing.T) *dispatchConn {
	d := &dispatchConn{buf: &bytes.Buffer{}}
	srv := New(Options{Logf: func(format string, args ...any) {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.logs = append(d.logs, fmt.Sprintf(format, args...))
	}})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	d.conn = &conn{srv: srv, ctx: ctx, out: &lineWriter{w: d.buf, max: DefaultMaxMessage}, requests: map[string]*runningCall{}}
	return d
}

// responses waits for the connection's later functions and returns what
// it wrote, one decoded message a line.
func (d *dispatchConn) responses(t *testing.T) []map[string]any {
	t.Helper()
	d.wg.Wait()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(d.buf.Bytes()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

func (d *dispatchConn) logged(substr string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, l := range d.logs {
		if strings.Contains(l, substr) {
			return true
		}
	}
	return false
}

// TestReplierExactlyOnce: whatever a handler does, its request gets one
// response: a handler that returns without replying (or whose later
// function does) is answered internal and logged as a bug, a second
// reply is logged and never written, and a notification gets none.
func TestReplierExactlyOnce(t *testing.T) {
	id := json.RawMessage(`7`)
	for _, tt := range []struct {
		name string
		m    method
		id   json.RawMessage
		// want is the response's result, or its error's code when code
		// is set; none: no response at all.
		want any
		code int
		none bool
		log  string
	}{
		{name: "unary result", m: method{unary: func(*conn, context.Context, json.RawMessage) (any, error) { return map[string]any{"a": 1.0}, nil }},
			id: id, want: map[string]any{"a": 1.0}},
		{name: "unary null result", m: method{unary: func(*conn, context.Context, json.RawMessage) (any, error) { return nil, nil }}, id: id, want: nil},
		{name: "unary error object", m: method{unary: func(*conn, context.Context, json.RawMessage) (any, error) { return nil, required("cwd") }},
			id: id, code: CodeInvalidParams},
		{name: "unary plain error is internal", m: method{unary: func(*conn, context.Context, json.RawMessage) (any, error) { return nil, errors.New("boom") }},
			id: id, code: CodeInternal},
		{name: "typed nil error is no error", m: method{unary: func(*conn, context.Context, json.RawMessage) (any, error) {
			var e *Error
			return "ok", e
		}}, id: id, want: "ok"},
		{name: "unary notification", m: method{unary: func(*conn, context.Context, json.RawMessage) (any, error) { return "ok", nil }}, none: true},
		{name: "stream replies", m: method{stream: func(_ *conn, _ context.Context, _ json.RawMessage, r *replier) error {
			r.reply("ok", nil)
			return nil
		}}, id: id, want: "ok"},
		{name: "stream returns an error", m: method{stream: func(*conn, context.Context, json.RawMessage, *replier) error { return required("key") }},
			id: id, code: CodeInvalidParams},
		{name: "stream replies later", m: method{stream: func(_ *conn, _ context.Context, _ json.RawMessage, r *replier) error {
			r.later(func() { r.reply("later", nil) })
			return nil
		}}, id: id, want: "later"},
		{name: "stream returns without replying", m: method{stream: func(*conn, context.Context, json.RawMessage, *replier) error { return nil }},
			id: id, code: CodeInternal, log: "the handler returned without replying"},
		{name: "later function returns without replying", m: method{stream: func(_ *conn, _ context.Context, _ json.RawMessage, r *replier) error {
			r.later(func() {})
			return nil
		}}, id: id, code: CodeInternal, log: "its later function returned without replying"},
		{name: "stream replies twice", m: method{stream: func(_ *conn, _ context.Context, _ json.RawMessage, r *replier) error {
			r.reply("first", nil)
			r.reply("second", nil)
			return nil
		}}, id: id, want: "first", log: "a second reply, dropped"},
		{name: "stream replies, then returns an error", m: method{stream: func(_ *conn, _ context.Context, _ json.RawMessage, r *replier) error {
			r.reply("first", nil)
			return errors.New("late")
		}}, id: id, want: "first", log: "a second reply, dropped"},
		{name: "stream notification without reply", m: method{stream: func(*conn, context.Context, json.RawMessage, *replier) error { return nil }},
			none: true, log: "the handler returned without replying"},
		{name: "needsID notification is not run", m: method{needsID: true, stream: func(*conn, context.Context, json.RawMessage, *replier) error {
			panic("ran")
		}}, none: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := newDispatchConn(t)
			tt.m.name = "test/" + tt.name
			d.dispatch(&tt.m, tt.id, json.RawMessage(`{}`))
			got := d.responses(t)
			if tt.log != "" && !d.logged(tt.log) {
				t.Errorf("not logged %q: %q", tt.log, d.logs)
			}
			if tt.none {
				if len(got) != 0 {
					t.Fatalf("a notification got %v", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("%d responses, want exactly one: %v", len(got), got)
			}
			r := got[0]
			if r["id"] != 7.0 || r["jsonrpc"] != "2.0" {
				t.Errorf("envelope: %v", r)
			}
			if tt.code != 0 {
				e, _ := r["error"].(map[string]any)
				if e == nil || e["code"] != float64(tt.code) {
					t.Errorf("got %v, want error code %d", r, tt.code)
				}
				if _, ok := r["result"]; ok {
					t.Errorf("both result and error: %v", r)
				}
				return
			}
			res, ok := r["result"]
			if !ok || r["error"] != nil {
				t.Fatalf("got %v, want result %v", r, tt.want)
			}
			if fmt.Sprint(res) != fmt.Sprint(tt.want) {
				t.Errorf("result %v, want %v", res, tt.want)
			}
		})
	}
}

// TestNotificationsGetNoReply: a notification is never answered, not even
// with an error (JSON-RPC 2.0: "The Server MUST NOT reply to a
// Notification"); initialize and shutdown once answered bad params with a
// null-id error. The harness fails a response nothing waits for.
func TestNotificationsGetNoReply(t *testing.T) {
	c := newClient(t, Options{})
	bad := map[string]any{"capabilities": 5, "session_id": 5, "id": map[string]any{}}
	for _, name := range Methods() {
		if name != "exit" {
			c.notify(name, bad)
		}
	}
	// Still initialized and serving: the responses to the notifications,
	// had there been any, came before this one.
	c.ok("session/open", map[string]any{"session_id": "s", "cwd": t.TempDir()})
}
