// Command serve benchmarks sbx serve: per-request latency of exec
// /bin/true through one long-lived server, sequentially and from 8
// concurrent clients, beside bare /bin/true, bwrap and `sbx run` in the
// same run (interleaved round-robin: this VM's speed drifts within a
// minute, and interleaving gives every command the same mix of fast and
// slow moments). It is a benchmark, not a timed test.
//
// Usage: serve [-sbx PATH] [-n REQUESTS] [-rounds N] [-clients N]
//
// Run it as the user whose path is to be measured: as root the server
// launches from a locked thread; unprivileged (runuser -u sbxtest -- ...)
// from a locked thread too, inside the one user namespace the server makes
// at start-up.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"
)

func main() {
	sbx := flag.String("sbx", "sbx", "the sbx binary")
	n := flag.Int("n", 1000, "sequential exec requests through the server")
	rounds := flag.Int("rounds", 200, "runs of each per-process command (bare, bwrap, sbx run), interleaved with the requests")
	clients := flag.Int("clients", 8, "concurrent clients of the second phase (each makes n/clients requests)")
	flag.Parse()
	if err := run(*sbx, *n, *rounds, *clients); err != nil {
		fmt.Fprintln(os.Stderr, "bench/serve:", err)
		os.Exit(1)
	}
}

func run(sbx string, n, rounds, clients int) error {
	ws, err := os.MkdirTemp("", "sbx-bench-serve-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(ws)
	ws, _ = filepath.EvalSymlinks(ws)
	// A repository's .git, as most workspaces have (without one, each call
	// makes or shares a placeholder for the carve-out).
	if err := os.Mkdir(filepath.Join(ws, ".git"), 0o755); err != nil {
		return err
	}
	procs := []*series{
		{name: "bare", argv: []string{"/bin/true"}},
		{name: "bwrap", argv: []string{"bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--bind", ws, ws, "--unshare-net", "--unshare-pid", "--die-with-parent", "/bin/true"}},
		{name: "sbx-run", argv: []string{sbx, "run", "--mode", "workspace-write", "--", "/bin/true"}},
	}
	for _, p := range procs {
		if b, err := command(p.argv, ws).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v\n%s", p.name, err, b)
		}
	}
	srv, err := startStdio(sbx, ws)
	if err != nil {
		return err
	}
	defer srv.close()
	if _, err := srv.client.call("initialize", map[string]any{}); err != nil {
		return err
	}
	// serve-exec is the measure; the two others, in the same server, show
	// what the network namespace costs and the floor without any sandbox.
	variants := []struct {
		series *series
		preset string
		extra  map[string]any
	}{
		{&series{name: "serve-exec"}, "auto", nil},
		{&series{name: "serve-exec-network"}, "auto", map[string]any{"network_access": true}},
		{&series{name: "serve-exec-unsandboxed"}, "full-access", nil},
	}
	var sessions []*client
	for _, v := range variants {
		c := *srv.client
		if err := c.open(ws, v.preset); err != nil {
			return err
		}
		c.extra = v.extra
		sessions = append(sessions, &c)
	}
	for range 20 { // warm-up
		for _, c := range sessions {
			if _, err := c.exec(); err != nil {
				return err
			}
		}
	}
	seq := variants[0].series
	perRound := max(1, n/rounds)
	for r := 0; seq.len() < n || r < rounds; r++ {
		if r < rounds {
			for _, p := range procs {
				d, err := timeRun(p.argv, ws)
				if err != nil {
					return fmt.Errorf("%s: %w", p.name, err)
				}
				p.add(d)
			}
		}
		for i := 0; i < perRound && seq.len() < n; i++ {
			for j, c := range sessions {
				d, err := c.exec()
				if err != nil {
					return err
				}
				variants[j].series.add(d)
			}
		}
	}
	conc, err := concurrent(sbx, ws, clients, max(1, n/clients))
	if err != nil {
		return err
	}
	all := procs
	for _, v := range variants {
		all = append(all, v.series)
	}
	report(append(all, conc), "bwrap")
	return nil
}

// series is one command's timings, in ms.
type series struct {
	name string
	argv []string
	mu   sync.Mutex
	ms   []float64
}

func (s *series) add(d time.Duration) {
	s.mu.Lock()
	s.ms = append(s.ms, float64(d.Nanoseconds())/1e6)
	s.mu.Unlock()
}

func (s *series) len() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.ms) }

func (s *series) quantile(q float64) float64 {
	v := slices.Clone(s.ms)
	slices.Sort(v)
	return v[min(len(v)-1, int(q*float64(len(v))))]
}

func (s *series) mean() float64 {
	t := 0.0
	for _, x := range s.ms {
		t += x
	}
	return t / float64(len(s.ms))
}

func command(argv []string, dir string) *exec.Cmd {
	c := exec.Command(argv[0], argv[1:]...)
	c.Dir = dir
	return c
}

func timeRun(argv []string, dir string) (time.Duration, error) {
	c := command(argv, dir)
	start := time.Now()
	err := c.Run()
	return time.Since(start), err
}

// client is one JSON-RPC connection to the server.
type client struct {
	w               io.Writer
	r               *bufio.Reader
	next            *int // shared by the sessions of one connection
	sessionID, turn string
	ws              string
	extra           map[string]any // more exec params
}

func (c *client) call(method string, params any) (map[string]any, error) {
	*c.next++
	id := *c.next
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if _, err := c.w.Write(append(b, '\n')); err != nil {
		return nil, err
	}
	for {
		line, err := c.r.ReadBytes('\n')
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

func (c *client) session(ws string) (*client, error) {
	if _, err := c.call("initialize", map[string]any{}); err != nil {
		return nil, err
	}
	return c, c.open(ws, "auto")
}

// open opens a session with preset and a turn in it.
func (c *client) open(ws, preset string) error {
	s, err := c.call("session/open", map[string]any{"cwd": ws, "preset": preset})
	if err != nil {
		return err
	}
	c.sessionID, c.ws = s["session_id"].(string), ws
	t, err := c.call("turn/begin", map[string]any{"session_id": c.sessionID})
	if err != nil {
		return err
	}
	c.turn = t["turn_id"].(string)
	return nil
}

// callIDs make call ids unique across clients (the server's are).
var callIDs atomic.Int64

// exec times one exec of /bin/true, request to response.
func (c *client) exec() (time.Duration, error) {
	start := time.Now()
	p := map[string]any{"session_id": c.sessionID, "turn_id": c.turn, "call_id": fmt.Sprintf("c%d", callIDs.Add(1)),
		"cwd": c.ws, "command": []string{"/bin/true"}}
	for k, v := range c.extra {
		p[k] = v
	}
	r, err := c.call("exec", p)
	d := time.Since(start)
	if err == nil && r["exit_code"] != 0.0 {
		err = fmt.Errorf("exec /bin/true: %v", r)
	}
	return d, err
}

type server struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	client *client
}

func startStdio(sbx, ws string) (*server, error) {
	cmd := exec.Command(sbx, "serve", "--state-dir", filepath.Join(ws, ".sbx-state"))
	cmd.Dir, cmd.Stderr = ws, os.Stderr
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
	return &server{cmd: cmd, in: in, client: &client{w: in, r: bufio.NewReaderSize(out, 1<<20), next: new(int)}}, nil
}

func (s *server) close() {
	s.in.Close()
	s.cmd.Wait()
}

// concurrent runs clients connections to one socket server, each making
// per requests as fast as it can; each request's latency is one sample.
func concurrent(sbx, ws string, clients, per int) (*series, error) {
	sock := filepath.Join(ws, "bench.sock")
	cmd := exec.Command(sbx, "serve", "--listen", sock, "--state-dir", filepath.Join(filepath.Dir(sock), "state"))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s did not appear", sock)
		}
	}
	s := &series{name: fmt.Sprintf("serve-exec-%dclients", clients)}
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for range clients {
		conn, err := net.Dial("unix", sock)
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		c, err := (&client{w: conn, r: bufio.NewReader(conn), next: new(int)}).session(ws)
		if err != nil {
			return nil, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range per {
				d, err := c.exec()
				if err != nil {
					errs <- err
					return
				}
				s.add(d)
			}
		}()
	}
	wg.Wait()
	close(errs)
	return s, <-errs
}

func report(all []*series, ref string) {
	var refP50, refMean float64
	for _, s := range all {
		if s.name == ref {
			refP50, refMean = s.quantile(0.5), s.mean()
		}
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "command\truns\tp50 ms\tp99 ms\tmean ms\tp50 x %s\tmean x %s\t\n", ref, ref)
	for _, s := range all {
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f\t%.3f\t%.2f\t%.2f\t\n", s.name, len(s.ms), s.quantile(0.5), s.quantile(0.99), s.mean(),
			s.quantile(0.5)/refP50, s.mean()/refMean)
	}
	tw.Flush()
}
