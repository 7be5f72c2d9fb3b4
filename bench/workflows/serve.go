package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
)

// server is one `sbx serve` on stdio with one workspace-write session
// (approval policy never: the grants are the caller's own, preauthorized)
// and one turn; each run is an exec request in it.
type server struct {
	cmd     *exec.Cmd
	in      io.WriteCloser
	r       *bufio.Reader
	next    int
	session string
	turn    string
}

func startServe(sbx, root string) (*server, error) {
	cmd := exec.Command(sbx, "serve", "--state-dir", filepath.Join(root, "serve-state"))
	cmd.Dir, cmd.Stderr = root, os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start sbx serve: %w", err)
	}
	s := &server{cmd: cmd, in: in, r: bufio.NewReaderSize(out, 1<<20)}
	if _, err := s.call("initialize", map[string]any{}); err != nil {
		s.close()
		return nil, err
	}
	o, err := s.call("session/open", map[string]any{"cwd": root, "sandbox_mode": "workspace-write", "approval_policy": "never"})
	if err != nil {
		s.close()
		return nil, err
	}
	s.session, _ = o["session_id"].(string)
	t, err := s.call("turn/begin", map[string]any{"session_id": s.session})
	if err != nil {
		s.close()
		return nil, err
	}
	s.turn, _ = t["turn_id"].(string)
	return s, nil
}

func (s *server) call(method string, params any) (map[string]any, error) {
	s.next++
	id := s.next
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	if _, err := s.in.Write(append(b, '\n')); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	for {
		line, err := s.r.ReadBytes('\n')
		if err != nil {
			return nil, fmt.Errorf("%s: read the answer: %w", method, err)
		}
		var m struct {
			ID     *int            `json:"id"`
			Result map[string]any  `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(line, &m); err != nil {
			return nil, fmt.Errorf("%s: %w: %s", method, err, line)
		}
		if m.ID == nil || *m.ID != id { // a notification
			continue
		}
		if len(m.Error) > 0 && string(m.Error) != "null" {
			return nil, fmt.Errorf("%s: %s", method, m.Error)
		}
		return m.Result, nil
	}
}

// exec runs w once through the server and returns its output (the
// result's stdout and stderr) and an error when it did not exit 0.
func (s *server) exec(w *workflow) ([]byte, error) {
	p := w.execParams()
	p["session_id"], p["turn_id"] = s.session, s.turn
	p["call_id"] = fmt.Sprintf("c%d", s.next+1)
	p["cwd"], p["command"] = w.dir, w.sandboxArgv()
	r, err := s.call("exec", p)
	if err != nil {
		return nil, err
	}
	out := fmt.Sprint(r["stdout"], r["stderr"])
	if code, _ := r["exit_code"].(float64); code != 0 || r["exit_code"] == nil {
		return []byte(out), fmt.Errorf("exit code %v: %v", r["exit_code"], r)
	}
	return []byte(out), nil
}

func (s *server) close() {
	s.in.Close()
	s.cmd.Wait()
}
