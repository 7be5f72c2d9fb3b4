package run

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/call"
	"github.com/sbx-sandbox/sbx/internal/enforce/host"
	"github.com/sbx-sandbox/sbx/internal/fsop"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/wire"
)

func init() { runtime.LockOSThread() }

// TestMain: an unprivileged launch re-executes this binary as its stage,
// and RunFS as its fs helper.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case host.StageCommand:
			os.Exit(host.StageMain())
		case FSStageCommand:
			os.Exit(FSStageMain(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
		}
	}
	os.Exit(m.Run())
}

func decode(t *testing.T, s string) *wire.Request {
	t.Helper()
	req, err := wire.Decode([]byte(s))
	if err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return req
}

// callOf is the call a request describes, as a front-end makes it.
func callOf(t *testing.T, req *wire.Request) (call.Request, wire.Input) {
	t.Helper()
	r, in, err := req.Call(os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	return r, in
}

// prepare is the prepared call of the request s.
func prepare(t *testing.T, s string) *call.Prepared {
	t.Helper()
	r, _ := callOf(t, decode(t, s))
	p, err := call.Prepare(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestExecSteps: the call the caller hands Exec is the one that runs (a
// server's explicit step, where an Adjust hook was), and a Dispatch error
// stops it before its command starts.
func TestExecSteps(t *testing.T) {
	ws := t.TempDir()
	marker := filepath.Join(ws, "ran")
	req := decode(t, `{"cwd": "`+ws+`", "sandbox_mode": "workspace-write", "command": ["sh", "-c", "echo x > ran; echo out"]}`)
	r, in := callOf(t, req)
	stop := errors.New("stopped")
	_, err := Exec(context.Background(), req, r, in, Options{Dispatch: func() error { return stop }})
	if !errors.Is(err, stop) {
		t.Fatalf("Dispatch error: got %v", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran after Dispatch refused")
	}
	ro := r
	ro.Mode = profiles.ReadOnly
	if _, err = Exec(context.Background(), req, ro, in, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the caller's read-only mode did not apply: the workspace was written")
	}
	var events []wire.OutputEvent
	req.Stream, req.CallID = true, "c1"
	resp, err := Exec(context.Background(), req, r, in, Options{Events: func(ev wire.OutputEvent) error { events = append(events, ev); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Result == nil || resp.CallID() != "c1" || resp.ExitCode() != 0 || resp.Result.Stdout != "" {
		t.Errorf("streamed result %+v", resp.Result)
	}
	if len(events) != 1 || events[0].Data != "out\n" || events[0].CallID != "c1" || events[0].Stream != "stdout" {
		t.Errorf("events %+v", events)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the workspace-write call did not write: %v", err)
	}
	noSink := &wire.Request{Cwd: ws, Command: []string{"true"}, Stream: true}
	r, in = callOf(t, noSink)
	if _, err := Exec(context.Background(), noSink, r, in, Options{}); err == nil {
		t.Error("a stream without an event sink ran")
	}
}

// TestExecCancel: a cancelled context kills the command's tree.
func TestExecCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	req := decode(t, `{"cwd": "`+t.TempDir()+`", "command": ["sh", "-c", "echo up; sleep 30"], "stream": true}`)
	r, in := callOf(t, req)
	resp, err := Exec(ctx, req, r, in, Options{Events: func(wire.OutputEvent) error { cancel(); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Result.KilledBy != "signal" || resp.Result.DurationMS > 10000 {
		t.Errorf("cancelled call: killed_by %q after %d ms", resp.Result.KilledBy, resp.Result.DurationMS)
	}
}

// TestRunPipes: stdin is the text then end-of-file, stdout and stderr go
// to their own writers, and the exit status is the command's.
func TestRunPipes(t *testing.T) {
	p := prepare(t, `{"cwd": "`+t.TempDir()+`", "command": ["sh", "-c", "read a; read b || echo eof >&2; echo got $a; test -t 0 || echo notty; exit 3"]}`)
	var out, errOut bytes.Buffer
	rep, err := Run(context.Background(), p, IO{Stdin: "one\n", Stdout: &out, Stderr: &errOut})
	if err != nil {
		t.Fatal(err)
	}
	if rep.ExitCode != 3 || rep.Enforcement.PTY {
		t.Errorf("exit %d pty %v", rep.ExitCode, rep.Enforcement.PTY)
	}
	if out.String() != "got one\nnotty\n" || errOut.String() != "eof\n" {
		t.Errorf("stdout %q stderr %q", out.String(), errOut.String())
	}
	// Nil writers discard.
	if rep, err := Run(context.Background(), prepare(t, `{"cwd": "/", "command": ["sh", "-c", "echo x; echo y >&2"]}`), IO{}); err != nil || rep.ExitCode != 0 {
		t.Errorf("discarded output: exit %d, %v", rep.ExitCode, err)
	}
}

// TestCaptureCap: captured output keeps head and tail within the cap and
// says truncated; a stream under its cap is whole.
func TestCaptureCap(t *testing.T) {
	p := prepare(t, `{"cwd": "/", "command": ["sh", "-c", "head -c 100000 /dev/zero | tr '\\0' a; echo small >&2"]}`)
	out, err := Capture(context.Background(), p, 1000, IO{})
	if err != nil {
		t.Fatal(err)
	}
	if !out.StdoutTruncated || len(out.Stdout) > 1200 || !strings.HasPrefix(out.Stdout, "aaa") {
		t.Errorf("stdout: truncated %v, %d bytes", out.StdoutTruncated, len(out.Stdout))
	}
	if out.StderrTruncated || out.Stderr != "small\n" {
		t.Errorf("stderr: truncated %v, %q", out.StderrTruncated, out.Stderr)
	}
}

// TestStreamEvents: each write is one event, invalid UTF-8 goes as
// base64, and past the cap output is dropped and said truncated.
func TestStreamEvents(t *testing.T) {
	p := prepare(t, `{"cwd": "/", "command": ["sh", "-c", "printf '\\377\\376'; sleep 0.1; echo 0123456789abcdef >&2"]}`)
	var events []wire.OutputEvent
	out, err := Stream(context.Background(), p, 10, IO{}, func(ev wire.OutputEvent) error { events = append(events, ev); return nil }, "c2")
	if err != nil {
		t.Fatal(err)
	}
	var stderr string
	for _, ev := range events {
		if ev.Event != "output" || ev.CallID != "c2" {
			t.Errorf("event %+v", ev)
		}
		switch ev.Stream {
		case "stdout":
			if ev.Data != "" || string(ev.DataBase64) != "\xff\xfe" {
				t.Errorf("invalid UTF-8 event %+v", ev)
			}
		case "stderr":
			stderr += ev.Data
		}
	}
	if stderr != "0123456789" || !out.StderrTruncated || out.StdoutTruncated {
		t.Errorf("stderr %q truncated %v, stdout truncated %v", stderr, out.StderrTruncated, out.StdoutTruncated)
	}
	// A sink that fails stops the copy, not the call.
	p = prepare(t, `{"cwd": "/", "command": ["sh", "-c", "echo a; echo b"]}`)
	if _, err := Stream(context.Background(), p, 0, IO{}, func(wire.OutputEvent) error { return errors.New("gone") }, ""); err != nil {
		t.Errorf("failing sink: %v", err)
	}
}

// TestRunPTY: on a pty the command's stdin, stdout and stderr are one
// terminal of the given size, the text is typed then end-of-file, and the
// report says so.
func TestRunPTY(t *testing.T) {
	p := prepare(t, `{"cwd": "/", "command": ["sh", "-c", "test -t 0 && test -t 1 && test -t 2 && echo tty; stty size; cat; echo err >&2"]}`)
	var out bytes.Buffer
	rep, err := Run(context.Background(), p, IO{Stdin: "typed", PTY: &wire.PTYSize{Rows: 30, Cols: 100}, Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if rep.ExitCode != 0 || !rep.Enforcement.PTY {
		t.Errorf("exit %d pty %v", rep.ExitCode, rep.Enforcement.PTY)
	}
	for _, want := range []string{"tty\r\n", "30 100\r\n", "typed", "err\r\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("pty output %q lacks %q", got, want)
		}
	}
}

// TestRunCancel: a cancelled context kills a command that ignores its
// input, and Run returns promptly.
func TestRunCancel(t *testing.T) {
	p := prepare(t, `{"cwd": "/", "command": ["sh", "-c", "sleep 30 & wait"]}`)
	ctx, cancel := context.WithCancel(context.Background())
	var out bytes.Buffer
	go func() { cancel() }()
	rep, err := Run(ctx, p, IO{Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	if rep.KilledBy != "signal" || rep.DurationMS > 10000 {
		t.Errorf("cancelled call: killed_by %q after %d ms", rep.KilledBy, rep.DurationMS)
	}
}

// TestPrestart: a call prepared while its namespaces were made on the
// prestart pipes runs on them, its input and output intact, and the slot
// is free again for the next call; a call on a pty, or one with no
// sandbox, makes nothing ahead and runs as without.
func TestPrestart(t *testing.T) {
	ws := t.TempDir()
	for _, tt := range []struct{ name, req, want string }{
		{"pipes", `"command": ["sh", "-c", "cat; echo err >&2"], "stdin": "in\n"`, "in\n"},
		{"again", `"command": ["sh", "-c", "cat; echo err >&2"], "stdin": "in\n"`, "in\n"},
		{"pty", `"command": ["sh", "-c", "test -t 0 && echo tty"], "pty": {"rows": 10, "cols": 40}`, "tty\r\n"},
		{"full access", `"sandbox_mode": "danger-full-access", "command": ["sh", "-c", "cat; echo err >&2"], "stdin": "in\n"`, "in\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := decode(t, `{"cwd": "`+ws+`", `+tt.req+`}`)
			r, in := callOf(t, req)
			resp, err := Exec(context.Background(), req, r, in, Options{Prestart: true})
			if err != nil {
				t.Fatal(err)
			}
			wantErr := "err\n"
			if in.PTY != nil {
				wantErr = ""
			}
			if resp.Result.ExitCode != 0 || !strings.Contains(resp.Result.Stdout, tt.want) || resp.Result.Stderr != wantErr {
				t.Errorf("prestarted call: %d %q %q", resp.Result.ExitCode, resp.Result.Stdout, resp.Result.Stderr)
			}
		})
	}
}

// TestRunFS: the fs stage makes an allowed change, and one the sandbox
// denies is not made, said denied with a retry for its directory.
func TestRunFS(t *testing.T) {
	ws := t.TempDir()
	r, _ := callOf(t, decode(t, `{"cwd": "`+ws+`", "sandbox_mode": "workspace-write", "command": ["true"]}`))
	opt := FSOptions{Executable: os.Executable}
	res, err := RunFS(context.Background(), r, fsop.Op{Kind: fsop.Write, Path: "new.txt"}, "content\n", opt)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "new.txt")); !res.OK || res.ExitCode != 0 || string(b) != "content\n" {
		t.Fatalf("allowed write: ok %v exit %d error %+v, file %q", res.OK, res.ExitCode, res.Error, b)
	}
	r.Mode = profiles.ReadOnly
	res, err = RunFS(context.Background(), r, fsop.Op{Kind: fsop.Write, Path: "denied.txt"}, "x", opt)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ws, "denied.txt")); err == nil {
		t.Error("a read-only call wrote a file")
	}
	if res.OK || res.Error == nil || res.Error.Kind != wire.KindFSDenied || res.ExitCode != wire.ExitDenied || res.Retry == nil {
		t.Errorf("denied write: ok %v exit %d error %+v retry %+v", res.OK, res.ExitCode, res.Error, res.Retry)
	}
	// An existing file granted alone is written in place: the helper
	// cannot create its temp file beside it.
	if err := os.WriteFile(filepath.Join(ws, "one.txt"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, _ = callOf(t, decode(t, `{"cwd": "`+ws+`", "command": ["true"], "preauthorized": true,
		"additional_permissions": {"file_system": {"write": ["one.txt"]}}}`))
	res, err = RunFS(context.Background(), r, fsop.Op{Kind: fsop.Write, Path: "one.txt"}, "new", opt)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "one.txt")); !res.OK || string(b) != "new" || len(res.Denials) != 0 {
		t.Errorf("write of a file granted alone: ok %v error %+v denials %+v, file %q", res.OK, res.Error, res.Denials, b)
	}
	// A bad spec is refused by the stage itself.
	var out, errOut bytes.Buffer
	if code := FSStageMain([]string{"not json"}, strings.NewReader(""), &out, &errOut); code != 125 || out.Len() != 0 {
		t.Errorf("bad spec: exit %d, stdout %q", code, out.String())
	}
}
