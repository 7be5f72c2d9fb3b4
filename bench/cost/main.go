// Command cost prints the tables of issue 31 (per-call cost of sbx beside
// bare /bin/true and bubblewrap) in one interleaved run: wall time per
// call (p50, p99) and system-wide CPU per call, as root and through
// runuser as an unprivileged user, through `sbx run` and through one
// `sbx serve` (durable log, ephemeral, danger-full-access), and the
// throughput of 8 concurrent clients of one server against bwrap run
// 8-wide. It is a benchmark, not a timed test. bench/cost.sh builds and
// runs it; bench/README.md ("bench/cost.sh") says how to read it.
//
// Each round runs a block of -block calls of every command in turn
// (interleaved, so all share the VM's drift). A block's CPU is the busy
// time /proc/stat counts over it on all CPUs (user, nice, system, irq,
// softirq, steal), so the kernel's work in its own threads (namespace
// teardown, RCU) counts for every launcher alike. /proc/stat counts in
// ticks (10 ms), so CPU per call is the total over all blocks of a
// command divided by its calls, not a median of blocks. It counts the
// rest of the machine's load too: on a shared machine read "own cpu",
// the CPU of the launcher's own processes (children's rusage; a server's
// /proc counters), which leaves out the kernel threads' share.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/sbx-sandbox/sbx/bench/internal/rpc"
)

func main() {
	sbx := flag.String("sbx", "sbx", "the sbx binary (absolute path)")
	rounds := flag.Int("rounds", 100, "rounds: each runs one block of every command")
	block := flag.Int("block", 10, "calls of one command in a row in each round")
	wide := flag.Int("clients", 8, "concurrent clients of the throughput phase")
	wideN := flag.Int("wide-calls", 800, "calls of the throughput phase, per launcher")
	benchUser := flag.String("user", "sbxtest", "user of the unprivileged group (run as root; \"\" skips it)")
	base := flag.String("base", "", "a second sbx binary (absolute path) whose rows, suffixed "+baseTag+", run interleaved with -sbx's")
	only := flag.String("only", "", "run only the rows whose names match this `REGEXP` (bare and bwrap always; \"wide\" matches the throughput phase), for a quick before/after of one path")
	flag.Parse()
	b := &bench{sbx: *sbx, base: *base, rounds: *rounds, block: *block}
	if *only != "" {
		re, err := regexp.Compile(*only)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench/cost: -only:", err)
			os.Exit(2)
		}
		b.only = re
	}
	if err := b.run(*wide, *wideN, *benchUser); err != nil {
		fmt.Fprintln(os.Stderr, "bench/cost:", err)
		os.Exit(1)
	}
}

// baseTag ends the names of the -base binary's rows.
const baseTag = " (base)"

type bench struct {
	// sbx is the binary measured; base, when set, a second one (main's,
	// say) whose rows are interleaved with sbx's in the same rounds, so
	// that both share the machine's drift and the other users' load.
	sbx, base     string
	rounds, block int
	// only, when set, picks the rows run (see keep).
	only    *regexp.Regexp
	dir, ws string
	servers []*rpc.Server
}

// target is one row: a way to make one call of /bin/true.
type target struct {
	name string
	call func() (time.Duration, error)
	wall rpc.Series
	// busy is the CPU (ms, all CPUs) counted over its blocks.
	busy  float64
	calls int
	// own is the CPU of the launcher's processes alone (ms, cumulative):
	// a per-process row's children's rusage, a server's /proc counters
	// of it and its descendants (the calls it reaped included). It leaves
	// out the kernel threads' share, and the rest of the machine's load.
	own     func() float64
	ownUsed float64
}

func (b *bench) run(wide, wideN int, benchUser string) error {
	dir, err := os.MkdirTemp("/var/tmp", "sbx-cost-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	defer func() {
		for _, s := range b.servers {
			s.Close()
		}
	}()
	// 0755: the unprivileged group runs in it too. /var/tmp: on disk, as a
	// user's state directory is (a tmpfs would make fsync free).
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	b.dir, b.ws = dir, filepath.Join(dir, "W")
	if err := os.MkdirAll(filepath.Join(b.ws, ".git"), 0o755); err != nil {
		return err
	}
	fmt.Printf("machine: %d CPUs, %s, load %s\n", cpus(), kernel(), load())
	root := os.Geteuid() == 0
	who := "as uid " + strconv.Itoa(os.Geteuid())
	if root {
		who = "root"
	}
	// The default state directory ($XDG_STATE_HOME/sbx), in a fresh
	// XDG_STATE_HOME so that the bench's sessions do not stay behind.
	state := filepath.Join(dir, "state-"+who[:2])
	if err := os.Mkdir(state, 0o700); err != nil {
		return err
	}
	rows, err := b.targets(nil, "", "", state)
	if err != nil {
		return err
	}
	rows = b.kept(rows)
	b.measure(rows)
	b.table("per call /bin/true, "+who, rows, "")
	if root && benchUser != "" {
		if u, err := user.Lookup(benchUser); err == nil {
			urows, err := b.userTargets(u)
			if err != nil {
				return err
			}
			urows = b.kept(urows)
			b.measure(urows)
			b.table("per call /bin/true, as "+benchUser+" (runuser rows: what each adds above runuser-bare)", urows, "runuser-bare")
		} else {
			fmt.Printf("\n(no user %s: the unprivileged group is skipped)\n", benchUser)
		}
	}
	wstate := filepath.Join(dir, "state-wide")
	if err := os.Mkdir(wstate, 0o700); err != nil {
		return err
	}
	if b.only != nil && !b.only.MatchString("wide") {
		return nil
	}
	return b.throughput(wide, wideN, wstate)
}

// keep says whether the row named name runs: every row without -only;
// with it, the references (bare, bwrap, runuser-bare, runuser-bwrap) and
// the rows it matches.
func (b *bench) keep(name string) bool {
	switch strings.TrimPrefix(name, "runuser-") {
	case "bare", "bwrap":
		return true
	}
	return b.only == nil || b.only.MatchString(name)
}

// kept is rows without those keep leaves out.
func (b *bench) kept(rows []*target) []*target {
	return slices.DeleteFunc(rows, func(t *target) bool { return !b.keep(t.name) })
}

// bins are the sbx binaries of the run and their rows' name suffixes.
func (b *bench) bins() [][2]string {
	bins := [][2]string{{b.sbx, ""}}
	if b.base != "" {
		bins = append(bins, [2]string{b.base, baseTag})
	}
	return bins
}

// targets are the commands of one group: pre is a wrapper (runuser) of
// the per-process rows, which are named with prefix, and of the servers
// (a call through one does not pay the wrapper), named with sprefix;
// state is the servers' XDG_STATE_HOME.
func (b *bench) targets(pre []string, prefix, sprefix, state string) ([]*target, error) {
	bwrap := []string{"bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--bind", b.ws, b.ws,
		"--unshare-net", "--unshare-pid", "--die-with-parent", "/bin/true"}
	procs := []struct {
		name string
		argv []string
	}{
		{"bare", []string{"/bin/true"}},
		{"bwrap", bwrap},
	}
	for _, bin := range b.bins() {
		procs = append(procs, []struct {
			name string
			argv []string
		}{
			{"sbx-run" + bin[1], []string{bin[0], "run", "--mode", "workspace-write", "--", "/bin/true"}},
			{"sbx-run-network" + bin[1], []string{bin[0], "run", "--mode", "workspace-write", "--network", "--", "/bin/true"}},
		}...)
	}
	var rows []*target
	for _, p := range procs {
		argv := append(append([]string(nil), pre...), p.argv...)
		if out, err := rpc.Command(argv, b.ws).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("%s: %v\n%s", p.name, err, out)
		}
		t := &target{name: prefix + p.name}
		var used float64
		t.call = func() (time.Duration, error) {
			c := rpc.Command(argv, b.ws)
			start := time.Now()
			err := c.Run()
			d := time.Since(start)
			if c.ProcessState != nil {
				used += float64((c.ProcessState.UserTime() + c.ProcessState.SystemTime()).Nanoseconds()) / 1e6
			}
			return d, err
		}
		t.own = func() float64 { return used }
		rows = append(rows, t)
	}
	env := []string{"XDG_STATE_HOME=" + state}
	type server struct {
		name   string
		srv    *rpc.Server
		preset string
	}
	var servers []server
	for _, bin := range b.bins() {
		durable, err := b.server(bin[0], pre, env)
		if err != nil {
			return nil, err
		}
		ephemeral, err := b.server(bin[0], pre, env, "--ephemeral")
		if err != nil {
			return nil, err
		}
		servers = append(servers, server{"serve" + bin[1], durable, "auto"},
			server{"serve-ephemeral" + bin[1], ephemeral, "auto"}, server{"serve-floor" + bin[1], durable, "full-access"})
	}
	for _, s := range servers {
		c := *s.srv.Client
		if err := c.Open(b.ws, s.preset); err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		pid := s.srv.Cmd.Process.Pid
		rows = append(rows, &target{name: sprefix + s.name, call: c.Exec, own: func() float64 { return treeCPU(pid) }})
		if s.name == "serve" && prefix == "" {
			if _, err := c.Exec(); err != nil {
				return nil, err
			}
			printEnforcement(c.Last)
		}
	}
	return rows, nil
}

// userTargets are the group as u: per-process rows through runuser, and
// servers started as u (through runuser; a call does not pay runuser).
func (b *bench) userTargets(u *user.User) ([]*target, error) {
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	state := filepath.Join(b.dir, "state-user")
	if err := os.Mkdir(state, 0o700); err != nil {
		return nil, err
	}
	if err := os.Chown(state, uid, gid); err != nil {
		return nil, err
	}
	pre := []string{"runuser", "-u", u.Username, "--", "env", "HOME=" + u.HomeDir}
	return b.targets(pre, "runuser-", "user-", state)
}

// server starts sbx serve of the binary sbx (after the wrapper pre) on
// stdio, initialized.
func (b *bench) server(sbx string, pre, env []string, flags ...string) (*rpc.Server, error) {
	argv := append([]string(nil), pre...)
	if len(pre) > 0 { // runuser resets some of the environment: env(1) sets it
		argv = append(argv, env...)
	}
	argv = append(append(argv, sbx, "serve"), flags...)
	s, err := rpc.StartStdio(argv, b.ws, env)
	if err != nil {
		return nil, err
	}
	b.servers = append(b.servers, s)
	if _, err := s.Client.Call("initialize", map[string]any{}); err != nil {
		return nil, fmt.Errorf("%v: %w", argv, err)
	}
	return s, nil
}

// measure runs the rounds: a block of each target in turn.
func (b *bench) measure(rows []*target) {
	for _, t := range rows { // warm-up
		for range 10 {
			if _, err := t.call(); err != nil {
				fmt.Fprintf(os.Stderr, "bench/cost: %s: %v\n", t.name, err)
				os.Exit(1)
			}
		}
	}
	for range b.rounds {
		for _, t := range rows {
			start, own0 := busy(), t.own()
			for range b.block {
				d, err := t.call()
				if err != nil {
					fmt.Fprintf(os.Stderr, "bench/cost: %s: %v\n", t.name, err)
					os.Exit(1)
				}
				t.wall.Add(d)
			}
			t.busy += busy() - start
			t.ownUsed += t.own() - own0
			t.calls += b.block
		}
	}
}

func (t *target) cpu() float64    { return t.busy / float64(t.calls) }
func (t *target) cpuOwn() float64 { return t.ownUsed / float64(t.calls) }

// table prints the rows as ratios of bwrap's (the row named bwrap in the
// group); with base, the last columns are what each row adds above base's
// p50 and CPU (runuser's own cost) as a ratio of what bwrap adds.
func (b *bench) table(title string, rows []*target, base string) {
	by := map[string]*target{}
	for _, t := range rows {
		by[strings.TrimPrefix(t.name, "runuser-")] = t
		by[t.name] = t
	}
	ref := by["bwrap"]
	fmt.Printf("\n%s (%d rounds of %d calls)\n", title, b.rounds, b.block)
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	head := "command\tp50 ms\tp99 ms\tx bwrap\tcpu ms\tx bwrap\town cpu ms\tx bwrap\t"
	if base != "" {
		head += "p50 above base\tx bwrap's\town cpu above base\tx bwrap's\t"
	}
	fmt.Fprintln(tw, head)
	for _, t := range rows {
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.2f\t%.3f\t%.2f\t%.3f\t%.2f\t", t.name, t.wall.Quantile(0.5), t.wall.Quantile(0.99),
			t.wall.Quantile(0.5)/ref.wall.Quantile(0.5), t.cpu(), t.cpu()/ref.cpu(), t.cpuOwn(), t.cpuOwn()/ref.cpuOwn())
		if base != "" {
			bt := by[base]
			p, c := t.wall.Quantile(0.5), t.cpuOwn()
			if strings.HasPrefix(t.name, "runuser-") { // a server's call pays no runuser
				p, c = p-bt.wall.Quantile(0.5), c-bt.cpuOwn()
			}
			rp, rc := ref.wall.Quantile(0.5)-bt.wall.Quantile(0.5), ref.cpuOwn()-bt.cpuOwn()
			fmt.Fprintf(tw, "%.3f\t%.2f\t%.3f\t%.2f\t", p, p/rp, c, c/rc)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

// throughput runs n calls from clients concurrent clients of one server
// (durable log, default state directory) and n bwrap runs clients-wide.
func (b *bench) throughput(clients, n int, state string) error {
	bwrap := []string{"bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--bind", b.ws, b.ws,
		"--unshare-net", "--unshare-pid", "--die-with-parent", "/bin/true"}
	var runs []func() (time.Duration, error)
	for range clients {
		runs = append(runs, func() (time.Duration, error) { return rpc.TimeRun(bwrap, b.ws) })
	}
	fmt.Printf("\nthroughput, %d concurrent clients, %d calls each way (interleaved in 4 phases)\n", clients, n)
	rows := []*wideRow{{name: fmt.Sprintf("bwrap %d-wide", clients), calls: runs}}
	for i, bin := range b.bins() {
		// A state directory each: a server restores the sessions it finds.
		st := filepath.Join(state, strconv.Itoa(i))
		if err := os.Mkdir(st, 0o700); err != nil {
			return err
		}
		calls, stop, err := b.listen(bin[0], filepath.Join(b.dir, fmt.Sprintf("bench%d.sock", i)), clients, st)
		if err != nil {
			return err
		}
		defer stop()
		rows = append(rows, &wideRow{name: fmt.Sprintf("serve, %d clients%s", clients, bin[1]), calls: calls})
	}
	for range 4 {
		for _, r := range rows {
			if err := r.phase(n / 4); err != nil {
				return fmt.Errorf("%s: %w", r.name, err)
			}
		}
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "launcher\tcalls/s\tx bwrap\tp50 ms\tp99 ms\tcpu ms/call\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%.0f\t%.2f\t%.3f\t%.3f\t%.3f\t\n", r.name, r.rate(), r.rate()/rows[0].rate(),
			r.wall.Quantile(0.5), r.wall.Quantile(0.99), r.busy/float64(r.wall.Len()))
	}
	return tw.Flush()
}

// listen starts sbx serve --listen sock of the binary sbx and connects
// clients to it, each with a session of its own; stop ends them.
func (b *bench) listen(sbx, sock string, clients int, state string) (calls []func() (time.Duration, error), stop func(), err error) {
	cmd := exec.Command(sbx, "serve", "--listen", sock)
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+state)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	var conns []net.Conn
	stop = func() {
		for _, c := range conns {
			c.Close()
		}
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			stop()
			return nil, nil, fmt.Errorf("%s did not appear", sock)
		}
	}
	for range clients {
		conn, err := net.Dial("unix", sock)
		if err != nil {
			stop()
			return nil, nil, err
		}
		conns = append(conns, conn)
		c, err := rpc.NewClient(conn, conn).Session(b.ws)
		if err != nil {
			stop()
			return nil, nil, err
		}
		calls = append(calls, c.Exec)
	}
	return calls, stop, nil
}

type wideRow struct {
	name    string
	calls   []func() (time.Duration, error)
	wall    rpc.Series
	elapsed time.Duration
	busy    float64
}

func (r *wideRow) rate() float64 { return float64(r.wall.Len()) / r.elapsed.Seconds() }

// phase makes n calls spread over r's clients, all at once.
func (r *wideRow) phase(n int) error {
	var wg sync.WaitGroup
	errs := make(chan error, len(r.calls))
	b0, t0 := busy(), time.Now()
	for _, call := range r.calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n / len(r.calls) {
				d, err := call()
				if err != nil {
					errs <- err
					return
				}
				r.wall.Add(d)
			}
		}()
	}
	wg.Wait()
	r.elapsed += time.Since(t0)
	r.busy += busy() - b0
	close(errs)
	return <-errs
}

// busy is the CPU time, in ms summed over all CPUs, that /proc/stat
// counts as busy since boot.
func busy() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	var t float64
	for i, v := range f[1:] {
		if i == 3 || i == 4 || i >= 8 { // idle, iowait; guest time is in user already
			continue
		}
		x, _ := strconv.ParseFloat(v, 64)
		t += x
	}
	return t * 10 // USER_HZ is 100 on Linux
}

// treeCPU is the CPU (ms) of process pid and its live descendants, with
// what each has reaped of its children: utime, stime, cutime and cstime
// of /proc/PID/stat, in clock ticks (10 ms) but exact in sum.
func treeCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	_, rest, _ := strings.Cut(string(b), ") ") // after comm, which may hold spaces
	f := strings.Fields(rest)                  // f[0] is field 3 (state)
	var t float64
	for _, i := range []int{11, 12, 13, 14} { // fields 14-17
		x, _ := strconv.ParseFloat(f[i], 64)
		t += x * 10
	}
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, path := range tasks {
		kids, _ := os.ReadFile(path)
		for _, k := range strings.Fields(string(kids)) {
			if c, err := strconv.Atoi(k); err == nil {
				t += treeCPU(c)
			}
		}
	}
	return t
}

func printEnforcement(res map[string]any) {
	var find func(v any) any
	find = func(v any) any {
		if m, ok := v.(map[string]any); ok {
			if e, ok := m["enforcement"]; ok {
				return e
			}
			for _, x := range m {
				if e := find(x); e != nil {
					return e
				}
			}
		}
		return nil
	}
	b, _ := json.MarshalIndent(find(res), "", "  ")
	fmt.Printf("\none call's enforcement block (serve exec, auto preset):\n%s\n", b)
}

func cpus() int {
	b, _ := os.ReadFile("/proc/stat")
	return strings.Count(string(b), "\ncpu")
}

func kernel() string {
	b, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return "kernel " + strings.TrimSpace(string(b))
}

func load() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
