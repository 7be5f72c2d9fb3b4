//go:build linux

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sbx-sandbox/sbx/internal/call"
	"github.com/sbx-sandbox/sbx/internal/enforce/host"
	"github.com/sbx-sandbox/sbx/internal/fspath"
	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/policy/denial"
	"github.com/sbx-sandbox/sbx/internal/report"
	"github.com/sbx-sandbox/sbx/internal/run"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

func init() {
	register("probe", command{summary: "try reads, writes, connects and signals inside the sandbox and show what was allowed", run: probeCmd})
}

const probeUsage = `Usage: sbx probe [run flags] [--json] [PATH...]

Runs real probes inside the sandbox that "sbx run" with the same flags would
make: read, write (an existing file opened for writing, nothing written) and
create (a probe-named file, removed at once) at each PATH and at $HOME, /etc,
/tmp, $TMPDIR, the cwd, its .git and /dev/null; TCP connect to a listener on
the host's 127.0.0.1 and to one inside the sandbox; UDP send to the host;
unix socket connect (in the cwd, in /tmp, abstract); signal 0 to a process
outside. Each row says what happened and whether that is what the policy
says. Exit status 0 when every row matches, 1 when one does not.

Flags:
`

// probeRow is one line of the matrix. Result is "allowed", "denied" or
// "error" (the probe failed for a reason that is not the sandbox's).
type probeRow struct {
	Probe    string `json:"probe"`
	Target   string `json:"target"`
	Result   string `json:"result"`
	Errno    string `json:"errno"`
	Expected string `json:"expected"`
	Match    bool   `json:"match"`
}

type probeReport struct {
	Mode string     `json:"mode"`
	Rows []probeRow `json:"rows"`
}

func probeCmd(args []string, stdio Stdio) int {
	fs := newFlagSet("probe", probeUsage, stdio)
	var rf runFlags
	rf.register(fs.FlagSet)
	asJSON := fs.Bool("json", false, "print the matrix as JSON")
	if code, ok := fs.parse(args); !ok {
		return code
	}
	rep, err := runProbes(fs.FlagSet, &rf)
	if err != nil {
		fmt.Fprintf(stdio.Err, "sbx probe: %v\n", err)
		return ExitRefused
	}
	code := 0
	if slices.ContainsFunc(rep.Rows, func(r probeRow) bool { return !r.Match }) {
		code = 1
	}
	if *asJSON {
		if c := writeJSON(stdio.Out, rep); c != 0 {
			return c
		}
		return code
	}
	fmt.Fprintf(stdio.Out, "mode: %s\n", rep.Mode)
	tw := tabwriter.NewWriter(stdio.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROBE\tTARGET\tRESULT\tERRNO\tEXPECTED\tMATCH")
	for _, r := range rep.Rows {
		match := "yes"
		if !r.Match {
			match = "NO"
		}
		errno := r.Errno
		if errno == "" {
			errno = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Probe, r.Target, r.Result, errno, r.Expected, match)
	}
	tw.Flush()
	return code
}

// probeListeners are the host-side ends the stage tries to reach.
type probeListeners struct {
	tcp, udp, abstract *probeSock
	unix               []*probeSock
}

func (l *probeListeners) close() {
	for _, s := range append(l.unix, l.tcp, l.udp, l.abstract) {
		s.close()
	}
}

// listen opens the host-side listeners. A pathname socket goes where the
// user may create one; its file is removed when the listener closes.
func listen(cwd string) (*probeListeners, error) {
	l := &probeListeners{}
	var err error
	if l.tcp, err = listenSock("tcp", probeLoopback); err != nil {
		return l, fmt.Errorf("listen tcp: %w", err)
	}
	if l.udp, err = listenSock("udp", probeLoopback); err != nil {
		return l, fmt.Errorf("listen udp: %w", err)
	}
	name := fmt.Sprintf(".sbx-probe-%d.sock", os.Getpid())
	for _, dir := range []string{cwd, "/tmp"} {
		if u, err := listenSock("unix", filepath.Join(dir, name)); err == nil {
			l.unix = append(l.unix, u)
		}
	}
	if l.abstract, err = listenSock("unix", "@"+strings.TrimPrefix(name, ".")); err != nil {
		return l, fmt.Errorf("listen abstract unix: %w", err)
	}
	return l, nil
}

func runProbes(fs *flag.FlagSet, rf *runFlags) (probeReport, error) {
	exe, err := os.Executable()
	if err != nil {
		return probeReport{}, fmt.Errorf("executable: %w", err)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, name := range []string{"shell", "c", "login"} {
		if set[name] {
			return probeReport{}, &strictjson.FieldError{Field: flagName(name), Err: errors.New("sbx probe runs its own probes, no command")}
		}
	}
	// The flags are checked before the listeners exist (the unix socket is
	// a file in the cwd); the real command, which names them, comes after.
	if _, err := rf.request([]string{exe}, set); err != nil {
		return probeReport{}, err
	}
	cwd, err := call.ResolveCwd(rf.cwd)
	if err != nil {
		return probeReport{}, fmt.Errorf("--cwd: %w", err)
	}
	lis, err := listen(cwd)
	defer lis.close()
	if err != nil {
		return probeReport{}, err
	}
	spec := probeSpec{
		Paths: probePaths(cwd, fs.Args()), TCP: lis.tcp.addr, UDP: lis.udp.addr,
		Abstract: lis.abstract.addr, OutsidePID: os.Getpid(),
	}
	for _, u := range lis.unix {
		spec.Unix = append(spec.Unix, u.addr)
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return probeReport{}, err
	}
	req, err := rf.request([]string{exe, probeStageCommand, string(b)}, set)
	if err != nil {
		return probeReport{}, err
	}
	p, err := call.Prepare(context.Background(), req)
	if err != nil {
		return probeReport{}, err
	}
	c := p.Call
	enf, degraded, err := host.Describe(c)
	if err != nil {
		return probeReport{}, err
	}
	p.Call.ForwardSignals = true
	res, err := run.Capture(context.Background(), p, 0, run.IO{})
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("probe stage exited %d: %s", res.ExitCode, strings.TrimSpace(res.Stderr))
	}
	if err != nil {
		return probeReport{}, err
	}
	var outcomes []probeOutcome
	if err := json.Unmarshal([]byte(res.Stdout), &outcomes); err != nil {
		return probeReport{}, fmt.Errorf("probe stage output: %w", err)
	}
	exp := probeExpectations{pol: c.Policy, enf: enf, chk: denial.NewChecker(c.Policy, denial.Extra{}), host: map[string]string{},
		unixConfined: unixConfined(degraded)}
	// The same file probes outside the sandbox tell what the file
	// permissions alone allow, so a file sbx's user may not write either is
	// not counted against the sandbox.
	for _, p := range spec.Paths {
		probePath(p, func(probe, target string, err error) {
			exp.host[probe+" "+target] = classify(outcomeOf(probe, target, err))
		})
	}
	rep := probeReport{Mode: c.Policy.Mode.String(), Rows: []probeRow{}}
	for _, o := range outcomes {
		row := probeRow{Probe: o.Probe, Target: o.Target, Errno: o.Err}
		row.Result = classify(o)
		if o.Probe == "udp-send" && row.Result == "allowed" && !lis.udp.receive(probeDatagram, 200*time.Millisecond) {
			// The send succeeded but went nowhere the host could see.
			row.Result, row.Errno = "denied", "not received"
		}
		if exp.allowed(o) {
			row.Expected = "allowed"
		} else {
			row.Expected = "denied"
		}
		row.Match = row.Result == row.Expected
		rep.Rows = append(rep.Rows, row)
	}
	return rep, nil
}

// probePaths are the standard places plus the user's, absolute and each
// once, in a fixed order.
func probePaths(cwd string, extra []string) []string {
	var paths []string
	for _, p := range []string{os.Getenv("HOME"), "/etc", "/tmp", os.Getenv("TMPDIR"), cwd, filepath.Join(cwd, ".git"), os.DevNull} {
		if p == "" || slices.Contains(paths, p) {
			continue
		}
		if _, err := os.Lstat(p); err != nil && p == filepath.Join(cwd, ".git") {
			continue
		}
		paths = append(paths, p)
	}
	for _, p := range extra {
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		if !slices.Contains(paths, filepath.Clean(p)) {
			paths = append(paths, filepath.Clean(p))
		}
	}
	return paths
}

// deniedErrnos are the errnos that mean the sandbox stopped a probe, per
// kind: a file access the kernel refused, a peer the sandbox cannot reach
// (its listener is open on the host, so "refused" means "not reachable
// from here"; without a network namespace the seccomp filter refuses IP
// sockets with EAFNOSUPPORT), a process it may not signal or cannot see.
var deniedErrnos = map[string][]string{
	"read":         {"EACCES", "EPERM"},
	"write":        {"EACCES", "EPERM", "EROFS"},
	"create":       {"EACCES", "EPERM", "EROFS"},
	"tcp-connect":  {"EACCES", "EPERM", "ECONNREFUSED", "ENETUNREACH", "EAFNOSUPPORT"},
	"udp-send":     {"EACCES", "EPERM", "ENETUNREACH", "EAFNOSUPPORT"},
	"unix-connect": {"EACCES", "EPERM", "ECONNREFUSED", "ENOENT"},
	"signal":       {"EPERM", "ESRCH"},
}

func classify(o probeOutcome) string {
	switch {
	case o.Err == "":
		return "allowed"
	case o.Errno && slices.Contains(deniedErrnos[o.Probe], o.Err):
		return "denied"
	}
	return "error"
}

// probeExpectations says what the policy, as this system enforces it,
// allows for each probe.
type probeExpectations struct {
	pol policy.Policy
	enf report.Enforcement
	chk *denial.Checker
	// host is the result of each file probe run outside the sandbox, by
	// "probe target".
	host map[string]string
	// unixConfined: with the network off, pathname unix sockets are
	// reachable only under the writable roots (Landlock ABI 9, or the
	// seccomp supervisor below it); false when landlock-resolve-unix is
	// degraded.
	unixConfined bool
}

func (e probeExpectations) allowed(o probeOutcome) bool {
	full := e.pol.Unrestricted || e.pol.Network == policy.NetworkFull
	scoped := func(s string) bool { return e.enf.Landlock != nil && slices.Contains(e.enf.Landlock.Scopes, s) }
	if h, ok := e.host[o.Probe+" "+o.Target]; ok && h != "allowed" {
		return false
	}
	switch o.Probe {
	case "read":
		return e.chk.Path(denial.WriteObject, resolved(o.Target)).Cause != denial.Masked
	case "write":
		return e.chk.Path(denial.WriteObject, resolved(o.Target)).Allowed
	case "create":
		return e.chk.Path(denial.Create, filepath.Join(resolved(o.Target), probeFileName())).Allowed
	case "tcp-connect":
		// A server inside is reachable only in the sandbox's own network
		// namespace; without one, network off means AF_UNIX sockets only.
		return full || strings.HasPrefix(o.Target, "inside ") && e.enf.NetworkNamespace
	case "udp-send":
		return full
	case "unix-connect":
		if strings.HasPrefix(o.Target, "@") {
			return !e.enf.NetworkNamespace && !scoped("abstract_unix_socket")
		}
		// With the network off, where Landlock (ABI 9) or the supervisor
		// confines them, only the sockets under the writable roots are
		// reachable; otherwise every one is.
		if full || !e.unixConfined {
			return true
		}
		return fspath.CoveredBy(resolved(o.Target), e.pol.WriteRoots)
	case "signal":
		return !e.enf.PIDNamespace && !scoped("signal")
	}
	return false
}

// resolved is p with symlinks resolved, as the kernel and the checker see
// it; a path that does not resolve stays as given.
func resolved(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// unixConfined reports whether a connect to a pathname unix socket outside
// the writable roots is refused: by Landlock (landlock-resolve-unix not
// degraded) or, below ABI 9, by the supervisor (denial-reports not
// degraded), which carries out every connect and send itself; with it the
// downgrade is gone too.
func unixConfined(degraded []report.Downgrade) bool {
	has := func(f report.Feature) bool {
		return slices.ContainsFunc(degraded, func(d report.Downgrade) bool { return d.Feature == f })
	}
	return !has(report.FeatureLandlockResolveUnix) || !has(report.FeatureDenialReports)
}
