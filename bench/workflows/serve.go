package main

import (
	"fmt"
	"path/filepath"

	"github.com/sbx-sandbox/sbx/bench/internal/rpc"
)

// server is one `sbx serve` on stdio with one workspace-write session
// (approval policy never: the grants are the caller's own, preauthorized)
// and one turn; each run is an exec request in it. The connection is
// bench/internal/rpc's, as bench/serve's and bench/cost's are.
type server struct {
	*rpc.Server
}

func startServe(sbx, root string) (*server, error) {
	srv, err := rpc.StartStdio([]string{sbx, "serve", "--state-dir", filepath.Join(root, "serve-state")}, root, nil)
	if err != nil {
		return nil, fmt.Errorf("start sbx serve: %w", err)
	}
	s, c := &server{srv}, srv.Client
	if _, err := c.Call("initialize", map[string]any{}); err != nil {
		s.Close()
		return nil, err
	}
	o, err := c.Call("session/open", map[string]any{"cwd": root, "sandbox_mode": "workspace-write", "approval_policy": "never"})
	if err != nil {
		s.Close()
		return nil, err
	}
	c.SessionID, _ = o["session_id"].(string)
	t, err := c.Call("turn/begin", map[string]any{"session_id": c.SessionID})
	if err != nil {
		s.Close()
		return nil, err
	}
	c.Turn, _ = t["turn_id"].(string)
	return s, nil
}

// exec runs w once through the server and returns its output (the
// result's stdout and stderr) and an error when it did not exit 0.
func (s *server) exec(w *workflow) ([]byte, error) {
	p := w.execParams()
	c := s.Client
	p["session_id"], p["turn_id"] = c.SessionID, c.Turn
	p["call_id"] = fmt.Sprintf("c%d", *c.Next+1)
	p["cwd"], p["command"] = w.dir, w.sandboxArgv()
	r, err := c.Call("exec", p)
	if err != nil {
		return nil, err
	}
	out := fmt.Sprint(r["stdout"], r["stderr"])
	if code, _ := r["exit_code"].(float64); code != 0 || r["exit_code"] == nil {
		return []byte(out), fmt.Errorf("exit code %v: %v", r["exit_code"], r)
	}
	return []byte(out), nil
}
