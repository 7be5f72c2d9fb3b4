package execjson

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/call"
	"github.com/sbx-sandbox/sbx/enforce/host"
	"github.com/sbx-sandbox/sbx/profiles"
)

func init() { runtime.LockOSThread() }

// TestMain: an unprivileged launch re-executes this binary as its stage.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == host.StageCommand {
		os.Exit(host.StageMain())
	}
	os.Exit(m.Run())
}

func decode(t *testing.T, s string) *Request {
	t.Helper()
	req, err := Decode([]byte(s))
	if err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return req
}

func TestDecodeStrict(t *testing.T) {
	var fe *profiles.FieldError
	for _, in := range []string{`{"cwd": "/", "SANDBOX_MODE": "danger-full-access"}`, `{"cwd": "/", "cwd": "/etc"}`} {
		if _, err := Decode([]byte(in)); err == nil {
			t.Errorf("%s decoded", in)
		} else if !errors.As(err, &fe) && !strings.Contains(err.Error(), "duplicate") {
			t.Errorf("%s: %v does not name the field", in, err)
		}
	}
}

// TestExecHooks: Adjust changes the call before it is prepared, and a
// Dispatch error stops it before its command starts.
func TestExecHooks(t *testing.T) {
	ws := t.TempDir()
	marker := filepath.Join(ws, "ran")
	req := decode(t, `{"cwd": "`+ws+`", "sandbox_mode": "workspace-write", "command": ["sh", "-c", "echo x > ran; echo out"]}`)
	stop := errors.New("stopped")
	_, err := Exec(context.Background(), req, Options{Env: os.Environ(), Dispatch: func() error { return stop }})
	if !errors.Is(err, stop) {
		t.Fatalf("Dispatch error: got %v", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran after Dispatch refused")
	}
	_, err = Exec(context.Background(), req, Options{Env: os.Environ(), Adjust: func(r *call.Request) error {
		r.Mode = profiles.ReadOnly
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("Adjust's read-only mode did not apply: the workspace was written")
	}
	var events []OutputEvent
	req.Stream, req.CallID = true, "c1"
	resp, err := Exec(context.Background(), req, Options{Env: os.Environ(), Events: func(ev OutputEvent) error { events = append(events, ev); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Result == nil || resp.CallID() != "c1" || resp.ExitCode() != 0 || resp.Result.Stdout != "" {
		t.Errorf("streamed result %+v", resp.Result)
	}
	if len(events) != 1 || events[0].Data != "out\n" || events[0].CallID != "c1" || events[0].Stream != "stdout" {
		t.Errorf("events %+v", events)
	}
	req.Stream = false
	if _, err := Exec(context.Background(), &Request{Cwd: ws, Command: []string{"true"}, Stream: true}, Options{Env: os.Environ()}); err == nil {
		t.Error("a stream without an event sink ran")
	}
}

// TestExecCancel: a cancelled context kills the command's tree.
func TestExecCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	req := decode(t, `{"cwd": "`+t.TempDir()+`", "command": ["sh", "-c", "echo up; sleep 30"], "stream": true}`)
	resp, err := Exec(ctx, req, Options{Env: os.Environ(), Events: func(OutputEvent) error { cancel(); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Result.KilledBy != "signal" || resp.Result.DurationMS > 10000 {
		t.Errorf("cancelled call: killed_by %q after %d ms", resp.Result.KilledBy, resp.Result.DurationMS)
	}
}
