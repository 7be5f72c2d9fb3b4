package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/report"
)

// The denial corpus: commands the sandbox blocks and commands that fail (or
// work) for their own reasons, run through the real `sbx run` (Main, in
// process: sbx restricts only its launcher thread and the command), with
// every denial asserted. Each hint is then applied, with a justification
// and an approver filled in, and the command must succeed, having asked for
// exactly what the hint named.

// denialProbe is a hidden command of the test binary, run as "sbx" inside
// the sandbox, for what the shell cannot do: connect, bind.
const denialProbe = "__denialprobe"

func init() {
	register(denialProbe, command{hidden: true, summary: "test probe", run: func(args []string, stdio Stdio) int {
		var err error
		switch args[0] {
		case "dial":
			var c net.Conn
			if c, err = net.Dial(args[1], args[2]); err == nil {
				c.Close()
			}
		case "listen":
			var l net.Listener
			if l, err = net.Listen("tcp", args[1]); err == nil {
				l.Close()
			}
		case "sendto", "sendmsg":
			// One datagram from an unconnected socket: WriteTo is sendto(2),
			// WriteMsgUDP sendmsg(2), each with the address.
			var c *net.UDPConn
			if c, err = net.ListenUDP("udp4", nil); err == nil {
				addr := net.UDPAddrFromAddrPort(netip.MustParseAddrPort(args[1]))
				if args[0] == "sendto" {
					_, err = c.WriteTo([]byte("ping"), addr)
				} else {
					_, _, err = c.WriteMsgUDP([]byte("ping"), nil, addr)
				}
				c.Close()
			}
		default:
			err = fmt.Errorf("unknown probe %q", args[0])
		}
		if err != nil {
			fmt.Fprintln(stdio.Err, err)
			return 1
		}
		return 0
	}})
}

type corpusEnv struct {
	base, ws, out, bin, approver string
	host                         string // a non-loopback address of this host, "" if none
	port                         int    // a TCP listener there
}

func (e corpusEnv) approvals() string { return e.approver + ".req" }

type corpusDenial struct{ Op, Object string }

type corpusCase struct {
	name  string
	setup func(t *testing.T, e corpusEnv)
	cmd   func(e corpusEnv) []string
	flags []string
	// want are the denials the report must list, exactly.
	want func(e corpusEnv) []corpusDenial
	// retry is what the hint must ask for: the approval request's
	// additional_permissions or target_mode as JSON, "network" for a retry
	// that only adds --network, "unresolved" for none.
	retry func(e corpusEnv) string
	// wantExit is the command's exit status when it is not a denial
	// (-1: whatever it is, as long as nothing is reported).
	wantExit int
}

func newCorpusEnv(t *testing.T) corpusEnv {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(base, 0o755)
	e := corpusEnv{base: base, ws: base + "/ws", out: base + "/out", bin: base + "/bin", approver: base + "/approve.sh"}
	for _, d := range []string{e.ws, e.out, e.bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(exe, e.bin+"/sbx"); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\ncat > \"$0.req\"\necho '{\"outcome\":\"allowed-once\"}'\n"
	if err := os.WriteFile(e.approver, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return e
}

func corpus() []corpusCase {
	none := func(corpusEnv) []corpusDenial { return nil }
	sh := func(script string) func(e corpusEnv) []string {
		return func(e corpusEnv) []string {
			s := strings.NewReplacer("WS", e.ws, "OUT", e.out, "HOST", e.host, "PORT", fmt.Sprint(e.port)).Replace(script)
			return []string{"/bin/sh", "-c", s}
		}
	}
	probe := func(args ...string) func(e corpusEnv) []string {
		return func(e corpusEnv) []string {
			out := []string{e.bin + "/sbx", denialProbe}
			for _, a := range args {
				out = append(out, strings.NewReplacer("HOST", e.host, "PORT", fmt.Sprint(e.port)).Replace(a))
			}
			return out
		}
	}
	write := func(path func(e corpusEnv) string) func(e corpusEnv) string {
		return func(e corpusEnv) string { return `{"file_system":{"write":["` + path(e) + `"]}}` }
	}
	outDir := func(e corpusEnv) string { return e.out }
	escalated := func(corpusEnv) string { return `"danger-full-access"` }
	network := func(corpusEnv) string { return "network" }
	existing := func(t *testing.T, e corpusEnv) {
		os.WriteFile(e.out+"/existing", []byte("x\n"), 0o644)
		os.WriteFile(e.ws+"/f", []byte("x\n"), 0o644)
	}
	withGit := func(t *testing.T, e corpusEnv) {
		existing(t, e)
		os.MkdirAll(e.ws+"/.git", 0o755)
		os.WriteFile(e.ws+"/.git/config", []byte("[core]\n"), 0o644)
	}
	hidden := func(t *testing.T, e corpusEnv) {
		existing(t, e)
		os.MkdirAll(e.out+"/hidden", 0o755)
		os.WriteFile(e.out+"/hidden/f", []byte("secret\n"), 0o644)
		os.WriteFile(e.base+"/guard.json", []byte(`{"deny_read":["`+e.out+`/hidden"]}`), 0o644)
	}
	d := func(op, object string) corpusDenial { return corpusDenial{op, object} }
	return []corpusCase{
		{name: "write outside", setup: existing, cmd: sh("echo y > OUT/existing"),
			want:  func(e corpusEnv) []corpusDenial { return []corpusDenial{d("write", e.out+"/existing")} },
			retry: write(func(e corpusEnv) string { return e.out + "/existing" })},
		{name: "create outside", setup: existing, cmd: sh("echo y > OUT/new"),
			want:  func(e corpusEnv) []corpusDenial { return []corpusDenial{d("create", e.out+"/new")} },
			retry: write(outDir)},
		{name: "remove outside", setup: existing, cmd: sh("rm OUT/existing"),
			want:  func(e corpusEnv) []corpusDenial { return []corpusDenial{d("remove", e.out+"/existing")} },
			retry: write(outDir)},
		{name: "rename across roots", setup: existing, cmd: sh("mv WS/f OUT/moved"),
			want:  func(e corpusEnv) []corpusDenial { return []corpusDenial{d("rename", e.out+"/moved")} },
			retry: write(outDir)},
		{name: "write through a symlink", setup: func(t *testing.T, e corpusEnv) {
			existing(t, e)
			os.Symlink(e.out+"/existing", e.ws+"/link")
		}, cmd: sh("echo y > WS/link"),
			want:  func(e corpusEnv) []corpusDenial { return []corpusDenial{d("write", e.out+"/existing")} },
			retry: write(func(e corpusEnv) string { return e.out + "/existing" })},
		{name: "write into .git", setup: withGit, cmd: sh("echo y >> WS/.git/config"),
			want:  func(e corpusEnv) []corpusDenial { return []corpusDenial{d("write", e.ws+"/.git/config")} },
			retry: escalated},
		{name: "mkdir .git when absent", setup: existing, cmd: sh("mkdir WS/.git"),
			want:  func(e corpusEnv) []corpusDenial { return []corpusDenial{d("create", e.ws+"/.git")} },
			retry: escalated},
		{name: "TCP connect with network off", cmd: probe("dial", "tcp", "HOST:PORT"),
			want: func(e corpusEnv) []corpusDenial {
				return []corpusDenial{d("connect", fmt.Sprintf("inet %s:%d", e.host, e.port))}
			},
			retry: network},
		{name: "UDP connect with network off", cmd: probe("dial", "udp", "HOST:53"),
			want:  func(e corpusEnv) []corpusDenial { return []corpusDenial{d("connect", "inet "+e.host+":53")} },
			retry: network},
		{name: "UDP sendto with network off", cmd: probe("sendto", "HOST:53"),
			want:  func(e corpusEnv) []corpusDenial { return []corpusDenial{d("send", "inet "+e.host+":53")} },
			retry: network},
		{name: "UDP sendmsg with network off", cmd: probe("sendmsg", "HOST:53"),
			want:  func(e corpusEnv) []corpusDenial { return []corpusDenial{d("send", "inet "+e.host+":53")} },
			retry: network},
		{name: "bind with network off", cmd: probe("listen", "HOST:0"),
			want:  func(e corpusEnv) []corpusDenial { return []corpusDenial{d("bind", "inet "+e.host+":0")} },
			retry: network},
		{name: "guard-forbidden path", setup: func(t *testing.T, e corpusEnv) {
			os.MkdirAll(e.out+"/locked", 0o755)
			os.WriteFile(e.base+"/guard.json", []byte(`{"deny_write":["`+e.out+`/locked"]}`), 0o644)
		}, flags: []string{"--guard", "BASE/guard.json"}, cmd: sh("touch OUT/locked/x"),
			want:  func(e corpusEnv) []corpusDenial { return []corpusDenial{d("create", e.out+"/locked/x")} },
			retry: func(corpusEnv) string { return "unresolved" }},
		{name: "read of a guard-hidden path", setup: hidden, flags: []string{"--guard", "BASE/guard.json"}, cmd: sh("cat OUT/hidden/f"),
			want:  func(e corpusEnv) []corpusDenial { return []corpusDenial{d("read", e.out+"/hidden/f")} },
			retry: func(corpusEnv) string { return "unresolved" }},

		// Not denials.
		{name: "read beside a guard-hidden path", setup: hidden, flags: []string{"--guard", "BASE/guard.json"},
			cmd: sh("cat OUT/existing"), want: none, wantExit: 0},
		{name: "ENOENT read inside a guard-hidden path", setup: hidden, flags: []string{"--guard", "BASE/guard.json"},
			cmd: sh("cat OUT/hidden/missing"), want: none, wantExit: 1},
		{name: "false", cmd: sh("false"), want: none, wantExit: 1},
		{name: "UDP sendto loopback with network off", cmd: probe("sendto", "127.0.0.1:9"), want: none, wantExit: 0},
		{name: "UDP sendmsg loopback with network off", cmd: probe("sendmsg", "127.0.0.1:9"), want: none, wantExit: 0},
		{name: "ENOENT read", cmd: sh("cat WS/missing"), want: none, wantExit: 1},
		{name: "ENOENT write outside", cmd: sh("echo y > OUT/no/such/dir"), want: none, wantExit: 2},
		{name: "root-owned 0600 file read", setup: func(t *testing.T, e corpusEnv) {
			if os.Geteuid() == 0 {
				t.Skip("SKIP: root reads any file; this case is for an unprivileged run")
			}
			if _, err := os.Stat("/etc/shadow"); err != nil {
				t.Skip("SKIP: no /etc/shadow")
			}
		}, cmd: sh("cat /etc/shadow"), want: none, wantExit: 1},
		{name: "0444 file of one's own in the workspace", setup: func(t *testing.T, e corpusEnv) {
			os.WriteFile(e.ws+"/ro.txt", []byte("x\n"), 0o444)
		}, cmd: sh("echo y > WS/ro.txt"), want: func(e corpusEnv) []corpusDenial {
			if os.Geteuid() != 0 {
				return nil // the caller's own permissions, as without sbx
			}
			return []corpusDenial{d("write", e.ws+"/ro.txt")}
		}, retry: func(corpusEnv) string { return `{}` }, wantExit: 2}, // root's command has no CAP_DAC_OVERRIDE, which root bare has: an inferred denial (issue 27)
		{name: "failing compiler", setup: func(t *testing.T, e corpusEnv) {
			if _, err := exec.LookPath("cc"); err != nil {
				t.Skip("SKIP: no cc")
			}
			os.WriteFile(e.ws+"/bad.c", []byte("int main( {\n"), 0o644)
		}, cmd: sh("cd WS && TMPDIR=WS cc -o bad bad.c"), want: none, wantExit: 1},
	}
}

type corpusReport struct {
	ExitCode int             `json:"exit_code"`
	Denials  []report.Denial `json:"denials"`
	Degraded []report.Downgrade
	Retry    *struct {
		SandboxPermissions    string          `json:"sandbox_permissions"`
		AdditionalPermissions json.RawMessage `json:"additional_permissions"`
		EscalateTo            string          `json:"escalate_to"`
		Justification         *string         `json:"justification"`
		Unresolved            []struct {
			Reason string `json:"reason"`
		} `json:"unresolved"`
		Argv    []string       `json:"argv"`
		Request map[string]any `json:"request"`
	} `json:"retry"`
}

func compactJSON(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return b
	}
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}

func readCorpusReport(t *testing.T, path string) corpusReport {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r corpusReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	return r
}

func objects(ds []report.Denial) []corpusDenial {
	var out []corpusDenial
	for _, d := range ds {
		o := d.Path
		if d.Address != nil {
			o = fmt.Sprintf("%s %s:%d", d.Address.Family, d.Address.Address, d.Address.Port)
		}
		out = append(out, corpusDenial{d.Operation, o})
	}
	sort.Slice(out, func(i, j int) bool { return fmt.Sprint(out[i]) < fmt.Sprint(out[j]) })
	return out
}

func sbxMain(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	code := Main(args, Stdio{In: strings.NewReader(""), Out: &out, Err: &out})
	return code, out.String()
}

func TestDenialCorpus(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("SKIP: the supervisor is Linux only")
	}
	host, port, stop := corpusListener(t)
	defer stop()
	var tp, fp, fn int
	for _, tt := range corpus() {
		t.Run(tt.name, func(t *testing.T) {
			e := newCorpusEnv(t)
			e.host, e.port = host, port
			if tt.setup != nil {
				tt.setup(t, e)
			}
			cmd := tt.cmd(e)
			if e.host == "" && strings.Contains(strings.Join(cmd, " "), denialProbe) {
				t.Skip("SKIP: no non-loopback address to connect to")
			}
			reportPath := e.base + "/report.json"
			flags := []string{"run", "--mode", "workspace-write", "--cwd", e.ws, "--exclude-tmp", "--exclude-tmpdir", "--report", reportPath}
			for _, f := range tt.flags {
				flags = append(flags, strings.ReplaceAll(f, "BASE", e.base))
			}
			code, out := sbxMain(t, append(append(flags, "--"), cmd...)...)
			rep := readCorpusReport(t, reportPath)
			if slices.ContainsFunc(rep.Degraded, func(d report.Downgrade) bool { return d.Feature == "denial-reports" }) {
				t.Skipf("SKIP: no denial reports here: %+v", rep.Degraded)
			}
			got, want := objects(rep.Denials), tt.want(e)
			sort.Slice(want, func(i, j int) bool { return fmt.Sprint(want[i]) < fmt.Sprint(want[j]) })
			for _, w := range want {
				if slices.Contains(got, w) {
					tp++
				} else {
					fn++
				}
			}
			for _, g := range got {
				if !slices.Contains(want, g) {
					fp++
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("denials: got %v, want %v\noutput: %s", got, want, out)
			}
			if len(want) == 0 {
				if tt.wantExit >= 0 && code != tt.wantExit {
					t.Errorf("exit %d, want %d: %s", code, tt.wantExit, out)
				}
				if rep.Retry != nil {
					t.Errorf("a retry hint without denials: %+v", rep.Retry)
				}
				return
			}
			if code == 0 {
				t.Errorf("the denied command exited 0: %s", out)
			}
			checkRetry(t, e, tt, rep)
		})
	}
	precision, recall := 1.0, 1.0
	if tp+fp > 0 {
		precision = float64(tp) / float64(tp+fp)
	}
	if tp+fn > 0 {
		recall = float64(tp) / float64(tp+fn)
	}
	t.Logf("denial corpus: %d true positives, %d false positives, %d missed: precision %.0f%%, recall %.0f%%",
		tp, fp, fn, 100*precision, 100*recall)
}

// checkRetry applies the hint of rep and checks the command then succeeds,
// having asked for exactly the expected escalation.
func checkRetry(t *testing.T, e corpusEnv, tt corpusCase, rep corpusReport) {
	t.Helper()
	wantRetry := tt.retry(e)
	r := rep.Retry
	if r != nil {
		r.AdditionalPermissions = compactJSON(r.AdditionalPermissions)
	}
	if r == nil {
		t.Fatal("denials without a retry hint")
	}
	if wantRetry == "unresolved" {
		if r.SandboxPermissions != "" || len(r.Argv) > 0 || len(r.Unresolved) == 0 || !strings.HasPrefix(r.Unresolved[0].Reason, "forbidden by guard") {
			t.Errorf("guard-forbidden: got %+v, want only an unresolved 'forbidden by guard'", r)
		}
		return
	}
	if r.Justification == nil || *r.Justification != "" {
		t.Errorf("justification %v, want present and empty", r.Justification)
	}
	argv := slices.Clone(r.Argv)
	if len(argv) < 3 || argv[0] != "sbx" || argv[1] != "run" {
		t.Fatalf("retry argv %q", argv)
	}
	// Fill in what the caller must: the justification, and an approver
	// that says yes and keeps the request it was shown. Write the retry's
	// report elsewhere.
	dash := slices.Index(argv, "--")
	for i := range argv[:dash] {
		if argv[i] == "--justification" {
			argv[i+1] = "the retry hint of the corpus"
		}
		if argv[i] == "--report" {
			argv[i+1] = e.base + "/retry-report.json"
		}
	}
	argv = slices.Insert(argv, dash, "--approver", e.approver)
	code, out := sbxMain(t, argv[1:]...)
	if code != 0 {
		t.Fatalf("the retry %q exited %d: %s", argv, code, out)
	}
	again := readCorpusReport(t, e.base+"/retry-report.json")
	if len(again.Denials) != 0 {
		t.Errorf("the retry still had denials: %+v", again.Denials)
	}
	asked, _ := os.ReadFile(e.approvals())
	var req struct {
		TargetMode            *string         `json:"target_mode"`
		AdditionalPermissions json.RawMessage `json:"additional_permissions"`
	}
	if len(asked) > 0 {
		json.Unmarshal(asked, &req)
		req.AdditionalPermissions = compactJSON(req.AdditionalPermissions)
	}
	switch wantRetry {
	case "network":
		if r.SandboxPermissions != "with_additional_permissions" || string(r.AdditionalPermissions) != `{"network":{"enabled":true}}` {
			t.Errorf("retry %s %s, want network", r.SandboxPermissions, r.AdditionalPermissions)
		}
		if !slices.Contains(r.Argv, "--network") || len(asked) > 0 {
			t.Errorf("the network retry is not --network alone: %q (approval asked: %s)", r.Argv, asked)
		}
	case `"danger-full-access"`:
		if r.SandboxPermissions != "require_escalated" || r.EscalateTo != "danger-full-access" {
			t.Errorf("retry %s to %q, want require_escalated to danger-full-access", r.SandboxPermissions, r.EscalateTo)
		}
		if req.TargetMode == nil || *req.TargetMode != "danger-full-access" || req.AdditionalPermissions != nil {
			t.Errorf("the approver was asked %s, want target_mode danger-full-access only", asked)
		}
	default:
		if r.SandboxPermissions != "with_additional_permissions" || string(r.AdditionalPermissions) != wantRetry {
			t.Errorf("retry %s %s, want with_additional_permissions %s", r.SandboxPermissions, r.AdditionalPermissions, wantRetry)
		}
		if string(req.AdditionalPermissions) != wantRetry || req.TargetMode != nil {
			t.Errorf("the approver was asked %s, want exactly %s", asked, wantRetry)
		}
	}
}

// TestDenialRetryExec applies the hint of `sbx exec` the same way: the
// request it gives, with a justification and an approver, succeeds.
func TestDenialRetryExec(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("SKIP: the supervisor is Linux only")
	}
	e := newCorpusEnv(t)
	os.MkdirAll(e.ws+"/sub", 0o755)
	code, out, stderr := execMain(t, mustJSON(map[string]any{
		"command": []string{"/bin/sh", "-c", "echo y > " + e.out + "/new"}, "cwd": e.ws, "sandbox_mode": "workspace-write",
		"exclude_tmp": true, "exclude_tmpdir": true, "call_id": "c1",
		"additional_permissions": map[string]any{"file_system": map[string]any{"write": []string{"sub"}}}, "preauthorized": true,
	}))
	if code != 0 {
		t.Fatalf("exec: %d %s", code, stderr)
	}
	var res struct {
		ExitCode int             `json:"exit_code"`
		Denials  []report.Denial `json:"denials"`
		Retry    struct {
			Request map[string]any `json:"request"`
		} `json:"retry"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	if got := objects(res.Denials); !slices.Equal(got, []corpusDenial{{"create", e.out + "/new"}}) {
		t.Fatalf("denials %v", got)
	}
	req := res.Retry.Request
	if req["sandbox_permissions"] != "with_additional_permissions" || req["justification"] != "" || req["call_id"] != "c1" {
		t.Fatalf("retry request %v", req)
	}
	if got := mustJSON(req["additional_permissions"]); got != `{"file_system":{"write":["`+e.out+`","`+e.ws+`/sub"]}}` {
		t.Errorf("additional_permissions %s: want the call's own plus the denied directory", got)
	}
	req["justification"] = "retry"
	req["approver"] = []string{e.approver}
	req["approval_policy"] = "on-request"
	code, out, stderr = execMain(t, mustJSON(req))
	if code != 0 {
		t.Fatalf("retry: %d %s %s", code, stderr, out)
	}
	var again struct {
		ExitCode int             `json:"exit_code"`
		Denials  []report.Denial `json:"denials"`
	}
	json.Unmarshal(out, &again)
	if again.ExitCode != 0 || len(again.Denials) != 0 {
		t.Errorf("retry result: %s", out)
	}
}

// TestExplainDenials: the stderr summary is off without a terminal and on
// with --explain-denials.
func TestExplainDenials(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("SKIP: the supervisor is Linux only")
	}
	e := newCorpusEnv(t)
	args := func(extra ...string) []string {
		return append(append([]string{"run", "--mode", "workspace-write", "--cwd", e.ws, "--exclude-tmp", "--exclude-tmpdir"}, extra...),
			"--", "/bin/sh", "-c", "echo y > "+e.out+"/x")
	}
	if _, out := sbxMain(t, args()...); strings.Contains(out, "sbx: denied") {
		t.Errorf("a summary without a terminal: %s", out)
	}
	_, out := sbxMain(t, args("--explain-denials")...)
	for _, want := range []string{
		"sbx: denied create " + e.out + "/x (",
		"outside the writable roots",
		"sbx: retry: sbx run --mode workspace-write --cwd " + e.ws + " --exclude-tmp --exclude-tmpdir --explain-denials --sandbox-permissions with_additional_permissions --allow-write " + e.out + " --justification '' -- /bin/sh -c 'echo y > " + e.out + "/x'",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if _, out := sbxMain(t, args("--explain-denials=false")...); strings.Contains(out, "sbx: denied") {
		t.Errorf("--explain-denials=false printed: %s", out)
	}
	// A command that exits 0 with the write refused: no retry, and the
	// summary says why (issue 29: quiet on success).
	quiet := []string{"run", "--mode", "workspace-write", "--cwd", e.ws, "--exclude-tmp", "--exclude-tmpdir", "--explain-denials",
		"--", "/bin/sh", "-c", "echo y > " + e.out + "/x 2>/dev/null; true"}
	_, out = sbxMain(t, quiet...)
	if !strings.Contains(out, "sbx: denied create "+e.out+"/x (") || !strings.Contains(out, "sbx: the command succeeded: these denials did not fail it") ||
		strings.Contains(out, "sbx: retry:") {
		t.Errorf("summary of a command that exited 0:\n%s", out)
	}
	_, out = sbxMain(t, append(quiet[:len(quiet)-4:len(quiet)-4], "--retry-on-success", "--", "/bin/sh", "-c", "echo y > "+e.out+"/x 2>/dev/null; true")...)
	if !strings.Contains(out, "sbx: retry: ") || strings.Contains(out, "did not fail it") {
		t.Errorf("summary with --retry-on-success:\n%s", out)
	}
}

// corpusListener listens on a non-loopback address of this host, so that a
// connect is denied with the network off and works with it on.
func corpusListener(t *testing.T) (string, int, func()) {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.To4() == nil || ipn.IP.IsLoopback() || ipn.IP.IsLinkLocalUnicast() {
			continue
		}
		l, err := net.Listen("tcp", ipn.IP.String()+":0")
		if err != nil {
			continue
		}
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		return ipn.IP.String(), l.Addr().(*net.TCPAddr).Port, func() { l.Close() }
	}
	t.Log("no non-loopback IPv4 address: the network cases are skipped")
	return "", 0, func() {}
}

// TestDenialReportsNested: sbx inside sbx cannot have a second listener
// (the kernel allows one per filter chain). The inner call runs without
// supervision and says so; the outer supervisor still sees, refuses and
// reports the inner command's writes; --require denial-reports refuses.
func TestDenialReportsNested(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("SKIP: the supervisor is Linux only")
	}
	// The inner sbx holds no capability (root's are dropped too) and
	// cannot write a user namespace's uid map under the outer Landlock
	// domain, so it falls back to Landlock and seccomp without namespaces.
	e := newCorpusEnv(t)
	outer := []string{"run", "--mode", "workspace-write", "--cwd", e.ws, "--exclude-tmp", "--exclude-tmpdir", "--report", e.base + "/outer.json", "--"}
	inner := []string{e.bin + "/sbx", "run", "--mode", "workspace-write", "--cwd", e.ws, "--exclude-tmp", "--exclude-tmpdir", "--report", e.ws + "/inner.json"}
	sbxMain(t, append(append(outer, inner...), "--", "/bin/sh", "-c", "echo y > "+e.out+"/x")...)
	in := readCorpusReport(t, e.ws+"/inner.json")
	var reasons []string
	for _, d := range in.Degraded {
		if d.Feature == "denial-reports" {
			reasons = append(reasons, d.Reason)
		}
		if d.Feature == "carve-out-create" && strings.Contains(d.Reason, "supervisor") {
			t.Errorf("the inner call claims a supervisor: %s", d.Reason)
		}
	}
	if len(reasons) != 1 || !strings.Contains(reasons[0], "sandbox inside a sandbox") {
		t.Errorf("inner downgrades %+v, want one denial-reports for the nested listener", in.Degraded)
	}
	if len(in.Denials) != 0 {
		t.Errorf("the unsupervised inner call reports denials: %+v", in.Denials)
	}
	out := readCorpusReport(t, e.base+"/outer.json")
	if got := objects(out.Denials); !slices.Contains(got, corpusDenial{"create", e.out + "/x"}) {
		t.Errorf("the outer supervisor did not report the inner write: %v", got)
	}
	code, msg := sbxMain(t, append(append(outer, inner[0], "run", "--require", "denial-reports", "--mode", "workspace-write", "--cwd", e.ws), "--", "/bin/true")...)
	if code != ExitRefused {
		t.Errorf("--require denial-reports nested: exit %d, want %d: %s", code, ExitRefused, msg)
	}
}
