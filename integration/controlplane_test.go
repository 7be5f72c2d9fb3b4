//go:build linux

package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The reasons of the control plane's denials (internal/report/report.go).
const (
	reasonControlPlane    = "an sbx server's socket: a sandboxed call never reaches sbx's control plane, and the server refused it"
	reasonCallSocketBound = "a unix socket the command bound itself is not connected for it by the supervisor: " +
		"sbx marks each socket it connects for a call (an abstract address), so that sbx servers refuse it"
	// callRefusal starts the server's JSON-RPC error to a sandboxed call.
	callRefusal = "connection refused: a sandboxed call never reaches an sbx server"
)

// listeningServer starts `sbx serve --listen SOCK --ephemeral` with its
// socket in a fresh directory under /tmp, a writable root of every
// workspace-write call by default (the repro), and returns the
// socket and the server's stderr so far.
func listeningServer(t *testing.T) (sock string, stderr func() string) {
	t.Helper()
	dir := shortWorkspace(t)
	sock = filepath.Join(dir, "s.sock")
	cmd := exec.Command(sbxBin, "serve", "--listen", sock, "--ephemeral")
	cmd.Env = baseEnv()
	cmd.Dir = dir
	var buf lockedBuffer
	cmd.Stderr = &buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
	waitForPath(t, sock)
	return sock, buf.String
}

// TestControlPlaneRefusesCalls: issue 27 §1. A sandboxed call that reaches
// an sbx server's socket (here in /tmp, inside its writable roots) and asks
// it for a danger-full-access session whose exec writes outside the
// sandbox is refused with a JSON-RPC error, nothing is written, and where
// sbx's supervisor made the connect the call's report has a denial with no
// retry: the server's own call, a call of a separate sbx run (through the
// suite's server with SBX_IT_VIA=serve: a call of another server), and a
// nested sbx's call; with the network off (the supervisor connects for the
// call, and the server saw sbx's process as the peer: on the old code it
// accepted) and on (the command connects itself, as the same uid). The
// probe case runs in the kernel matrix too.
func TestControlPlaneRefusesCalls(t *testing.T) {
	c := caps(t)
	sock, serverLog := listeningServer(t)
	outside := outsideDir(t)
	var n atomic.Int32
	var refusals atomic.Int32 // the calls the server must have refused
	for _, net := range []struct {
		name  string
		flags []string
	}{{"network off", append([]string{"--retry-on-success"}, wsWrite...)}, {"network on", append([]string{"--retry-on-success", "--network"}, wsWrite...)}} {
		// The probe exits 0 (its JSON line says how it went): noRetry
		// judges the retry asked for, which a call that exits 0 gets only
		// with --retry-on-success.
		// The supervisor carries out the connect itself (and reports):
		// the network off, below Landlock ABI 9, which would let it
		// continue.
		supervised := net.name == "network off" && c.supervised && c.abi < 9
		for _, tc := range []struct {
			name string
			call func(t *testing.T, ws, out string) (outcome, *report)
		}{
			{"the server's own call", func(t *testing.T, ws, out string) (outcome, *report) {
				return serveExecAt(t, sock, serveRequest(t, ws, net.flags, []string{probeBin, "sbx-escape", sock, out}))
			}},
			{"a call of sbx run or of another server", func(t *testing.T, ws, out string) (outcome, *report) {
				return run(t, ws, net.flags, probeBin, "sbx-escape", sock, out)
			}},
			{"a nested sbx's call", func(t *testing.T, ws, out string) (outcome, *report) {
				inner := append([]string{sbxBin, "run", "--cwd", ws}, net.flags...)
				return run(t, ws, net.flags, append(inner, "--", probeBin, "sbx-escape", sock, out)...)
			}},
		} {
			t.Run(net.name+"/"+tc.name, func(t *testing.T) {
				ws := workspace(t)
				out := filepath.Join(outside, fmt.Sprintf("escaped-%d", n.Add(1)))
				res, rep := tc.call(t, ws, out)
				if res.code != 0 {
					t.Fatalf("exit %d\nstdout: %s\nstderr: %s", res.code, res.stdout, res.stderr)
				}
				r := parseProbe(t, res)
				t.Logf("probe sbx-escape -> %s", r)
				if !supervised && rep != nil && rep.degraded("pidns") != "" {
					// IMPORTANT (docs/security.md, gaps): without a PID
					// namespace a call that connects itself has no mark;
					// the report says pidns is degraded, which is what
					// this kernel and user can be held to.
					t.Logf("no PID namespace (%s): a direct connect is not recognised (%s)", rep.degraded("pidns"), r)
					return
				}
				refusals.Add(1) // the server saw the command, or sbx's marked connect
				if r.OK || r.Errno != "refused" || !strings.Contains(r.Detail, callRefusal) || !strings.Contains(r.Detail, `"kind":"denied"`) {
					t.Errorf("the call reached the server: %s", r)
				}
				if _, err := os.Stat(out); err == nil {
					t.Errorf("%s was written: the call ran a command through the server", out)
				}
				if tc.name == "a nested sbx's call" || rep == nil {
					return // the outer report: the connect was the inner sbx's
				}
				if supervised && !rep.deniedWith("connect", sock, reasonControlPlane) {
					t.Errorf("no denial of the connect to the server's socket: %+v", rep.Denials)
				}
				noRetry(t, rep)
			})
		}
	}
	// Every refusal is logged; none is made where each call connected
	// itself without a PID namespace (no user namespaces at Landlock ABI 9+,
	// which lets the connect continue: the gap above).
	if refusals.Load() > 0 && !strings.Contains(serverLog(), "refused a connection: a sandboxed call never reaches an sbx server") {
		t.Errorf("the server logged no refusal:\n%s", serverLog())
	}
}

// TestControlPlaneBoundSocket: a call that binds its socket itself before
// connecting cannot be marked by the supervisor: with the network off the
// supervisor refuses the connect (EACCES, a denial with no retry); with it
// on, the server refuses the command it sees.
func TestControlPlaneBoundSocket(t *testing.T) {
	c := caps(t)
	sock, _ := listeningServer(t)
	ws := workspace(t)
	out := filepath.Join(outsideDir(t), "escaped")
	r, rep := probe(t, ws, wsWrite, "sbx-escape-bound", sock, out)
	if c.supervised && c.abi < 9 {
		want(t, r, "EACCES")
		if !rep.deniedWith("connect", sock, reasonCallSocketBound) {
			t.Errorf("no denial of the bound socket's connect: %+v", rep.Denials)
		}
		noRetry(t, rep)
	} else if reason := rep.degraded("pidns"); reason != "" {
		// The connect is the command's own (Landlock ABI 9+ lets it
		// continue, or no supervisor) and, without a PID namespace,
		// unmarked: the gap of TestControlPlaneRefusesCalls.
		t.Logf("no PID namespace (%s): a direct connect is not recognised (%s)", reason, r)
	} else if r.OK || r.Errno != "refused" {
		t.Errorf("the call reached the server: %s", r)
	}
	r, rep = probe(t, ws, append([]string{"--network"}, wsWrite...), "sbx-escape-bound", sock, out)
	if reason := rep.degraded("pidns"); reason != "" {
		t.Logf("no PID namespace (%s): a direct connect is not recognised (%s)", reason, r)
		return
	}
	if r.OK || r.Errno != "refused" || !strings.Contains(r.Detail, callRefusal) {
		t.Errorf("the call reached the server: %s", r)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s was written", out)
	}
}

// TestControlPlaneClients: what is no sandboxed call keeps working: a
// client of the server's uid, and one in PID and user namespaces of its
// own (a runtime in another container), each run a danger-full-access
// exec that writes.
func TestControlPlaneClients(t *testing.T) {
	sock, serverLog := listeningServer(t)
	outside := outsideDir(t)
	out := filepath.Join(outside, "plain")
	if r := probeDirect(t, nil, "sbx-escape", sock, out); !r.OK {
		t.Errorf("a plain client was refused: %s\n%s", r, serverLog())
	}
	if _, err := os.Stat(out); err != nil {
		t.Errorf("the plain client's exec wrote nothing: %v", err)
	}
	Require(t, "userns")
	out = filepath.Join(outside, "namespaced")
	cmd := exec.Command(probeBin, "sbx-escape", sock, out)
	uid, gid := os.Getuid(), os.Getgid()
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}}}
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("a client in its own namespaces: %v\n%s", err, b)
	}
	var r probeResult
	if err := json.Unmarshal(b, &r); err != nil || !r.OK {
		t.Errorf("a client in its own PID and user namespaces was refused: %s (%v)\n%s", b, err, serverLog())
	}
	if _, err := os.Stat(out); err != nil {
		t.Errorf("its exec wrote nothing: %v", err)
	}
	time.Sleep(50 * time.Millisecond)
	if strings.Contains(serverLog(), "refused a connection") {
		t.Errorf("the server refused a client:\n%s", serverLog())
	}
}

// deniedWith reports whether the report lists a denial of operation on
// path with reason.
func (r *report) deniedWith(operation, path, reason string) bool {
	for _, d := range r.Denials {
		if d.Operation == operation && d.Path == path && d.Reason == reason {
			return true
		}
	}
	return false
}
