// Command workflows benchmarks the everyday workflows of issue 29 (go
// build, git commit, make, python, node, npm install, pip install, cargo
// build) bare, under `sbx run --mode workspace-write` with the grants each
// needs, and through one `sbx serve` (an exec request a run), interleaved
// round by round (this VM's speed drifts within a minute, and interleaving
// gives each way of running the same mix of fast and slow moments). It
// prints the median of each and sbx's overhead over bare, in ms and %. It
// is a benchmark, not a timed test.
//
// Usage: workflows [-sbx PATH] [-rounds N] [-only NAME,...] [-verdaccio DIR]
//
// npm and pip install from local registries (package localreg: verdaccio
// from integration/testdata/verdaccio, installed by its npm ci, and a PEP
// 503 index of wheels written here), so nothing needs the internet. Each
// workflow's caches are the user's own and warm (one untimed run of each
// way first): the figure is what sbx adds to a working loop, not to a
// cold download. A workflow whose tool is not on PATH is left out, saying
// so.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

func main() {
	sbx := flag.String("sbx", "sbx", "the sbx binary")
	rounds := flag.Int("rounds", 10, "timed runs of each workflow in each way, interleaved")
	only := flag.String("only", "", "comma-separated workflow names to run (default: all)")
	verdaccio := flag.String("verdaccio", "integration/testdata/verdaccio", "the directory where npm ci installed verdaccio")
	flag.Parse()
	if err := run(*sbx, *rounds, *only, *verdaccio); err != nil {
		fmt.Fprintln(os.Stderr, "bench/workflows:", err)
		os.Exit(1)
	}
}

// ways are the three ways each workflow runs, each round in turn.
var ways = []string{"bare", "sbx-run", "serve"}

func run(sbx string, rounds int, only, verdaccio string) error {
	if p, err := exec.LookPath(sbx); err == nil {
		sbx, _ = filepath.Abs(p)
	}
	// The local registries are on loopback: a proxy of the caller's
	// environment (HTTP_PROXY) must not carry the bare runs' requests
	// (sbx sets the sandboxed command's proxy variables itself).
	for _, v := range []string{"NO_PROXY", "no_proxy"} {
		os.Setenv(v, strings.Trim(os.Getenv(v)+",127.0.0.1,localhost", ","))
	}
	root, err := os.MkdirTemp("", "sbx-bench-workflows-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	root, _ = filepath.EvalSymlinks(root)
	env, err := startRegistries(root, verdaccio)
	if err != nil {
		return err
	}
	defer env.stop()
	var flows []*workflow
	for _, w := range workflows(env) {
		if only != "" && !slices.Contains(strings.Split(only, ","), w.name) {
			continue
		}
		if _, err := exec.LookPath(w.tool); err != nil {
			fmt.Printf("%s: left out: %s is not on PATH\n", w.name, w.tool)
			continue
		}
		w.dir, w.ms = filepath.Join(root, "ws", w.name), map[string][]float64{}
		if err := os.MkdirAll(w.dir, 0o755); err != nil {
			return err
		}
		if w.setup == nil {
			// nothing to lay out (node -e)
		} else if err := w.setup(w.dir); err != nil {
			return fmt.Errorf("%s: set up: %w", w.name, err)
		}
		flows = append(flows, w)
	}
	srv, err := startServe(sbx, root)
	if err != nil {
		return err
	}
	defer srv.Close()
	// One untimed run each way: warms the caches (and shows a workflow
	// that fails under sbx before any timing).
	for _, w := range flows {
		for _, way := range ways {
			d, err := w.once(way, sbx, srv)
			if err != nil {
				return fmt.Errorf("%s %s (warm-up): %w", w.name, way, err)
			}
			fmt.Fprintf(os.Stderr, "warm-up: %s %s: %.0f ms\n", w.name, way, float64(d.Microseconds())/1e3)
		}
		w.notified = w.countNotified(sbx)
	}
	for r := 0; r < rounds; r++ {
		for _, w := range flows {
			// The ways take turns at going first: a run can leave the
			// next one warmer (page cache, CPU frequency) or colder.
			for i := range ways {
				way := ways[(i+r)%len(ways)]
				d, err := w.once(way, sbx, srv)
				if err != nil {
					return fmt.Errorf("%s %s (round %d): %w", w.name, way, r+1, err)
				}
				w.ms[way] = append(w.ms[way], float64(d.Microseconds())/1e3)
			}
		}
		fmt.Fprintf(os.Stderr, "round %d/%d done\n", r+1, rounds)
	}
	report(flows, rounds)
	return nil
}

// once resets the workflow (untimed, bare) and times one run of it.
func (w *workflow) once(way, sbx string, srv *server) (time.Duration, error) {
	if w.reset != nil {
		if err := w.reset(w.dir); err != nil {
			return 0, fmt.Errorf("reset: %w", err)
		}
	}
	start := time.Now()
	var out []byte
	var err error
	switch way {
	case "bare":
		out, err = command(w.dir, w.argv).CombinedOutput()
	case "sbx-run":
		out, err = command(w.dir, append(append([]string{sbx, "run", "--mode", "workspace-write"}, w.runFlags()...), append([]string{"--"}, w.sandboxArgv()...)...)).CombinedOutput()
	case "serve":
		out, err = srv.exec(w)
	}
	d := time.Since(start)
	if err != nil {
		return d, fmt.Errorf("%w\n%s", err, out)
	}
	return d, nil
}

// countNotified runs the workflow once more under sbx run, untimed, with
// SBX_TRACE, and returns the supervisor's notifications in it (issue 31:
// each is a round trip through sbx's process), -1 when the trace says
// nothing.
func (w *workflow) countNotified(sbx string) int {
	if w.reset != nil && w.reset(w.dir) != nil {
		return -1
	}
	f, err := os.CreateTemp("", "sbx-workflows-trace-*.jsonl")
	if err != nil {
		return -1
	}
	f.Close()
	defer os.Remove(f.Name())
	c := command(w.dir, append(append([]string{sbx, "run", "--mode", "workspace-write"}, w.runFlags()...), append([]string{"--"}, w.sandboxArgv()...)...))
	c.Env = append(os.Environ(), "SBX_TRACE="+f.Name())
	if c.Run() != nil {
		return -1
	}
	b, err := os.ReadFile(f.Name())
	if err != nil {
		return -1
	}
	var line struct{ Counts map[string]int }
	if json.Unmarshal(b, &line) != nil {
		return -1
	}
	n := 0
	for name, v := range line.Counts {
		if strings.HasPrefix(name, "supervisor: notified ") {
			n += v
		}
	}
	return n
}

func command(dir string, argv []string) *exec.Cmd {
	c := exec.Command(argv[0], argv[1:]...)
	c.Dir = dir
	return c
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func report(flows []*workflow, rounds int) {
	fmt.Printf("\nmedians of %d interleaved rounds, ms; overhead over bare in ms and %%\n\n", rounds)
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workflow\tbare\tsbx run\t+ms\t+%\tserve\t+ms\t+%\tnotified\t")
	for _, w := range flows {
		b, r, s := median(w.ms["bare"]), median(w.ms["sbx-run"]), median(w.ms["serve"])
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%+.0f\t%+.0f%%\t%.0f\t%+.0f\t%+.0f%%\t%d\t\n", w.name, b, r, r-b, 100*(r-b)/b, s, s-b, 100*(s-b)/b, w.notified)
	}
	tw.Flush()
	fmt.Println()
	for _, w := range flows {
		fmt.Printf("%s: %s; grants: %s\n", w.name, strings.Join(w.argv, " "), w.grantsText())
	}
}
