package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/sbx-sandbox/sbx/internal/enforce/host"
	"github.com/sbx-sandbox/sbx/internal/journal"
)

func init() {
	// As cmd/sbx does: the stage of an unprivileged launch is this test
	// binary re-executed, and its main goroutine must stay on the main
	// thread.
	runtime.LockOSThread()
}

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == host.StageCommand {
		os.Exit(host.StageMain())
	}
	os.Exit(m.Run())
}

// client talks to a Server over pipes, as a client would over stdio.
type client struct {
	t    testing.TB
	w    *io.PipeWriter
	mu   sync.Mutex
	next int
	// waiting are the requests sent, by id, until their response.
	waiting map[string]chan map[string]any
	notes   chan map[string]any
	done    chan error // ServeConn's return
	logs    *MemLogs
	srv     *Server
}

// newClient starts a server with opt (its logs in memory) and returns an
// initialized client.
func newClient(t *testing.T, opt Options) *client {
	t.Helper()
	c := startClient(t, opt)
	c.ok("initialize", map[string]any{})
	return c
}

// newClientB is newClient for a benchmark.
func newClientB(b *testing.B) *client {
	c := connect(b, New(Options{Logf: b.Logf}), &MemLogs{})
	c.ok("initialize", map[string]any{})
	return c
}

func startClient(t *testing.T, opt Options) *client {
	t.Helper()
	logs := &MemLogs{}
	if opt.OpenLog == nil {
		opt.OpenLog = logs.Open
	}
	if opt.Logf == nil {
		opt.Logf = t.Logf
	}
	srv := New(opt)
	return connect(t, srv, logs)
}

func connect(t testing.TB, srv *Server, logs *MemLogs) *client {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &client{t: t, w: inW, waiting: map[string]chan map[string]any{}, notes: make(chan map[string]any, 1024),
		done: make(chan error, 1), logs: logs, srv: srv}
	go func() {
		err := srv.ServeConn(context.Background(), inR, outW)
		outW.Close()
		c.done <- err
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 256<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("server wrote a line that is not JSON: %q", sc.Text())
				continue
			}
			if _, isNote := m["method"]; isNote {
				c.notes <- m
				continue
			}
			id := fmt.Sprint(m["id"])
			c.mu.Lock()
			ch := c.waiting[id]
			delete(c.waiting, id)
			c.mu.Unlock()
			if ch == nil {
				t.Errorf("response to no request: %s", sc.Text())
				continue
			}
			ch <- m
		}
	}()
	t.Cleanup(func() { inW.Close() })
	return c
}

// send writes a raw line; id is what the response will carry ("" for a
// notification or a line without an id: then nothing waits for it).
func (c *client) sendLine(id, line string) chan map[string]any {
	ch := make(chan map[string]any, 1)
	if id != "" {
		c.mu.Lock()
		c.waiting[id] = ch
		c.mu.Unlock()
	}
	if _, err := io.WriteString(c.w, line+"\n"); err != nil {
		c.t.Fatalf("write: %v", err)
	}
	return ch
}

// start sends a request and returns where its response comes.
func (c *client) start(method string, params any) chan map[string]any {
	c.mu.Lock()
	c.next++
	id := c.next
	c.mu.Unlock()
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		c.t.Fatal(err)
	}
	return c.sendLine(fmt.Sprint(id), string(b))
}

// lastID is the id of the last request started.
func (c *client) lastID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.next
}

// wait waits for a response.
func (c *client) wait(ch chan map[string]any) map[string]any {
	c.t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(30 * time.Second):
		c.t.Fatal("no response within 30s")
	}
	return nil
}

// call sends a request and waits for its response.
func (c *client) call(method string, params any) map[string]any {
	c.t.Helper()
	return c.wait(c.start(method, params))
}

// ok calls and returns the result, failing on an error.
func (c *client) ok(method string, params any) map[string]any {
	c.t.Helper()
	m := c.call(method, params)
	if m["error"] != nil {
		c.t.Fatalf("%s: error %v", method, m["error"])
	}
	r, _ := m["result"].(map[string]any)
	return r
}

// fail calls and returns the error's code and data, failing on a result.
func (c *client) fail(method string, params any) (int, map[string]any) {
	c.t.Helper()
	return errorOf(c.t, method, c.call(method, params))
}

func errorOf(t testing.TB, method string, m map[string]any) (int, map[string]any) {
	t.Helper()
	e, ok := m["error"].(map[string]any)
	if !ok {
		t.Fatalf("%s: want an error, got %v", method, m)
	}
	data, _ := e["data"].(map[string]any)
	return int(e["code"].(float64)), data
}

func (c *client) notify(method string, params any) {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
	c.sendLine("", string(b))
}

// records are the types of a session's records, in order.
func (c *client) records(session string) []string {
	var out []string
	for _, r := range c.logs.Get(session).Records() {
		out = append(out, r.Type)
	}
	return out
}

// recordData decodes the data of the session's records of typ.
func (c *client) recordData(session, typ string) []map[string]any {
	var out []map[string]any
	for _, r := range c.logs.Get(session).Records() {
		if r.Type == typ {
			var m map[string]any
			json.Unmarshal(r.Data, &m)
			out = append(out, m)
		}
	}
	return out
}

// openTurn opens a session on a fresh workspace and a turn in it.
func (c *client) openTurn(id string, params map[string]any) (ws, turn string) {
	c.t.Helper()
	ws = c.t.TempDir()
	params["session_id"], params["cwd"] = id, ws
	c.ok("session/open", params)
	return ws, c.ok("turn/begin", map[string]any{"session_id": id})["turn_id"].(string)
}

var _ = journal.Record{}
