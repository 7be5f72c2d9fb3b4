//go:build linux

package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sbx-sandbox/sbx/internal/call"
	sbxreport "github.com/sbx-sandbox/sbx/internal/report"
)

// setDotted sets m's value at the dotted key ("file_system.write"),
// making the objects on the way.
func setDotted(m map[string]any, key string, v any) {
	for {
		head, rest, nested := strings.Cut(key, ".")
		if !nested {
			m[head] = v
			return
		}
		next, ok := m[head].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[head] = next
		}
		m, key = next, rest
	}
}

// The integration suite runs its sandbox cases one of two ways, chosen by
// SBX_IT_VIA: "run" (the default) starts `sbx run` per call; "serve" sends
// each call of run() (and so probe()) to one `sbx serve --listen SOCKET
// --ephemeral` that TestMain starts for the whole test binary, as an exec
// request in a session of its own. The flags of run() are translated into
// the request (serveRequest); a flag with no exec field, or a test of
// something only the CLI has, skips with "SKIP: via serve: REASON".
var (
	viaServe    bool
	serveSocket string
	serveCalls  atomic.Int64
	// serveUserNS: the suite's server serves from a user namespace of its
	// own (an unprivileged server's fast path): its sandboxed calls are
	// thread launches, and it is the parent of danger-full-access ones.
	serveUserNS bool
	// serveTests are the tests (top-level names) that made a call
	// through the server, for the count TestMain prints.
	serveTests sync.Map
)

// serveSummary is the line TestMain prints at the end of a serve pass.
func serveSummary() string {
	n := 0
	serveTests.Range(func(any, any) bool { n++; return true })
	return fmt.Sprintf("integration: via serve: %d calls from %d top-level tests went through sbx serve", serveCalls.Load(), n)
}

// startServe starts the suite's server, as the user running the tests;
// stop kills it and prints its stderr when the suite failed.
func startServe() (stop func(failed bool), err error) {
	dir, err := os.MkdirTemp("", "sbx-it-serve-")
	if err != nil {
		return nil, err
	}
	serveSocket = filepath.Join(dir, "sbx.sock")
	logPath := filepath.Join(dir, "serve.log")
	logf, err := os.Create(logPath)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cmd := exec.Command(sbxBin, "serve", "--listen", serveSocket, "--ephemeral")
	cmd.Dir = dir
	cmd.Env = baseEnv()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	stop = func(failed bool) {
		cmd.Process.Kill()
		cmd.Wait()
		logf.Close()
		if failed {
			if b, err := os.ReadFile(logPath); err == nil && len(b) > 0 {
				fmt.Fprintf(os.Stderr, "integration: sbx serve's stderr:\n%s\n", b)
			}
		}
		os.RemoveAll(dir)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		if c, err := net.Dial("unix", serveSocket); err == nil {
			serveUserNS, err = serverUserNS(c)
			c.Close()
			if err != nil {
				stop(true)
				return nil, fmt.Errorf("sbx serve --listen %s: initialize: %w", serveSocket, err)
			}
			return stop, nil
		}
		if cmd.ProcessState != nil || time.Now().After(deadline) {
			stop(true)
			return nil, fmt.Errorf("sbx serve --listen %s did not come up", serveSocket)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// serverUserNS asks the server on c whether it serves from a user
// namespace of its own (initialize's capabilities.server_user_namespace).
func serverUserNS(c net.Conn) (bool, error) {
	if _, err := io.WriteString(c, `{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}`+"\n"); err != nil {
		return false, err
	}
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		return false, err
	}
	var m struct {
		Result struct {
			Capabilities struct {
				ServerUserNamespace struct {
					Available bool `json:"available"`
				} `json:"server_user_namespace"`
			} `json:"capabilities"`
		} `json:"result"`
	}
	if err := json.Unmarshal(line, &m); err != nil {
		return false, fmt.Errorf("%w: %s", err, line)
	}
	return m.Result.Capabilities.ServerUserNamespace.Available, nil
}

// serveCall is what run()'s flags come to: the session's knobs and the
// exec request.
type serveCall struct {
	session map[string]any
	req     map[string]any
}

// skipVia skips the test: what it checks exists only on the CLI path.
func skipVia(t *testing.T, format string, a ...any) {
	t.Helper()
	t.Skipf("SKIP: via serve: "+format, a...)
}

// serveFlags are the sbx run flags with an exec field, by kind: the
// request table's (call.Fields: a switch, a list, or a value), and the
// terminal and stdin flags, which are the run stage's rather than rows of
// the request.
var (
	serveBoolFlags  = tableFlags(func(f call.Field) bool { return f.Switch }, "pty")
	serveValueFlags = tableFlags(func(f call.Field) bool { return !f.Switch && !f.List }, "pty-size", "stdin")
	serveListFlags  = tableFlags(func(f call.Field) bool { return f.List })
	// serveCLIOnly are run flags whose effect the exec request has no
	// field for, each with why.
	serveCLIOnly = map[string]string{
		"approver":          "--approver: the server's approver is server-wide (sbx serve --approver), a session's policy here is never",
		"grants":            "--grants: stored grants are grants/apply of a session, not a flag of a call",
		"strict-review":     "--strict-review: a turn grant's strict_auto_review comes through grants/apply",
		"preset":            "--preset: the CLI's preset sets its own approval policy (on-request)",
		"no-denial-reports": "--no-denial-reports has no exec field",
		"explain-denials":   "--explain-denials prints on the CLI's stderr",
		"report":            "--report is the CLI's file",
		"cwd":               "a second --cwd is a CLI flag error",
	}
)

// tableFlags are the flags of the rows of call.Fields that kind picks, and
// extra.
func tableFlags(kind func(call.Field) bool, extra ...string) map[string]bool {
	out := map[string]bool{}
	for _, f := range call.Fields {
		if f.Flag != "" && kind(f) {
			out[f.Flag] = true
		}
	}
	for _, name := range extra {
		out[name] = true
	}
	return out
}

// serveRequest translates run()'s flags and command into the session and
// the exec request, or skips the test for a flag with no exec field.
func serveRequest(t *testing.T, dir string, args, command []string) serveCall {
	t.Helper()
	bools := map[string]bool{}
	values := map[string]string{}
	lists := map[string][]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			skipVia(t, "argument %q is not a flag (a CLI usage error)", a)
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case serveCLIOnly[name] != "":
			skipVia(t, "%s", serveCLIOnly[name])
		case serveBoolFlags[name]:
			if hasVal || bools[name] {
				skipVia(t, "--%s given twice or with a value (a CLI flag error)", name)
			}
			bools[name] = true
		case serveValueFlags[name] || serveListFlags[name]:
			if !hasVal {
				if i+1 >= len(args) {
					skipVia(t, "--%s without its value (a CLI flag error)", name)
				}
				i++
				val = args[i]
			}
			if serveListFlags[name] {
				lists[name] = append(lists[name], val)
			} else if _, dup := values[name]; dup {
				skipVia(t, "--%s given twice (a CLI flag error)", name)
			} else {
				values[name] = val
			}
		default:
			skipVia(t, "flag %q has no exec field", a)
		}
	}
	mode := "read-only"
	if m, ok := values["mode"]; ok {
		mode = m
	}
	session := map[string]any{"cwd": dir, "sandbox_mode": mode, "approval_policy": "never"}
	if g, ok := values["guard"]; ok {
		session["guard"] = g
	}
	req := map[string]any{"cwd": dir, "stream": true}
	if len(command) > 0 {
		req["command"] = command
	}
	// Escalation: the CLI asks on the terminal by default (on-request);
	// a session here never asks, so only the never policy translates.
	sp := values["sandbox-permissions"]
	if _, ok := values["approval-policy"]; ok && values["approval-policy"] != "never" {
		skipVia(t, "--approval-policy %s: the suite's sessions are never (no one to ask)", values["approval-policy"])
	}
	if _, ok := values["approval-policy"]; !ok && (sp != "" || values["escalate"] != "") {
		skipVia(t, "an escalation under the CLI's default policy on-request (asked on the terminal)")
	}
	if sp != "" {
		req["sandbox_permissions"] = sp
	}
	if e, ok := values["escalate"]; ok {
		req["sandbox_permissions"], req["escalate_to"] = "require_escalated", e
	}
	if j, ok := values["justification"]; ok {
		req["justification"] = j
	}
	// The request table (call.Fields) names each row's flag and key: a
	// list or a switch given as a flag is its key's value in the request.
	add := map[string]any{}
	for _, f := range call.Fields {
		var v any
		switch {
		case f.Flag == "":
			continue
		case len(lists[f.Flag]) > 0:
			v = lists[f.Flag]
		case bools[f.Flag]:
			v = true
		default:
			continue
		}
		if rest, ok := strings.CutPrefix(f.Key, "additional_permissions."); ok {
			setDotted(add, rest, v)
		} else {
			req[f.Key] = v
		}
	}
	if n, ok := add["network"].(map[string]any); ok {
		// A profile's network says whether it is enabled (the CLI: with
		// --allow-domain); a deny list alone narrows --network.
		_, hosts := n["allowed_domains"]
		if !hosts && n["allow_private_addresses"] == true {
			skipVia(t, "--allow-private-addresses without --allow-domain (a CLI flag error)")
		}
		n["enabled"] = hosts
	}
	// Under with_additional_permissions --network and network_access are
	// both part of the request: call.Prepare decides it for both, so
	// nothing is translated here.
	if len(add) > 0 {
		req["additional_permissions"] = add
	}
	if (len(add) > 0 || len(lists["cap-add"]) > 0) && (sp == "" || sp == "use_default") {
		// As the CLI: under use_default its --allow-* and --cap-add are
		// the caller's own.
		req["preauthorized"] = true
	}
	limits := map[string]any{}
	if v, ok := values["memory"]; ok {
		n, err := sbxreport.ParseSize(v)
		if err != nil {
			skipVia(t, "--memory %q: a CLI flag error", v)
		}
		limits["memory_bytes"] = n
	}
	if v, ok := values["pids"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			skipVia(t, "--pids %q: a CLI flag error", v)
		}
		limits["pids"] = n
	}
	if v, ok := values["cpus"]; ok {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			skipVia(t, "--cpus %q: a CLI flag error", v)
		}
		limits["cpus"] = n
	}
	if len(limits) > 0 {
		req["limits"] = limits
	}
	for flag, field := range map[string]string{"timeout": "timeout_ms", "kill-grace": "kill_grace_ms"} {
		v, ok := values[flag]
		if !ok {
			continue
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d%time.Millisecond != 0 {
			skipVia(t, "--%s %q is not a whole number of milliseconds above 0 (timeout_ms)", flag, v)
		}
		req[field] = d.Milliseconds()
	}
	env := map[string]any{}
	if m, ok := values["env-mode"]; ok {
		env["mode"] = m
	}
	if a := lists["env-allow"]; len(a) > 0 {
		env["allow"] = a
	}
	if len(env) > 0 {
		req["env_policy"] = env
	}
	if kvs := lists["setenv"]; len(kvs) > 0 {
		set := map[string]string{}
		for _, kv := range kvs {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				skipVia(t, "--setenv %q: a CLI flag error", kv)
			}
			set[k] = v
		}
		req["env"] = set
	}
	if sh, ok := values["shell"]; ok {
		req["shell"] = map[string]any{"kind": sh, "script": values["c"], "login": bools["login"]}
	} else if _, ok := values["c"]; ok || bools["login"] {
		skipVia(t, "-c or --login without --shell (a CLI flag error)")
	}
	if s := values["stdin"]; s != "" && s != "pass" && s != "close" {
		skipVia(t, "--stdin %q: a CLI flag error", s)
	}
	if bools["pty"] {
		pty := map[string]any{}
		if s, ok := values["pty-size"]; ok {
			r, c, _ := strings.Cut(s, "x")
			rows, err1 := strconv.Atoi(r)
			cols, err2 := strconv.Atoi(c)
			if err1 != nil || err2 != nil {
				skipVia(t, "--pty-size %q: a CLI flag error", s)
			}
			pty["rows"], pty["cols"] = rows, cols
		}
		req["pty"] = pty
	} else if _, ok := values["pty-size"]; ok {
		skipVia(t, "--pty-size without --pty (a CLI flag error)")
	}
	return serveCall{session: session, req: req}
}

// runViaServe is run() through the suite's server: a connection, a
// session and a turn of its own, one streamed exec. The result, less the
// output and the exec-only fields, is written where `sbx run --report`
// writes its report; a refusal is exit 125 with the error on stderr and no
// report, as the CLI's.
func runViaServe(t *testing.T, dir string, args, command []string) (outcome, *report) {
	t.Helper()
	return serveExec(t, serveRequest(t, dir, args, command))
}

// serveExec runs one call on a connection of its own.
func serveExec(t *testing.T, sc serveCall) (outcome, *report) {
	t.Helper()
	return serveExecAt(t, serveSocket, sc)
}

// serveExecAt is serveExec on the server listening at sock.
func serveExecAt(t *testing.T, sock string, sc serveCall) (outcome, *report) {
	t.Helper()
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatalf("via serve: dial %s: %v", sock, err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(60 * time.Second))
	rc := &rpcConn{t: t, c: conn, r: bufio.NewReaderSize(conn, 1<<16)}
	if _, e := rc.call("initialize", map[string]any{}); e != nil {
		t.Fatalf("via serve: initialize: %s", e)
	}
	var open struct {
		SessionID string `json:"session_id"`
	}
	if e := rc.into("session/open", sc.session, &open); e != nil {
		return refused(e), nil
	}
	var turn struct {
		TurnID string `json:"turn_id"`
	}
	if e := rc.into("turn/begin", map[string]any{"session_id": open.SessionID}, &turn); e != nil {
		t.Fatalf("via serve: turn/begin: %s", e)
	}
	sc.req["session_id"], sc.req["turn_id"] = open.SessionID, turn.TurnID
	sc.req["call_id"] = fmt.Sprintf("it-%d", serveCalls.Add(1))
	top, _, _ := strings.Cut(t.Name(), "/")
	serveTests.Store(top, true)
	res, e := rc.call("exec", sc.req)
	if e != nil {
		return refused(e), nil
	}
	var r struct {
		ExitCode int    `json:"exit_code"`
		Error    string `json:"error"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		t.Fatalf("via serve: exec result: %v\n%s", err, res)
	}
	out := outcome{code: r.ExitCode, stdout: rc.stdout.String(), stderr: rc.stderr.String()}
	if r.Error != "" {
		// sbx run prints why the command did not start on its stderr.
		out.stderr += "sbx exec: " + r.Error + "\n"
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(res, &fields); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"call_id", "stdout", "stderr", "stdout_truncated", "stderr_truncated", "error", "error_detail", "aborted"} {
		delete(fields, k)
	}
	b, err := json.MarshalIndent(fields, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return out, decodeReport(t, b)
}

// serveRetry applies the retry hint of a call made through the server:
// its request (the call's exec params with the escalation added), run in
// a session of the same mode with the escalation as the caller's own, as
// the argv of sbx run's hint is (nothing asks for it to be approved).
// want checks the request's additional permissions first.
func serveRetry(t *testing.T, dir string, rep *report, want func(add map[string]any) bool) outcome {
	t.Helper()
	var retry struct {
		Request map[string]any `json:"request"`
	}
	if err := json.Unmarshal(rep.raw["retry"], &retry); err != nil || retry.Request == nil {
		t.Fatalf("retry %s (%v), want an exec request", rep.raw["retry"], err)
	}
	add, _ := retry.Request["additional_permissions"].(map[string]any)
	if !want(add) {
		t.Fatalf("retry request %v: not the additional permissions wanted", retry.Request)
	}
	return serveRetryRequest(t, dir, rep.Mode, retry.Request)
}

// serveRetryRequest runs the request of a retry hint in a session of mode.
func serveRetryRequest(t *testing.T, dir, mode string, req map[string]any) outcome {
	t.Helper()
	for _, k := range []string{"session_id", "turn_id", "call_id", "sandbox_permissions", "justification"} {
		delete(req, k)
	}
	req["preauthorized"] = true
	t.Logf("retry via serve: %v", req)
	out, _ := serveExec(t, serveCall{session: map[string]any{"cwd": dir, "sandbox_mode": mode, "approval_policy": "never"}, req: req})
	return out
}

// refused is the outcome of a JSON-RPC error: what sbx run's exit 125 is.
func refused(e *serveRPCError) outcome {
	return outcome{code: 125, stderr: "sbx exec: " + e.String() + "\n"}
}

// rpcConn is one connection to the server, used by one call at a time.
type rpcConn struct {
	t              *testing.T
	c              net.Conn
	r              *bufio.Reader
	id             int
	stdout, stderr strings.Builder
}

type serveRPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

func (e *serveRPCError) String() string {
	return fmt.Sprintf("%s (code %d, data %s)", e.Message, e.Code, e.Data)
}

// call sends one request and reads up to its response, collecting the
// exec/output notifications on the way.
func (rc *rpcConn) call(method string, params any) (json.RawMessage, *serveRPCError) {
	rc.t.Helper()
	rc.id++
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": rc.id, "method": method, "params": params})
	if err != nil {
		rc.t.Fatal(err)
	}
	if _, err := rc.c.Write(append(b, '\n')); err != nil {
		rc.t.Fatalf("via serve: %s: %v", method, err)
	}
	for {
		line, err := rc.r.ReadBytes('\n')
		if err != nil {
			rc.t.Fatalf("via serve: %s: no response: %v", method, err)
		}
		var m struct {
			ID     *int            `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
			Error  *serveRPCError  `json:"error"`
		}
		if err := json.Unmarshal(line, &m); err != nil {
			rc.t.Fatalf("via serve: %s: bad line: %v\n%s", method, err, line)
		}
		if m.Method == "exec/output" {
			var ev struct {
				Stream     string `json:"stream"`
				Data       string `json:"data"`
				DataBase64 []byte `json:"data_base64"`
			}
			if err := json.Unmarshal(m.Params, &ev); err != nil {
				rc.t.Fatalf("via serve: exec/output: %v", err)
			}
			w := &rc.stdout
			if ev.Stream == "stderr" {
				w = &rc.stderr
			}
			w.WriteString(ev.Data)
			w.Write(ev.DataBase64)
			continue
		}
		if m.ID == nil || *m.ID != rc.id {
			continue // another notification
		}
		return m.Result, m.Error
	}
}

// into is call with the result decoded into v.
func (rc *rpcConn) into(method string, params, v any) *serveRPCError {
	rc.t.Helper()
	res, e := rc.call(method, params)
	if e != nil {
		return e
	}
	if err := json.Unmarshal(res, v); err != nil {
		rc.t.Fatalf("via serve: %s: %v\n%s", method, err, res)
	}
	return nil
}
