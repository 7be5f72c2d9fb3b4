//go:build linux

package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// sbxBin and probeBin are absolute paths of the binaries under test.
var sbxBin, probeBin string

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	sbxBin, probeBin = os.Getenv("SBX_BIN"), os.Getenv("SBX_PROBE")
	if sbxBin == "" || probeBin == "" {
		dir, err := os.MkdirTemp("", "sbx-it-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "integration:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		// Other users (the unprivileged half of a run) must reach the binaries.
		if err := os.Chmod(dir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "integration:", err)
			return 1
		}
		if sbxBin == "" {
			sbxBin = filepath.Join(dir, "sbx")
			if err := goBuild(sbxBin, "../cmd/sbx", false); err != nil {
				fmt.Fprintln(os.Stderr, "integration: build sbx:", err)
				return 1
			}
		}
		if probeBin == "" {
			probeBin = filepath.Join(dir, "probe")
			if err := goBuild(probeBin, "./probe", true); err != nil {
				fmt.Fprintln(os.Stderr, "integration: build probe:", err)
				return 1
			}
		}
	}
	for _, p := range []*string{&sbxBin, &probeBin} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "integration:", err)
			return 1
		}
		if fi, err := os.Stat(abs); err != nil || fi.Mode()&0o111 == 0 {
			fmt.Fprintf(os.Stderr, "integration: %s is not an executable (err=%v)\n", abs, err)
			return 1
		}
		*p = abs
	}
	switch via := os.Getenv("SBX_IT_VIA"); via {
	case "", "run":
	case "serve":
		viaServe = true
		stop, err := startServe()
		if err != nil {
			fmt.Fprintln(os.Stderr, "integration: SBX_IT_VIA=serve:", err)
			return 1
		}
		code := m.Run()
		stop(code != 0)
		fmt.Println(serveSummary())
		return code
	default:
		fmt.Fprintf(os.Stderr, "integration: SBX_IT_VIA=%q: want run or serve\n", via)
		return 1
	}
	return m.Run()
}

func goBuild(out, pkg string, static bool) error {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Env = os.Environ()
	if static {
		cmd.Env = append(cmd.Env, "CGO_ENABLED=0")
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return os.Chmod(out, 0o755)
}

// opts is one sbx invocation.
type opts struct {
	args   []string // sbx arguments, starting with the subcommand
	dir    string   // working directory of sbx ("" = a fresh temp dir)
	env    []string // extra environment entries, appended
	stdin  io.Reader
	stdinF *os.File   // stdin as a file (a pty), instead of stdin
	extra  []*os.File // become fds 3, 4, ... of sbx
}

// outcome is what an sbx invocation did.
type outcome struct {
	code           int
	stdout, stderr string
}

// baseEnv is the environment sbx runs with: the test's, minus TMPDIR, so
// that only the writable roots a test names (cwd, /tmp) are writable.
func baseEnv() []string {
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "TMPDIR=") {
			env = append(env, e)
		}
	}
	return env
}

// sbx runs the sbx binary and returns its exit status and output. It fails
// the test only when sbx could not be started or hangs.
func sbx(t *testing.T, o opts) outcome {
	t.Helper()
	cmd := exec.Command(sbxBin, o.args...)
	cmd.Dir = o.dir
	if cmd.Dir == "" {
		cmd.Dir = t.TempDir()
	}
	cmd.Env = append(baseEnv(), o.env...)
	cmd.Stdin = o.stdin
	if o.stdinF != nil {
		cmd.Stdin = o.stdinF
	}
	cmd.ExtraFiles = o.extra
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A process that escaped the sandbox's kill (documented where it can)
	// must not hold the pipes, and so the test, open.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sbx: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("sbx %q did not finish within 60s\nstderr: %s", o.args, stderr.String())
	}
	out := outcome{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("sbx %q: %v", o.args, err)
	}
	if out.code == -1 {
		t.Fatalf("sbx %q itself died: %v\nstderr: %s", o.args, cmd.ProcessState, out.stderr)
	}
	return out
}

// run is `sbx run ARGS... -- CMD...` in dir, with a report written to a
// temp file; it returns the outcome and the parsed report (nil if none).
// With SBX_IT_VIA=serve the call goes to the suite's server instead
// (runViaServe), or the test skips saying why it cannot.
func run(t *testing.T, dir string, args []string, cmd ...string) (outcome, *report) {
	t.Helper()
	if viaServe {
		return runViaServe(t, dir, args, cmd)
	}
	rp := filepath.Join(t.TempDir(), "report.json")
	all := append([]string{"run", "--cwd", dir, "--report", rp}, args...)
	out := sbx(t, opts{args: append(append(all, "--"), cmd...), dir: dir})
	return out, readReport(t, rp)
}

// probeResult is the JSON line of integration/probe.
type probeResult struct {
	Op     string `json:"op"`
	OK     bool   `json:"ok"`
	Errno  string `json:"errno"`
	Detail string `json:"detail"`
}

func (r probeResult) String() string {
	if r.OK {
		return fmt.Sprintf("%s: ok (%s)", r.Op, r.Detail)
	}
	return fmt.Sprintf("%s: %s (%s)", r.Op, r.Errno, r.Detail)
}

func parseProbe(t *testing.T, out outcome) probeResult {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out.stdout), "\n")
	var r probeResult
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil || r.Op == "" {
		t.Fatalf("no probe result (exit %d): %v\nstdout: %s\nstderr: %s", out.code, err, out.stdout, out.stderr)
	}
	return r
}

// probe runs the probe inside the sandbox: `sbx run --cwd dir
// --retry-on-success ARGS -- probe PROBEARGS`. The probe must exit 0 with
// its JSON line: it says how the operation went there, not in its exit
// status, so sbx sees every probe succeed, and a test that judges the
// retry of a refused operation asks for it (--retry-on-success; without
// it, a command that exits 0 gets none).
func probe(t *testing.T, dir string, args []string, probeArgs ...string) (probeResult, *report) {
	t.Helper()
	args = append([]string{"--retry-on-success"}, args...)
	out, rep := run(t, dir, args, append([]string{probeBin}, probeArgs...)...)
	if out.code != 0 {
		t.Fatalf("sbx run %q -- probe %q: exit %d, want 0\nstdout: %s\nstderr: %s", args, probeArgs, out.code, out.stdout, out.stderr)
	}
	r := parseProbe(t, out)
	t.Logf("probe %s -> %s", strings.Join(probeArgs, " "), r)
	return r, rep
}

// probeDirect runs the probe without sbx, the baseline that shows an action
// a sandboxed probe is refused really works on this kernel.
func probeDirect(t *testing.T, extra []*os.File, probeArgs ...string) probeResult {
	t.Helper()
	cmd := exec.Command(probeBin, probeArgs...)
	cmd.ExtraFiles = extra
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("probe %q without sbx: %v", probeArgs, err)
	}
	r := parseProbe(t, outcome{stdout: string(b)})
	t.Logf("probe %s without sbx -> %s", strings.Join(probeArgs, " "), r)
	return r
}

// want asserts the probe's verdict: ok, or the exact errno.
func want(t *testing.T, r probeResult, errno string) {
	t.Helper()
	switch {
	case errno == "" && !r.OK:
		t.Errorf("%s: want success, got %s (%s)", r.Op, r.Errno, r.Detail)
	case errno != "" && r.OK:
		t.Errorf("%s: want %s, but it succeeded (%s)", r.Op, errno, r.Detail)
	case errno != "" && r.Errno != errno:
		t.Errorf("%s: want %s, got %s (%s)", r.Op, errno, r.Errno, r.Detail)
	}
}

// report is the part of the --report JSON the tests check; raw keeps the
// whole object for null and presence checks.
type report struct {
	ExitCode    int    `json:"exit_code"`
	Signal      *int   `json:"signal"`
	SignalName  string `json:"signal_name"`
	Mode        string `json:"mode"`
	Enforcement struct {
		Platform string `json:"platform"`
		Launch   string `json:"launch"`
		Landlock *struct {
			ABI      int      `json:"abi"`
			FS       bool     `json:"fs"`
			NetTCP   bool     `json:"net_tcp"`
			Scopes   []string `json:"scopes"`
			Features []string `json:"features"`
		} `json:"landlock"`
		Seccomp *struct {
			Sockets string `json:"sockets"`
		} `json:"seccomp"`
		NetworkNamespace    bool     `json:"network_namespace"`
		MountNamespace      bool     `json:"mount_namespace"`
		UserNamespace       bool     `json:"user_namespace"`
		PIDNamespace        bool     `json:"pid_namespace"`
		NoNewPrivs          bool     `json:"no_new_privs"`
		NewSession          bool     `json:"new_session"`
		ClosedFDs           bool     `json:"closed_fds"`
		PTY                 bool     `json:"pty"`
		ReadOnlyRoot        bool     `json:"read_only_root"`
		Procfs              string   `json:"procfs"`
		CapabilitiesDropped bool     `json:"capabilities_dropped"`
		Capabilities        []string `json:"capabilities"`
		UTSNamespace        bool     `json:"uts_namespace"`
		IPCNamespace        bool     `json:"ipc_namespace"`
		ReadOnlyMounts      []string `json:"read_only_mounts"`
		MaskedPaths         []string `json:"masked_paths"`
		ProtectedNames      []string `json:"protected_names"`
	} `json:"enforcement"`
	Degraded []struct {
		Feature string `json:"feature"`
		Reason  string `json:"reason"`
	} `json:"degraded"`
	Denials   []denial  `json:"denials"`
	TimedOut  bool      `json:"timed_out"`
	KilledBy  string    `json:"killed_by"`
	Resources resources `json:"resources"`
	Stdout    string    `json:"stdout"`
	Stderr    string    `json:"stderr"`
	Error     string    `json:"error"`
	raw       map[string]json.RawMessage
}

func decodeReport(t *testing.T, b []byte) *report {
	t.Helper()
	var r report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, b)
	}
	if err := json.Unmarshal(b, &r.raw); err != nil {
		t.Fatalf("report is not a JSON object: %v\n%s", err, b)
	}
	return &r
}

func readReport(t *testing.T, path string) *report {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return decodeReport(t, b)
}

// denial is one entry of the report's denials.
type denial struct {
	Operation  string `json:"operation"`
	Path       string `json:"path"`
	Syscall    string `json:"syscall"`
	Source     string `json:"source"`
	Confidence string `json:"confidence"`
	Reason     string `json:"reason"`
	Tolerated  bool   `json:"tolerated"`
	Address    *struct {
		Family  string `json:"family"`
		Address string `json:"address"`
		Port    int    `json:"port"`
	} `json:"address"`
}

// denied reports whether the report lists a denial of operation on path.
func (r *report) denied(operation, path string) bool {
	for _, d := range r.Denials {
		if d.Operation == operation && d.Path == path {
			return true
		}
	}
	return false
}

// degradedFeatures returns the features of the report's degraded list.
func (r *report) degradedFeatures() []string {
	var out []string
	for _, d := range r.Degraded {
		out = append(out, d.Feature)
	}
	return out
}

// degraded returns the reason of the downgrade of feature, or "".
func (r *report) degraded(feature string) string {
	for _, d := range r.Degraded {
		if d.Feature == feature {
			return d.Reason
		}
	}
	return ""
}

// workspace returns a fresh directory to use as the sandbox's cwd.
func workspace(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// gitRepo makes dir a git repository with one commit, with git itself.
func gitRepo(t *testing.T, dir string) {
	t.Helper()
	needTool(t, "git")
	for _, args := range [][]string{
		{"init", "-q", "."},
		{"-c", "user.name=sbx", "-c", "user.email=sbx@example.com", "commit", "-q", "--allow-empty", "-m", "initial commit"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %q: %v\n%s", args, err, b)
		}
	}
}

// dotGit gives dir a .git directory shaped like git's (config, HEAD,
// refs/heads), without git: sbx finds carve-outs by path, so tests of them
// need no git and run where it is not installed.
func dotGit(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, ".git", "refs", "heads"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, ".git", "config"), "[core]\n\trepositoryformatversion = 0\n")
	writeFile(t, filepath.Join(dir, ".git", "HEAD"), "ref: refs/heads/main\n")
}

// needTool returns the path of a program a test runs. A missing program
// fails the test (.ci/run installs them), unless the environment declares
// it absent in SBX_IT_ABSENT_TOOLS (the busybox VM guest of
// integration/vm): that is not a kernel feature, so the test skips,
// saying so.
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	for _, absent := range strings.Fields(os.Getenv("SBX_IT_ABSENT_TOOLS")) {
		if absent == name {
			t.Skipf("SKIP: %s is not installed in this environment (SBX_IT_ABSENT_TOOLS=%q)", name, os.Getenv("SBX_IT_ABSENT_TOOLS"))
		}
	}
	t.Fatalf("%s is required by the integration tests: %v (set SBX_IT_ABSENT_TOOLS=%s where it cannot be installed)", name, err, name)
	return ""
}

// outsidePath returns a path that does not exist yet under $HOME, outside
// every writable root of a sandbox whose cwd is a t.TempDir(), and removes
// whatever a broken sandbox might leave there.
func outsidePath(t *testing.T) string {
	t.Helper()
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatalf("HOME: %v", err)
	}
	home, err = filepath.EvalSymlinks(home)
	if err != nil {
		t.Fatalf("HOME: %v", err)
	}
	tmp, _ := filepath.EvalSymlinks(os.TempDir())
	for _, root := range []string{"/tmp", tmp} {
		if home == root || strings.HasPrefix(home, root+"/") {
			t.Fatalf("HOME=%s is under %s, which sandboxes may write; point HOME elsewhere", home, root)
		}
	}
	p := filepath.Join(home, fmt.Sprintf("sbx-it-%d-%d", os.Getpid(), time.Now().UnixNano()))
	t.Cleanup(func() { os.RemoveAll(p) })
	return p
}

// tmpPath returns a fresh path directly under /tmp, removed afterwards.
func tmpPath(t *testing.T) string {
	p := fmt.Sprintf("/tmp/sbx-it-%d-%d", os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() { os.RemoveAll(p) })
	return p
}

func isRoot() bool { return os.Geteuid() == 0 }

// privileged reports whether the test holds CAP_SYS_ADMIN, as sbx decides
// whether it makes its namespaces without a user namespace: root outside a
// container does, root in a container's default capability set does not.
func privileged() bool { return hasCap(unix.CAP_SYS_ADMIN) }

// hasCap reports whether capability c is in the test's effective set.
func hasCap(c int) bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[c/32].Effective&(1<<(c%32)) != 0
}

// oneLine asserts that s is exactly one non-empty line.
func oneLine(t *testing.T, what, s string) {
	t.Helper()
	s = strings.TrimSuffix(s, "\n")
	if s == "" || strings.Contains(s, "\n") {
		t.Errorf("%s: want exactly one line, got %d:\n%s", what, strings.Count(s, "\n")+1, s)
	}
}
