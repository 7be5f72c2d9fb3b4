//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// sbxEscape is the escape of issue 27 §1 from inside a call: connect to an
// sbx server's socket and ask it for a danger-full-access session whose
// exec writes out. bound first binds the socket to an abstract address of
// the probe's own (a supervisor that marks the sockets it connects cannot
// mark that one). OK is true when the exec ran; otherwise Errno is the
// connect's errno, or "refused" with the server's JSON-RPC error as
// Detail, or "closed" when the server said nothing.
func sbxEscape(sock, out string, bound bool) result {
	r := result{Op: "sbx-escape"}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return errnoResult(r, err, "socket")
	}
	if bound {
		if err := unix.Bind(fd, &unix.SockaddrUnix{Name: fmt.Sprintf("@probe-own/%d", os.Getpid())}); err != nil {
			return errnoResult(r, err, "bind")
		}
	}
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: sock}); err != nil {
		return errnoResult(r, err, "connect "+sock)
	}
	c := os.NewFile(uintptr(fd), "sbx-socket")
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	in := bufio.NewReader(c)
	steps := []struct{ method, params string }{
		{"initialize", `{}`},
		{"session/open", `{"session_id":"escape","cwd":"/","sandbox_mode":"danger-full-access","approval_policy":"never"}`},
		{"turn/begin", `{"session_id":"escape"}`},
		{"exec", ""},
	}
	turn := ""
	// Each attempt its own session: the server keeps sessions past a
	// connection.
	session := fmt.Sprintf("escape-%d-%d", os.Getpid(), time.Now().UnixNano())
	for i, s := range steps {
		params := strings.ReplaceAll(s.params, `"escape"`, fmt.Sprintf("%q", session))
		if s.method == "exec" {
			cmd, _ := json.Marshal([]string{"sh", "-c", "echo escaped > " + out})
			params = fmt.Sprintf(`{"session_id":%q,"turn_id":%q,"call_id":"c1","cwd":"/","command":%s}`, session, turn, cmd)
		}
		if _, err := fmt.Fprintf(c, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", i+1, s.method, params); err != nil {
			// A server that refused the connection may have closed it
			// already: its answer is still there to read.
			r.Detail = "write " + s.method + ": " + err.Error()
		}
		for {
			line, err := in.ReadString('\n')
			if err != nil {
				r.Errno, r.Detail = "closed", fmt.Sprintf("%s: %v (%s)", s.method, err, r.Detail)
				return r
			}
			var m struct {
				ID     *int            `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if json.Unmarshal([]byte(line), &m) != nil {
				continue
			}
			if m.Error != nil {
				r.Errno, r.Detail = "refused", s.method+": "+strings.TrimSpace(string(m.Error))
				return r
			}
			if m.ID == nil || *m.ID != i+1 {
				continue // a notification (exec output)
			}
			if s.method == "exec" {
				var x struct {
					ExitCode int    `json:"exit_code"`
					Error    string `json:"error"`
				}
				json.Unmarshal(m.Result, &x)
				r.Detail = fmt.Sprintf("exec: exit %d %s", x.ExitCode, x.Error)
			}
			if s.method == "turn/begin" {
				var t struct {
					TurnID string `json:"turn_id"`
				}
				json.Unmarshal(m.Result, &t)
				turn = t.TurnID
			}
			break
		}
	}
	// OK: the server ran the command (its exit status is in Detail).
	r.OK = true
	return r
}

func errnoResult(r result, err error, what string) result {
	r.Detail = what + ": " + err.Error()
	if e, ok := err.(unix.Errno); ok {
		r.Errno = unix.ErrnoName(e)
	}
	return r
}
