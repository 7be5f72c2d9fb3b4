// Package rpc is what the bench programs share: a JSON-RPC client of
// sbx serve (stdio or a --listen socket) that opens sessions and times
// exec of a command, and a series of timings with its quantiles.
package rpc

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Series is one command's timings, in ms.
type Series struct {
	Name string
	Argv []string
	mu   sync.Mutex
	MS   []float64
}

// Add adds one timing.
func (s *Series) Add(d time.Duration) {
	s.mu.Lock()
	s.MS = append(s.MS, float64(d.Nanoseconds())/1e6)
	s.mu.Unlock()
}

// Len is the number of timings.
func (s *Series) Len() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.MS) }

// Quantile is the q quantile (0.5: the median), in ms.
func (s *Series) Quantile(q float64) float64 {
	v := slices.Clone(s.MS)
	slices.Sort(v)
	if len(v) == 0 {
		return 0
	}
	return v[min(len(v)-1, int(q*float64(len(v))))]
}

// Mean is the mean, in ms.
func (s *Series) Mean() float64 {
	t := 0.0
	for _, x := range s.MS {
		t += x
	}
	return t / float64(len(s.MS))
}

// Command is argv run in dir.
func Command(argv []string, dir string) *exec.Cmd {
	c := exec.Command(argv[0], argv[1:]...)
	c.Dir = dir
	return c
}

// TimeRun runs argv in dir and returns its wall time.
func TimeRun(argv []string, dir string) (time.Duration, error) {
	c := Command(argv, dir)
	start := time.Now()
	err := c.Run()
	return time.Since(start), err
}

// Client is one JSON-RPC connection to the server; copies of it share the
// connection (and its request ids), each with its own session.
type Client struct {
	W               io.Writer
	R               *bufio.Reader
	Next            *int // shared by the sessions of one connection
	SessionID, Turn string
	WS              string
	Extra           map[string]any // more exec params
	// Last is the result of the last exec.
	Last map[string]any
}

// NewClient is a client of the connection w (requests), r (responses).
func NewClient(w io.Writer, r io.Reader) *Client {
	return &Client{W: w, R: bufio.NewReaderSize(r, 1<<20), Next: new(int)}
}

// Call makes one request and returns its result.
func (c *Client) Call(method string, params any) (map[string]any, error) {
	*c.Next++
	id := *c.Next
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if _, err := c.W.Write(append(b, '\n')); err != nil {
		return nil, err
	}
	for {
		line, err := c.R.ReadBytes('\n')
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			return nil, err
		}
		if m["id"] == float64(id) {
			if m["error"] != nil {
				return nil, fmt.Errorf("%s: %v", method, m["error"])
			}
			r, _ := m["result"].(map[string]any)
			return r, nil
		}
	}
}

// Session initializes the connection and opens an auto session in ws.
func (c *Client) Session(ws string) (*Client, error) {
	if _, err := c.Call("initialize", map[string]any{}); err != nil {
		return nil, err
	}
	return c, c.Open(ws, "auto")
}

// Open opens a session with preset and a turn in it.
func (c *Client) Open(ws, preset string) error {
	s, err := c.Call("session/open", map[string]any{"cwd": ws, "preset": preset})
	if err != nil {
		return err
	}
	c.SessionID, c.WS = s["session_id"].(string), ws
	t, err := c.Call("turn/begin", map[string]any{"session_id": c.SessionID})
	if err != nil {
		return err
	}
	c.Turn = t["turn_id"].(string)
	return nil
}

// callIDs make call ids unique across clients (the server's are).
var callIDs atomic.Int64

// Exec times one exec of /bin/true, request to response.
func (c *Client) Exec() (time.Duration, error) {
	start := time.Now()
	p := map[string]any{"session_id": c.SessionID, "turn_id": c.Turn, "call_id": fmt.Sprintf("c%d", callIDs.Add(1)),
		"cwd": c.WS, "command": []string{"/bin/true"}}
	for k, v := range c.Extra {
		p[k] = v
	}
	r, err := c.Call("exec", p)
	d := time.Since(start)
	c.Last = r
	if err == nil && r["exit_code"] != 0.0 {
		err = fmt.Errorf("exec /bin/true: %v", r)
	}
	return d, err
}

// Server is an sbx serve on stdio.
type Server struct {
	Cmd    *exec.Cmd
	in     io.WriteCloser
	Client *Client
}

// StartStdio starts argv (an sbx serve command line) in dir with env
// added to the environment, and connects a client to its stdio.
func StartStdio(argv []string, dir string, env []string) (*Server, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Stderr = dir, os.Stderr
	cmd.Env = append(os.Environ(), env...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &Server{Cmd: cmd, in: in, Client: NewClient(in, out)}, nil
}

// Close closes the server's stdin and waits for it to end.
func (s *Server) Close() {
	s.in.Close()
	s.Cmd.Wait()
}
