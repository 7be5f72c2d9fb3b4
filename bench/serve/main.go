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
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/sbx-sandbox/sbx/bench/internal/rpc"
)

type series = rpc.Series

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
		{Name: "bare", Argv: []string{"/bin/true"}},
		{Name: "bwrap", Argv: []string{"bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--bind", ws, ws, "--unshare-net", "--unshare-pid", "--die-with-parent", "/bin/true"}},
		{Name: "sbx-run", Argv: []string{sbx, "run", "--mode", "workspace-write", "--", "/bin/true"}},
	}
	for _, p := range procs {
		if b, err := rpc.Command(p.Argv, ws).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v\n%s", p.Name, err, b)
		}
	}
	srv, err := rpc.StartStdio([]string{sbx, "serve", "--state-dir", filepath.Join(ws, ".sbx-state")}, ws, nil)
	if err != nil {
		return err
	}
	defer srv.Close()
	if _, err := srv.Client.Call("initialize", map[string]any{}); err != nil {
		return err
	}
	// serve-exec is the measure; the two others, in the same server, show
	// what the network namespace costs and the floor without any sandbox.
	variants := []struct {
		series *series
		preset string
		extra  map[string]any
	}{
		{&series{Name: "serve-exec"}, "auto", nil},
		{&series{Name: "serve-exec-network"}, "auto", map[string]any{"network_access": true}},
		{&series{Name: "serve-exec-unsandboxed"}, "full-access", nil},
	}
	var sessions []*rpc.Client
	for _, v := range variants {
		c := *srv.Client
		if err := c.Open(ws, v.preset); err != nil {
			return err
		}
		c.Extra = v.extra
		sessions = append(sessions, &c)
	}
	for range 20 { // warm-up
		for _, c := range sessions {
			if _, err := c.Exec(); err != nil {
				return err
			}
		}
	}
	seq := variants[0].series
	perRound := max(1, n/rounds)
	for r := 0; seq.Len() < n || r < rounds; r++ {
		if r < rounds {
			for _, p := range procs {
				d, err := rpc.TimeRun(p.Argv, ws)
				if err != nil {
					return fmt.Errorf("%s: %w", p.Name, err)
				}
				p.Add(d)
			}
		}
		for i := 0; i < perRound && seq.Len() < n; i++ {
			for j, c := range sessions {
				d, err := c.Exec()
				if err != nil {
					return err
				}
				variants[j].series.Add(d)
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
	s := &series{Name: fmt.Sprintf("serve-exec-%dclients", clients)}
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for range clients {
		conn, err := net.Dial("unix", sock)
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		c, err := rpc.NewClient(conn, conn).Session(ws)
		if err != nil {
			return nil, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range per {
				d, err := c.Exec()
				if err != nil {
					errs <- err
					return
				}
				s.Add(d)
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
		if s.Name == ref {
			refP50, refMean = s.Quantile(0.5), s.Mean()
		}
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "command\truns\tp50 ms\tp99 ms\tmean ms\tp50 x %s\tmean x %s\t\n", ref, ref)
	for _, s := range all {
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f\t%.3f\t%.2f\t%.2f\t\n", s.Name, len(s.MS), s.Quantile(0.5), s.Quantile(0.99), s.Mean(),
			s.Quantile(0.5)/refP50, s.Mean()/refMean)
	}
	tw.Flush()
}
