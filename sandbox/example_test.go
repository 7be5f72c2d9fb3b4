package sandbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sbx-sandbox/sbx/sandbox"
)

// TestMain is where a test binary that runs sandboxed calls calls
// sandbox.Main: an unprivileged call re-executes the test binary as the
// sandbox's stage.
func TestMain(m *testing.M) {
	sandbox.Main()
	os.Exit(m.Run())
}

// A command runs in workspace-write: it writes its workspace, and a write
// outside it is denied, reported with a retry.
func ExampleRun() {
	ws, _ := os.MkdirTemp("", "sandbox-example-ws-")
	outside, _ := os.MkdirTemp("/var/tmp", "sandbox-example-out-")
	defer os.RemoveAll(ws)
	defer os.RemoveAll(outside)

	req, err := sandbox.Decode([]byte(fmt.Sprintf(`{
		"command": ["sh", "-c", "echo built > out.txt && cat out.txt && (echo leaked > %s/f) 2>/dev/null || exit 3"],
		"cwd": %q,
		"sandbox_mode": "workspace-write"
	}`, outside, ws)))
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	res, err := sandbox.Run(context.Background(), req, sandbox.Options{})
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	r := res.Result
	fmt.Println("exit:", r.ExitCode)
	fmt.Print("stdout: ", r.Stdout)
	for _, d := range r.Report.Denials {
		fmt.Println("denied:", d.Operation, strings.TrimPrefix(d.Path, outside+"/"))
	}
	fmt.Println("retry offered:", r.Retry != nil)
	_, err = os.Stat(filepath.Join(outside, "f"))
	fmt.Println("outside file exists:", err == nil)
	// Output:
	// exit: 3
	// stdout: built
	// denied: create f
	// retry offered: true
	// outside file exists: false
}

// A command that exits 0 though a write was refused (a tool's optional
// cache or lock) carries no retry: its denials are listed, tolerated.
// RetryOnSuccess asks for the retry all the same.
func ExampleRun_quietOnSuccess() {
	ws, _ := os.MkdirTemp("", "sandbox-example-ws-")
	outside, _ := os.MkdirTemp("/var/tmp", "sandbox-example-out-")
	defer os.RemoveAll(ws)
	defer os.RemoveAll(outside)

	for _, ask := range []bool{false, true} {
		req, err := sandbox.Decode([]byte(fmt.Sprintf(`{"command": ["sh", "-c", "(echo x > %s/cache) 2>/dev/null; echo done"],
			"cwd": %q, "sandbox_mode": "workspace-write"}`, outside, ws)))
		if err != nil {
			fmt.Println("refused:", err)
			return
		}
		req.RetryOnSuccess = ask
		res, err := sandbox.Run(context.Background(), req, sandbox.Options{})
		if err != nil {
			fmt.Println("refused:", err)
			return
		}
		r := res.Result
		for _, d := range r.Report.Denials {
			fmt.Println("exit:", r.ExitCode, "denied:", d.Operation, strings.TrimPrefix(d.Path, outside+"/"), "tolerated:", d.Tolerated, "retry offered:", r.Retry != nil)
		}
	}
	// Output:
	// exit: 0 denied: create cache tolerated: true retry offered: false
	// exit: 0 denied: create cache tolerated: true retry offered: true
}

// A request built in Go: its fields are the contract's keys with Go types
// (a duration, a typed mode), and a bad one is refused with a *Refusal
// that carries what the JSON refusal says.
func ExampleRequest() {
	ws, _ := os.MkdirTemp("", "sandbox-example-ws-")
	defer os.RemoveAll(ws)
	req := &sandbox.Request{
		Command:     []string{"sh", "-c", "read line; echo \"$line\" > got.txt"},
		Cwd:         ws,
		SandboxMode: new(sandbox.WorkspaceWrite),
		Stdin:       new("hello"),
		Timeout:     time.Minute,
	}
	res, err := sandbox.Run(context.Background(), req, sandbox.Options{})
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	b, _ := os.ReadFile(filepath.Join(ws, "got.txt"))
	fmt.Printf("exit: %d, mode: %s, wrote %q\n", res.ExitCode(), res.Result.Permissions.Mode, b)

	req.Cwd, req.Timeout = "", -time.Second
	_, err = sandbox.Run(context.Background(), req, sandbox.Options{})
	var ref *sandbox.Refusal
	if errors.As(err, &ref) {
		fmt.Println("refused:", ref.Kind, ref.Field, ref.Message)
		out, _ := json.Marshal(ref)
		fmt.Println(string(out))
	}
	// Output:
	// exit: 0, mode: workspace-write, wrote "hello\n"
	// refused: invalid_request timeout_ms timeout_ms: must not be negative
	// {"schema_version":"1","error":"timeout_ms: must not be negative","error_detail":{"kind":"invalid_request","message":"timeout_ms: must not be negative","field":"timeout_ms"}}
}

// A bad request is refused before anything runs, naming the field.
func ExampleDecode() {
	_, err := sandbox.Decode([]byte(`{"command": ["true"], "cwd": "/", "SANDBOX_MODE": "danger-full-access"}`))
	fmt.Println(err)
	// Output:
	// SANDBOX_MODE: unknown field (did you mean sandbox_mode?)
}

// Explain shows what a call would be held to, without running it.
func ExampleExplain() {
	req, _ := sandbox.Decode([]byte(`{"command": ["true"], "cwd": "/", "sandbox_mode": "read-only"}`))
	plan, err := sandbox.Explain(context.Background(), req)
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	fmt.Println(strings.Contains(plan.Text, "seccomp:"))
	out, err := json.Marshal(plan)
	fmt.Println(err == nil && strings.HasPrefix(string(out), "{"))
	// Output:
	// true
	// true
}

// A file-system change runs under the same sandbox as a command: inside
// the workspace it is made, outside it is denied and nothing changes.
func ExampleFS() {
	ws, _ := os.MkdirTemp("", "sandbox-example-ws-")
	outside, _ := os.MkdirTemp("/var/tmp", "sandbox-example-out-")
	defer os.RemoveAll(ws)
	defer os.RemoveAll(outside)
	for _, path := range []string{"notes.txt", filepath.Join(outside, "notes.txt")} {
		req, err := sandbox.Decode([]byte(fmt.Sprintf(`{"fs": {"op": "write", "path": %q, "content": "hi\n"}, "cwd": %q, "sandbox_mode": "workspace-write"}`, path, ws)))
		if err != nil {
			fmt.Println("refused:", err)
			return
		}
		res, err := sandbox.FS(context.Background(), req, sandbox.Options{})
		if err != nil {
			fmt.Println("refused:", err)
			return
		}
		kind := ""
		if res.Error != nil {
			kind = res.Error.Kind
		}
		fmt.Println(filepath.Base(filepath.Dir(path)) == ".", res.OK, kind, res.ExitCode)
	}
	b, _ := os.ReadFile(filepath.Join(ws, "notes.txt"))
	_, err := os.Stat(filepath.Join(outside, "notes.txt"))
	fmt.Printf("%q %v\n", b, err == nil)
	// Output:
	// true true  0
	// false false denied 3
	// "hi\n" false
}

// An in-process approver answers a call that asks for more: it is shown
// the one question every answerer gets (what is new, the command, the
// reason), and only allowed-once lets the call run.
func ExampleOptions_approver() {
	ws, _ := os.MkdirTemp("", "sandbox-example-ws-")
	outside, _ := os.MkdirTemp("/var/tmp", "sandbox-example-out-")
	defer os.RemoveAll(ws)
	defer os.RemoveAll(outside)
	for _, answer := range []sandbox.Outcome{sandbox.AllowedOnce, sandbox.Rejected} {
		req, err := sandbox.Decode([]byte(fmt.Sprintf(`{
			"command": ["touch", %q],
			"cwd": %q,
			"sandbox_mode": "workspace-write",
			"approval_policy": "on-request",
			"sandbox_permissions": "with_additional_permissions",
			"additional_permissions": {"file_system": {"write": [%q]}},
			"justification": "write the build output"
		}`, filepath.Join(outside, string(answer)), ws, outside)))
		if err != nil {
			fmt.Println("refused:", err)
			return
		}
		approver := sandbox.ApproverFunc(func(_ context.Context, q sandbox.Question) (sandbox.Outcome, error) {
			fmt.Println("asked:", q.Justification, q.NewPermissions.WritePaths()[0] == outside, q.Command[0])
			return answer, nil
		})
		res, err := sandbox.Run(context.Background(), req, sandbox.Options{Approver: approver})
		if err != nil {
			fmt.Println("refused:", err)
			continue
		}
		_, err = os.Stat(filepath.Join(outside, string(answer)))
		fmt.Println("exit:", res.Result.ExitCode, "created:", err == nil)
	}
	// Output:
	// asked: write the build output true touch
	// exit: 0 created: true
	// asked: write the build output true touch
	// refused: approval denied: the approver rejected the call
}

// A streamed call's output goes to Options.Events as it comes, each chunk
// an OutputEvent that marshals to the line `sbx exec` prints.
func ExampleOptions_events() {
	ws, _ := os.MkdirTemp("", "sandbox-example-ws-")
	defer os.RemoveAll(ws)
	req := &sandbox.Request{Command: []string{"echo", "hi"}, Cwd: ws, Stream: true, CallID: "c1"}
	var got []string
	res, err := sandbox.Run(context.Background(), req, sandbox.Options{Events: func(ev sandbox.OutputEvent) error {
		b, err := json.Marshal(ev)
		got = append(got, string(b))
		return err
	}})
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	fmt.Println(strings.Join(got, "\n"))
	fmt.Printf("exit: %d, captured: %q\n", res.ExitCode(), res.Result.Stdout)
	// Output:
	// {"event":"output","stream":"stdout","data":"hi\n","call_id":"c1"}
	// exit: 0, captured: ""
}
