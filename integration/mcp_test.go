//go:build linux

package integration

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// sbx mcp (docs/mcp.md) against a real MCP client: testdata/mcp/client.mjs,
// built on the official TypeScript SDK (@modelcontextprotocol/sdk, pinned by
// its package-lock.json), which checks every message against the SDK's
// schemas.

var (
	mcpProgOnce sync.Once
	mcpProgDir  string // "": sbx-mcp is beside sbx
	mcpProgErr  error
)

// mcpPath is the PATH the client starts sbx mcp with: sbx mcp runs the
// sbx-mcp program beside sbx (test.sh builds it there), else on PATH,
// where a copy built from the module is put.
func mcpPath(t *testing.T) string {
	t.Helper()
	goBin := ""
	if _, err := os.Stat(filepath.Join(filepath.Dir(sbxBin), "sbx-mcp")); err != nil {
		goBin = goTool(t) // skips where go is absent by design (the container and VM guests)
	}
	mcpProgOnce.Do(func() {
		if goBin == "" {
			return
		}
		dir, err := os.MkdirTemp("", "sbx-mcp-prog-")
		if err != nil {
			mcpProgErr = err
			return
		}
		os.Chmod(dir, 0o755)
		cmd := exec.Command(goBin, "build", "-o", filepath.Join(dir, "sbx-mcp"), "../cmd/sbx-mcp")
		if out, err := cmd.CombinedOutput(); err != nil {
			mcpProgErr = &npmError{err, string(out)}
			return
		}
		mcpProgDir = dir
	})
	if mcpProgErr != nil {
		t.Fatalf("build sbx-mcp: %v", mcpProgErr)
	}
	if mcpProgDir == "" {
		return os.Getenv("PATH")
	}
	return mcpProgDir + string(os.PathListSeparator) + os.Getenv("PATH")
}

// mcpClientDir is testdata/mcp with the SDK installed (npmClientDir).
func mcpClientDir(t *testing.T) string {
	t.Helper()
	return npmClientDir(t, "mcp", "@modelcontextprotocol/sdk")
}

var npmClients struct {
	sync.Mutex
	dirs map[string]string
	errs map[string]error
}

// npmClientDir is a directory with testdata/NAME's client.mjs and its
// packages installed (pkg is the one whose presence says so): testdata/NAME
// when .ci/run installed it there (npm ci), else a copy in which npm ci runs
// once. Skipped only when node or npm is absent.
func npmClientDir(t *testing.T, name, pkg string) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: the %s client (a TypeScript SDK) cannot run", tool, name)
		}
	}
	npmClients.Lock()
	defer npmClients.Unlock()
	if npmClients.dirs == nil {
		npmClients.dirs, npmClients.errs = map[string]string{}, map[string]error{}
	}
	if _, done := npmClients.dirs[name]; !done {
		npmClients.dirs[name], npmClients.errs[name] = installNPMClient(name, pkg)
	}
	if err := npmClients.errs[name]; err != nil {
		t.Fatalf("install the %s client (npm ci in a copy of testdata/%s): %v", name, name, err)
	}
	return npmClients.dirs[name]
}

func installNPMClient(name, pkg string) (string, error) {
	src, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(src, "node_modules", pkg, "package.json")); err == nil {
		return src, nil
	}
	dir, err := os.MkdirTemp("", "sbx-"+name+"-client-")
	if err != nil {
		return "", err
	}
	for _, f := range []string{"client.mjs", "package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, f), b, 0o644)
		}
		if err != nil {
			return "", err
		}
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "npm_config_cache="+filepath.Join(dir, ".npm"))
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", &npmError{err, string(out)}
	}
	return dir, nil
}

type mcpCall struct {
	Name          string         `json:"name"`
	Arguments     map[string]any `json:"arguments"`
	CancelAfterMS int            `json:"cancel_after_ms,omitempty"`
	// Roots, when set, replace the client's MCP roots before the call
	// (notifications/roots/list_changed).
	Roots []string `json:"roots,omitempty"`
}

type mcpToolResult struct {
	IsError           bool           `json:"isError"`
	StructuredContent map[string]any `json:"structuredContent"`
}

type mcpRun struct {
	Tools []struct {
		Name        string         `json:"name"`
		InputSchema map[string]any `json:"inputSchema"`
	} `json:"tools"`
	Results []struct {
		Result *mcpToolResult `json:"result"`
		Error  string         `json:"error"`
		MS     int            `json:"ms"`
	} `json:"results"`
	Elicitations []struct {
		Message         string         `json:"message"`
		RequestedSchema map[string]any `json:"requestedSchema"`
	} `json:"elicitations"`
}

// runMCP runs client.mjs against sbx mcp with flags, making calls and
// answering elicitations with answers (nil: the client cannot be asked).
func runMCP(t *testing.T, flags []string, calls []mcpCall, answers []map[string]any, roots ...string) mcpRun {
	t.Helper()
	argv, _ := json.Marshal(append([]string{sbxBin, "mcp"}, flags...))
	return runMCPClient(t, "MCP_COMMAND="+string(argv), calls, answers, roots...)
}

// runMCPClient runs client.mjs with how it reaches sbx mcp (MCP_COMMAND
// or MCP_SOCKET) in reach.
func runMCPClient(t *testing.T, reach string, calls []mcpCall, answers []map[string]any, roots ...string) mcpRun {
	t.Helper()
	dir := mcpClientDir(t)
	cs, _ := json.Marshal(calls)
	cmd := exec.Command("node", filepath.Join(dir, "client.mjs"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), reach, "MCP_CALLS="+string(cs), "PATH="+mcpPath(t))
	if answers != nil {
		a, _ := json.Marshal(answers)
		cmd.Env = append(cmd.Env, "MCP_ELICIT="+string(a))
	}
	if roots != nil {
		rs, _ := json.Marshal(roots)
		cmd.Env = append(cmd.Env, "MCP_ROOTS="+string(rs))
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("MCP client: %v; stderr: %s", err, stderr.String())
	}
	var r mcpRun
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("MCP client output %q: %v; stderr: %s", out, err, stderr.String())
	}
	if len(r.Results) != len(calls) {
		t.Fatalf("%d results for %d calls", len(r.Results), len(calls))
	}
	return r
}

func shellCall(argv ...string) mcpCall {
	return mcpCall{Name: "shell", Arguments: map[string]any{"command": argv}}
}

// The tools, an allowed call, a command's own failure (not a denial), a
// denied call with its structured denial and retry, an elicited approval
// accepted for the session and its grant applying to the next call, one
// declined, and a cancelled call.
func TestMCPStdio(t *testing.T) {
	ws := t.TempDir()
	allowed, other := filepath.Join(ws, "allowed"), filepath.Join(ws, "other")
	for _, d := range []string{allowed, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	escalate := func(dir, file string) mcpCall {
		return mcpCall{Name: "shell", Arguments: map[string]any{"command": []string{"touch", filepath.Join(dir, file)},
			"sandbox_permissions": "with_additional_permissions", "justification": "the test writes there",
			"additional_permissions": map[string]any{"file_system": map[string]any{"write": []string{dir}}}}}
	}
	calls := []mcpCall{
		shellCall("echo", "hello"),
		shellCall("sh", "-c", "exit 3"),
		shellCall("touch", filepath.Join(allowed, "denied")),
		escalate(allowed, "approved"),
		shellCall("touch", filepath.Join(allowed, "granted")),
		escalate(other, "declined"),
		{Name: "shell", Arguments: map[string]any{"command": []string{"sleep", "60"}}, CancelAfterMS: 1000},
		{Name: "fs_write", Arguments: map[string]any{"path": filepath.Join(other, "fs"), "content": "x"}},
	}
	answers := []map[string]any{
		{"action": "accept", "content": map[string]any{"decision": "allow-for-session"}},
		{"action": "decline"},
	}
	r := runMCP(t, []string{"--ephemeral", "--cwd", ws, "--mode", "read-only", "--approval-policy", "on-request"}, calls, answers)

	names := map[string]bool{}
	for _, tool := range r.Tools {
		names[tool.Name] = true
	}
	for _, want := range []string{"shell", "apply_patch", "fs_write", "fs_mkdir", "fs_remove", "fs_move", "fs_copy", "fs_chmod", "fs_append"} {
		if !names[want] {
			t.Errorf("no tool %s in %v", want, names)
		}
	}
	res := func(i int) *mcpToolResult {
		t.Helper()
		if r.Results[i].Result == nil {
			t.Fatalf("call %d: no result: %s", i, r.Results[i].Error)
		}
		return r.Results[i].Result
	}
	if got := res(0); got.IsError || got.StructuredContent["stdout"] != "hello\n" || got.StructuredContent["exit_code"] != float64(0) {
		t.Errorf("allowed call: %+v", got)
	}
	if got := res(1); got.IsError || got.StructuredContent["denied"] != false || got.StructuredContent["exit_code"] != float64(3) {
		t.Errorf("exit 3 is not a denial: %+v", got)
	}
	denied := res(2)
	if !denied.IsError || denied.StructuredContent["denied"] != true {
		t.Errorf("denied call: %+v", denied)
	}
	if ds, _ := denied.StructuredContent["denials"].([]any); len(ds) == 0 {
		t.Errorf("denied call without denials: %+v", denied)
	}
	retry, _ := denied.StructuredContent["retry"].(map[string]any)
	args, _ := retry["arguments"].(map[string]any)
	if args["sandbox_permissions"] != "with_additional_permissions" || args["command"] == nil {
		t.Errorf("retry arguments: %v", retry)
	}
	if _, err := os.Stat(filepath.Join(allowed, "denied")); err == nil {
		t.Errorf("the denied call made its file")
	}
	if got := res(3); got.IsError || got.StructuredContent["exit_code"] != float64(0) {
		t.Errorf("approved call: %+v", got)
	}
	if got := res(4); got.IsError || got.StructuredContent["exit_code"] != float64(0) {
		t.Errorf("the session grant did not apply to the next call: %+v", got)
	}
	for _, f := range []string{"approved", "granted"} {
		if _, err := os.Stat(filepath.Join(allowed, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if got := res(5); !got.IsError || got.StructuredContent["denied"] != true || got.StructuredContent["outcome"] != "rejected" {
		t.Errorf("declined call: %+v", got)
	}
	if _, err := os.Stat(filepath.Join(other, "declined")); err == nil {
		t.Errorf("the declined call made its file")
	}
	if len(r.Elicitations) != 2 {
		t.Fatalf("%d elicitations, want 2 (the grant applies without asking): %+v", len(r.Elicitations), r.Elicitations)
	}
	if m := r.Elicitations[0].Message; !strings.Contains(m, "touch") || !strings.Contains(m, allowed) || !strings.Contains(m, "the test writes there") {
		t.Errorf("the question does not carry what is requested: %q", m)
	}
	if c := r.Results[6]; c.Error == "" || c.MS > 30000 {
		t.Errorf("cancelled call: %+v", c)
	}
	if got := res(7); !got.IsError || got.StructuredContent["denied"] != true || got.StructuredContent["ok"] != false {
		t.Errorf("denied fs_write: %+v", got)
	}
}

// Under approval policy never nothing is asked: an escalation is denied
// before the client is elicited. The session's log survives the server and
// sbx log shows it.
func TestMCPNeverAndLog(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	os.Chmod(state, 0o700)
	calls := []mcpCall{{Name: "shell", Arguments: map[string]any{"command": []string{"touch", filepath.Join(ws, "x")},
		"sandbox_permissions": "with_additional_permissions", "justification": "the test asks",
		"additional_permissions": map[string]any{"file_system": map[string]any{"write": []string{ws}}}}}}
	r := runMCP(t, []string{"--state-dir", state, "--cwd", ws, "--mode", "read-only", "--approval-policy", "never"}, calls,
		[]map[string]any{{"action": "accept", "content": map[string]any{"decision": "allow-once"}}})
	if got := r.Results[0].Result; got == nil || !got.IsError || got.StructuredContent["denied"] != true || got.StructuredContent["outcome"] != "never" {
		t.Errorf("never: %+v %s", got, r.Results[0].Error)
	}
	if len(r.Elicitations) != 0 {
		t.Errorf("never asked the client: %+v", r.Elicitations)
	}
	if _, err := os.Stat(filepath.Join(ws, "x")); err == nil {
		t.Errorf("the call ran under never")
	}
	// A second server on the same state directory replays the first's
	// session and serves a new one; sbx log shows both.
	r = runMCP(t, []string{"--state-dir", state, "--cwd", ws, "--mode", "read-only", "--approval-policy", "never"},
		[]mcpCall{shellCall("echo", "again")}, nil)
	if got := r.Results[0].Result; got == nil || got.IsError || got.StructuredContent["stdout"] != "again\n" {
		t.Errorf("after the restart: %+v %s", got, r.Results[0].Error)
	}
	out, err := exec.Command(sbxBin, "log", "show", state).CombinedOutput()
	if err != nil || strings.Count(string(out), "session/opened") != 2 || strings.Count(string(out), "call/started") != 2 {
		t.Errorf("sbx log show: %v\n%s", err, out)
	}
}

// The server's roots come from its flags, and a client's MCP roots narrow
// them, never widen them: under workspace-write a call writes inside the
// narrowed roots only, and a cwd outside them is refused.
func TestMCPRoots(t *testing.T) {
	ws := t.TempDir()
	if real, err := filepath.EvalSymlinks(ws); err == nil {
		ws = real
	}
	inner, server, outside := filepath.Join(ws, "srv", "inner"), filepath.Join(ws, "srv"), filepath.Join(ws, "outside")
	for _, d := range []string{inner, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	calls := []mcpCall{
		shellCall("touch", filepath.Join(inner, "ok")),
		shellCall("touch", filepath.Join(server, "narrowed")),
		{Name: "shell", Arguments: map[string]any{"command": []string{"true"}, "cwd": outside}},
		shellCall("touch", filepath.Join(outside, "widened")),
	}
	// The client offers inner (inside the server's root) and outside (not
	// inside it): the session's root is inner alone.
	r := runMCP(t, []string{"--ephemeral", "--root", server, "--cwd", server, "--mode", "workspace-write", "--exclude-tmp", "--approval-policy", "never"}, calls, nil,
		"file://"+inner, "file://"+outside)
	res := func(i int) *mcpToolResult {
		t.Helper()
		if r.Results[i].Result == nil {
			t.Fatalf("call %d: no result: %s", i, r.Results[i].Error)
		}
		return r.Results[i].Result
	}
	if got := res(0); got.IsError || got.StructuredContent["exit_code"] != float64(0) {
		t.Errorf("write inside the narrowed root: %+v", got)
	}
	if _, err := os.Stat(filepath.Join(inner, "ok")); err != nil {
		t.Error(err)
	}
	if got := res(1); !got.IsError || got.StructuredContent["denied"] != true {
		t.Errorf("write in the server's root outside the client's: %+v", got)
	}
	if got := res(2); !got.IsError || got.StructuredContent["denied"] != false {
		t.Errorf("cwd outside the roots: %+v", got)
	}
	if got := res(3); !got.IsError || got.StructuredContent["denied"] != true {
		t.Errorf("write in the client's root outside the server's: %+v", got)
	}
	for _, f := range []string{filepath.Join(server, "narrowed"), filepath.Join(outside, "widened")} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s was made", f)
		}
	}
}

// sbx mcp --listen: streamable HTTP on a unix socket, driven by the
// official Go SDK's client; and a sandboxed call that connects to the
// socket is refused (the connection closed unanswered), as every sbx
// listener refuses calls.
func TestMCPHTTP(t *testing.T) {
	dir := shortWorkspace(t)
	// The socket in a directory of its own (docs/mcp.md): its directory
	// is read-only in every call, and the calls write in dir.
	if err := os.Mkdir(filepath.Join(dir, "run"), 0o700); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "run", "m.sock")
	cmd := exec.Command(sbxBin, "mcp", "--listen", sock, "--ephemeral", "--cwd", dir, "--mode", "read-only", "--approval-policy", "on-request")
	cmd.Env = append(baseEnv(), "PATH="+mcpPath(t))
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
	waitForPath(t, sock)
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "sbx-it", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: "http://localhost/", HTTPClient: hc}, nil)
	if err != nil {
		t.Fatalf("connect: %v; stderr: %s", err, stderr.String())
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 9 {
		t.Fatalf("tools: %v %v", tools, err)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "shell", Arguments: map[string]any{"command": []string{"echo", "over http"}}})
	if err != nil {
		t.Fatal(err)
	}
	if sc, _ := res.StructuredContent.(map[string]any); res.IsError || sc["stdout"] != "over http\n" {
		t.Errorf("allowed call: %+v", res)
	}
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "shell", Arguments: map[string]any{"command": []string{"touch", filepath.Join(dir, "x")}}})
	if err != nil {
		t.Fatal(err)
	}
	if sc, _ := res.StructuredContent.(map[string]any); !res.IsError || sc["denied"] != true {
		t.Errorf("denied call: %+v", res)
	}
	// The TypeScript SDK's client over the same socket: a denial, and an
	// escalation approved by elicitation over HTTP, then one declined.
	ask := func(file string) mcpCall {
		return mcpCall{Name: "shell", Arguments: map[string]any{"command": []string{"touch", filepath.Join(dir, file)},
			"sandbox_permissions": "with_additional_permissions", "justification": "over http",
			"additional_permissions": map[string]any{"file_system": map[string]any{"write": []string{dir}}}}}
	}
	r := runMCPClient(t, "MCP_SOCKET="+sock, []mcpCall{shellCall("touch", filepath.Join(dir, "y")), ask("approved"), ask("declined")},
		[]map[string]any{{"action": "accept", "content": map[string]any{"decision": "allow-once"}}, {"action": "decline"}})
	for i, want := range []struct {
		isError bool
		file    string
	}{{true, "y"}, {false, "approved"}, {true, "declined"}} {
		got := r.Results[i].Result
		if got == nil || got.IsError != want.isError {
			t.Errorf("TypeScript client over HTTP, call %d: %+v %s", i, got, r.Results[i].Error)
		}
		if _, err := os.Stat(filepath.Join(dir, want.file)); (err == nil) == want.isError {
			t.Errorf("call %d: %s made: %v", i, want.file, err == nil)
		}
	}
	if len(r.Elicitations) != 2 {
		t.Errorf("%d elicitations over HTTP, want 2", len(r.Elicitations))
	}
	needTool(t, "python3")
	connect := `import socket,sys
s=socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1]); s.sendall(b"GET / HTTP/1.0\r\nHost: localhost\r\n\r\n"); print(repr(s.recv(100)))
except OSError as e:
    print("error", e)`
	for _, flags := range [][]string{{"--mode", "workspace-write"}, {"--mode", "workspace-write", "--network"}} {
		out, _ := exec.Command(sbxBin, append(append([]string{"run", "--cwd", dir}, flags...), "--", "python3", "-c", connect, sock)...).CombinedOutput()
		if strings.Contains(string(out), "HTTP/") {
			t.Errorf("%v: a sandboxed call was answered by sbx mcp: %s", flags, out)
		}
	}
	if !strings.Contains(stderr.String(), "refused a connection") {
		t.Errorf("no refusal logged: %s", stderr.String())
	}
}

// A client that cannot elicit is not asked: the approval goes down the
// waterfall to --approver, which allows it; with --no-elicit an eliciting
// client is not asked either.
func TestMCPApproverWithoutElicitation(t *testing.T) {
	ws := t.TempDir()
	approver := filepath.Join(t.TempDir(), "approve")
	if err := os.WriteFile(approver, []byte("#!/bin/sh\ncat >/dev/null\necho '{\"outcome\":\"allowed-once\"}'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Dir(approver), 0o755)
	call := func(file string) mcpCall {
		return mcpCall{Name: "fs_write", Arguments: map[string]any{"path": filepath.Join(ws, file), "content": "x",
			"sandbox_permissions": "with_additional_permissions", "justification": "the approver allows it",
			"additional_permissions": map[string]any{"file_system": map[string]any{"write": []string{ws}}}}}
	}
	flags := []string{"--ephemeral", "--cwd", ws, "--mode", "read-only", "--approval-policy", "on-request", "--approver", approver}
	for _, tc := range []struct {
		name    string
		flags   []string
		answers []map[string]any
	}{
		{"no elicitation", flags, nil},
		{"--no-elicit", append(flags, "--no-elicit"), []map[string]any{{"action": "decline"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := strings.ReplaceAll(tc.name, " ", "-")
			r := runMCP(t, tc.flags, []mcpCall{call(file)}, tc.answers)
			if got := r.Results[0].Result; got == nil || got.IsError || got.StructuredContent["ok"] != true {
				t.Errorf("approved by --approver: %+v %s", got, r.Results[0].Error)
			}
			if len(r.Elicitations) != 0 {
				t.Errorf("the client was asked: %+v", r.Elicitations)
			}
			if _, err := os.Stat(filepath.Join(ws, file)); err != nil {
				t.Error(err)
			}
		})
	}
}
