// Command client is the runtime's side of the Kubernetes shapes of
// deploy/kubernetes: a static program (no libc, no python in a busybox
// image) that speaks sbx serve's JSON-RPC (docs/serve.md) over the unix
// socket the sidecar or the node's server listens on, through serve.Dial,
// and runs the calls integration/kube/run.sh compares with the host's:
//
//	client SOCKET VOLUME
//
// The session's workspace is VOLUME/project (made here); the denied call
// writes VOLUME/outside.txt, beside it: a place the pod's user may write
// (the volume is its), so that only the sandbox stops it. Paths print with
// VOLUME as "VOLUME", so that the pod's lines compare with the host's.
//
// It opens a workspace-write session with approval policy never (a denial
// is final: no answerer is asked), runs each call of calls, and prints one
// JSON line per call: its name, exit code, stdout, denials (operation and
// path), downgrades (feature), the kernel's Landlock ABI and the namespaces
// the command got. It exits 0 when every call got a result,
// whatever the results were: run.sh judges them.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sbx-sandbox/sbx/internal/serve"
)

// calls are what the runtime asks for: one the sandbox allows (a write in
// the workspace, read back) and one it denies (a write outside the roots).
// The shell is busybox's, in the pod and on the host, so that exit codes
// compare (dash and busybox sh fail a redirection with 2 and 1).
var calls = []struct{ name, script string }{
	{"allowed", "echo hello > allowed.txt && cat allowed.txt"},
	{"denied", "echo x > ../outside.txt"},
}

// line is what the client prints for a call.
type line struct {
	Name     string   `json:"name"`
	ExitCode int      `json:"exit_code"`
	Stdout   string   `json:"stdout"`
	Denials  []string `json:"denials"`  // "operation path", in the report's order
	Degraded []string `json:"degraded"` // the features of the report's downgrades
	// LandlockABI is the kernel's, which some downgrades depend on
	// (landlock-resolve-unix below ABI 9).
	LandlockABI int `json:"landlock_abi"`
	// Namespaces are the namespaces the report says the command got, of
	// mount, pid and net ("none": the container's own).
	Namespaces string `json:"namespaces"`
}

// result is the part of the exec result (docs/json.md) the client reads.
type result struct {
	ExitCode int    `json:"exit_code"`
	Stdout   string `json:"stdout"`
	Denials  []struct {
		Operation string `json:"operation"`
		Path      string `json:"path"`
	} `json:"denials"`
	Degraded []struct {
		Feature string `json:"feature"`
	} `json:"degraded"`
	Enforcement struct {
		Mount    bool `json:"mount_namespace"`
		PID      bool `json:"pid_namespace"`
		Net      bool `json:"network_namespace"`
		Landlock struct {
			ABI int `json:"abi"`
		} `json:"landlock"`
	} `json:"enforcement"`
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: client SOCKET VOLUME")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(1)
	}
}

func run(socket, volume string) error {
	ws := filepath.Join(volume, "project")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The workspace is a repository's, as a runtime's usually is: with its
	// protected names present, sbx mounts them read-only instead of
	// refusing their creation through the supervisor (the downgrade
	// carve-out-create, a fact of the workspace, not of the shape).
	for _, d := range []string{".git", ".codex", ".agents"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			return err
		}
	}
	conn, err := dial(ctx, socket)
	if err != nil {
		return err
	}
	c := serve.Dial(ctx, conn, conn, nil)
	defer c.Close()
	if err := c.Call(ctx, "initialize", map[string]any{}, nil); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	var s struct {
		SessionID string `json:"session_id"`
	}
	if err := c.Call(ctx, "session/open", map[string]any{"cwd": ws, "sandbox_mode": "workspace-write", "approval_policy": "never"}, &s); err != nil {
		return fmt.Errorf("session/open: %w", err)
	}
	var t struct {
		TurnID string `json:"turn_id"`
	}
	if err := c.Call(ctx, "turn/begin", map[string]any{"session_id": s.SessionID}, &t); err != nil {
		return fmt.Errorf("turn/begin: %w", err)
	}
	out := json.NewEncoder(os.Stdout)
	for i, k := range calls {
		var r result
		p := map[string]any{"session_id": s.SessionID, "turn_id": t.TurnID, "call_id": fmt.Sprintf("kube-%d", i),
			"cwd": ws, "command": []string{"busybox", "sh", "-c", k.script}}
		if err := c.Call(ctx, "exec", p, &r); err != nil {
			return fmt.Errorf("exec %s: %w", k.name, err)
		}
		l := line{Name: k.name, ExitCode: r.ExitCode, Stdout: r.Stdout, Denials: []string{}, Degraded: []string{}, LandlockABI: r.Enforcement.Landlock.ABI,
			Namespaces: namespaces(r)}
		for _, d := range r.Denials {
			l.Denials = append(l.Denials, d.Operation+" "+strings.Replace(d.Path, volume, "VOLUME", 1))
		}
		for _, d := range r.Degraded {
			l.Degraded = append(l.Degraded, d.Feature)
		}
		if err := out.Encode(l); err != nil {
			return err
		}
	}
	return nil
}

// dial connects to the socket, waiting for it: in a pod the client may
// start before the sidecar listens.
func dial(ctx context.Context, socket string) (net.Conn, error) {
	for {
		conn, err := net.Dial("unix", socket)
		if err == nil {
			return conn, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("dial %s: %w", socket, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// namespaces names the namespaces of r's enforcement block that are true.
func namespaces(r result) string {
	var n []string
	for _, ns := range []struct {
		name string
		on   bool
	}{{"mount", r.Enforcement.Mount}, {"pid", r.Enforcement.PID}, {"net", r.Enforcement.Net}} {
		if ns.on {
			n = append(n, ns.name)
		}
	}
	if len(n) == 0 {
		return "none"
	}
	return strings.Join(n, ",")
}
