//go:build linux

package integration

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// sbx mcp's listeners (docs/mcp.md): the unix socket's directory is
// read-only in the sessions' calls, and on loopback TCP every request
// carries the token no call can read, with a loopback Origin if any.

// startMCPListen starts sbx mcp --listen at with flags and waits for its
// "streamable HTTP at" line on a TCP address (addr and the token file's
// path returned), or for the socket.
func startMCPListen(t *testing.T, at string, flags ...string) (addr, tokenFile string, stderr *lockedBuffer) {
	t.Helper()
	cmd := exec.Command(sbxBin, append([]string{"mcp", "--listen", at}, flags...)...)
	cmd.Env = append(baseEnv(), "PATH="+mcpPath(t))
	stderr = &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
	if strings.Contains(at, "/") {
		waitForPath(t, at)
		return "", "", stderr
	}
	for deadline := time.Now().Add(20 * time.Second); addr == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, line := range strings.Split(stderr.String(), "\n") {
			if _, rest, ok := strings.Cut(line, "streamable HTTP at http://"); ok {
				addr, rest, _ = strings.Cut(rest, "/")
				_, tokenFile, _ = strings.Cut(rest, "its bearer token is in ")
				tokenFile = strings.TrimSuffix(tokenFile, ")")
			}
		}
	}
	if addr == "" {
		t.Fatalf("no address on sbx mcp's stderr: %s", stderr.String())
	}
	return addr, tokenFile, stderr
}

// TestMCPListenDirReadOnly: a call of an MCP session served on a unix
// socket cannot remove the socket nor write in its directory, even where
// that directory lies inside the call's writable root; the call's other
// writes work and a later client still reaches the server. Fails on the
// code before the fix (the sbx serve children did not know the socket):
// the call removed the socket and planted a file beside it.
func TestMCPListenDirReadOnly(t *testing.T) {
	Require(t, "mountns")
	ws := shortWorkspace(t)
	run := filepath.Join(ws, "run")
	if err := os.Mkdir(run, 0o700); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(run, "m.sock")
	startMCPListen(t, sock, "--ephemeral", "--cwd", ws, "--mode", "workspace-write", "--approval-policy", "never")
	connect := func() *sdk.ClientSession {
		hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "sbx-it", Version: "1"}, nil).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: "http://localhost/", HTTPClient: hc}, nil)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		return cs
	}
	cs := connect()
	defer cs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	script := "rm -f run/m.sock; test -S run/m.sock || echo UNLINKED; (touch run/planted) 2>/dev/null && echo PLANTED; (chmod 0777 run) 2>/dev/null && echo CHMOD; echo ok > other.txt && echo WROTE-OTHER"
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "shell", Arguments: map[string]any{"command": []string{"sh", "-c", script}}})
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := res.StructuredContent.(map[string]any)
	if sc["stdout"] != "WROTE-OTHER\n" {
		t.Errorf("the call's stdout: %q; want only WROTE-OTHER (%+v)", sc["stdout"], sc)
	}
	if fi, err := os.Lstat(sock); err != nil || fi.Mode().Type() != os.ModeSocket {
		t.Fatalf("the call removed sbx mcp's socket: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(run, "planted")); err == nil {
		t.Error("the call wrote in the socket's directory")
	}
	if fi, err := os.Stat(run); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("run/: %v %v; want mode 0700 still", fi.Mode(), err)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "other.txt")); err != nil || string(b) != "ok\n" {
		t.Errorf("the allowed write: %q %v", b, err)
	}
	later := connect()
	later.Close()
}

// TestMCPHTTPTCP: sbx mcp --listen 127.0.0.1:0 answers 401 to a request
// without the token or with another, 403 to one with a foreign Origin
// (the token right), and serves the TypeScript SDK's client that carries
// the token; the token file is 0600 in the state directory, which the
// sessions' calls cannot read; and a call granted the host's network
// reaches the port but not the tools (401).
func TestMCPHTTPTCP(t *testing.T) {
	for _, durable := range []bool{true, false} {
		t.Run(fmt.Sprintf("durable=%v", durable), func(t *testing.T) { testMCPHTTPTCP(t, durable) })
	}
}

// testMCPHTTPTCP: with a state directory the token is its mcp-token; with
// --ephemeral, that of a directory of sbx mcp's own, which the sessions'
// calls have masked too (sbx serve --mcp-private).
func testMCPHTTPTCP(t *testing.T, durable bool) {
	ws := workspace(t)
	state := t.TempDir()
	keep := []string{"--state-dir", state}
	if !durable {
		keep = []string{"--ephemeral"}
	}
	addr, tokenFile, stderr := startMCPListen(t, "127.0.0.1:0", append(keep, "--cwd", ws, "--mode", "workspace-write", "--exclude-tmp", "--approval-policy", "never")...)
	outside := workspace(t)
	if durable && tokenFile != filepath.Join(state, "mcp-token") {
		t.Errorf("the token is in %q, want the state directory's mcp-token", tokenFile)
	}
	fi, err := os.Stat(tokenFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mcp-token: %v %v, want mode 0600", fi, err)
	}
	b, _ := os.ReadFile(tokenFile)
	token := strings.TrimSpace(string(b))
	if len(token) != 64 || strings.Contains(stderr.String(), token) {
		t.Fatalf("token %q (on stderr: %v)", token, strings.Contains(stderr.String(), token))
	}
	post := func(headers map[string]string) int {
		t.Helper()
		req, _ := http.NewRequest("POST", "http://"+addr+"/", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	bearer := "Bearer " + token
	for _, tc := range []struct {
		name    string
		headers map[string]string
		want    int
	}{
		{"no token", nil, 401},
		{"another token", map[string]string{"Authorization": "Bearer " + strings.Repeat("0", 64)}, 401},
		{"foreign Origin", map[string]string{"Authorization": bearer, "Origin": "http://evil.example"}, 403},
		{"foreign Origin, no token", map[string]string{"Origin": "https://127.0.0.1.evil.example:8080"}, 403},
	} {
		if got := post(tc.headers); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	if got := post(map[string]string{"Authorization": bearer, "Origin": "http://localhost:3000"}); got == 401 || got == 403 {
		t.Errorf("a loopback Origin with the token: %d", got)
	}
	// The TypeScript SDK's client with the token: an allowed call, a
	// denied one, and one that tries to read the token (the state
	// directory is masked in every call of the sessions).
	t.Setenv("MCP_TOKEN", token) // the client's environment is the test's
	r := runMCPClient(t, "MCP_URL=http://"+addr+"/", []mcpCall{
		shellCall("echo", "over tcp"), shellCall("touch", filepath.Join(outside, "denied")), shellCall("cat", tokenFile),
	}, nil)
	if got := r.Results[0].Result; got == nil || got.IsError || got.StructuredContent["stdout"] != "over tcp\n" {
		t.Errorf("allowed call over TCP: %+v %s", got, r.Results[0].Error)
	}
	if got := r.Results[1].Result; got == nil || !got.IsError || got.StructuredContent["denied"] != true {
		t.Errorf("denied call over TCP: %+v %s", got, r.Results[1].Error)
	}
	if got := r.Results[2].Result; got == nil || got.StructuredContent["exit_code"] == 0.0 || strings.Contains(got.StructuredContent["stdout"].(string), token) {
		t.Errorf("a call of the session read the token: %+v %s", got, r.Results[2].Error)
	}
	// A call with the host's network reaches the port, not the tools.
	needTool(t, "python3")
	probe := `import sys,urllib.request,urllib.error
req=urllib.request.Request("http://"+sys.argv[1]+"/",data=b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}',headers={"Content-Type":"application/json","Accept":"application/json, text/event-stream"})
try:
    print("status", urllib.request.urlopen(req,timeout=10).status)
except urllib.error.HTTPError as e:
    print("status", e.code)
except OSError as e:
    print("error", e)`
	out, _ := exec.Command(sbxBin, "run", "--cwd", ws, "--mode", "workspace-write", "--network", "--", "python3", "-c", probe, addr).CombinedOutput()
	if !strings.Contains(string(out), "status 401") {
		t.Errorf("a call with the host's network: %s; want status 401", out)
	}
}

// TestMCPRootsChanged: a client that changes its MCP roots mid-session
// (notifications/roots/list_changed) narrows the session to the new ones
// from its next call on, and never widens it past the server's --root:
// a root outside the server's leaves none, and the call is refused. Fails
// on the code before (roots read once): the write in b after the change
// was denied, and the one in a allowed.
func TestMCPRootsChanged(t *testing.T) {
	ws := workspace(t)
	a, b, outside := filepath.Join(ws, "srv", "a"), filepath.Join(ws, "srv", "b"), filepath.Join(ws, "outside")
	for _, d := range []string{a, b, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	server := filepath.Join(ws, "srv")
	touch := func(dir, file string, roots ...string) mcpCall {
		c := mcpCall{Name: "shell", Arguments: map[string]any{"command": []string{"touch", filepath.Join(dir, file)}, "cwd": dir}}
		for _, r := range roots {
			c.Roots = append(c.Roots, "file://"+r)
		}
		return c
	}
	calls := []mcpCall{
		touch(a, "1"),                // a is the root: allowed
		touch(b, "2"),                // b is not: refused (cwd)
		touch(b, "3", b),             // the roots are now b: allowed
		touch(a, "4"),                // a is no longer a root: refused
		touch(outside, "5", ws),      // ws (wider than srv) narrows to srv: outside refused
		touch(a, "6"),                // srv covers a: allowed
		touch(outside, "7", outside), // no root left: refused
	}
	r := runMCP(t, []string{"--ephemeral", "--root", server, "--cwd", server, "--mode", "workspace-write", "--exclude-tmp", "--approval-policy", "never"}, calls, nil, "file://"+a)
	for i, want := range []bool{true, false, true, false, false, true, false} {
		got := r.Results[i].Result
		if got == nil {
			t.Fatalf("call %d: no result: %s", i, r.Results[i].Error)
		}
		dir, _ := calls[i].Arguments["cwd"].(string)
		file := filepath.Join(dir, fmt.Sprint(i+1))
		_, err := os.Stat(file)
		if (err == nil) != want || got.IsError == want {
			t.Errorf("call %d (%s): made %v, result %+v; want allowed %v", i, file, err == nil, got, want)
		}
	}
}
