package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	text, _, err := sandbox.Explain(context.Background(), req)
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	fmt.Println(strings.Contains(text, "seccomp:"))
	// Output:
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
