//go:build linux

package integration

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// unixOutsideReason is the supervisor's reason for a pathname unix socket
// outside the writable roots (internal/enforce/linux/supervisor/unixconnect.go).
const unixOutsideReason = "a unix socket outside the writable roots is not reachable with the network off"

// shortWorkspace is a workspace with a short path: a sockaddr_un path has
// at most 107 bytes.
func shortWorkspace(t *testing.T) string {
	t.Helper()
	ws, err := os.MkdirTemp("", "sbxu")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(ws) })
	ws, _ = filepath.EvalSymlinks(ws)
	return ws
}

// countingServer serves a stream socket at path, writing token to each
// client, and counts the connections it accepts.
func countingServer(t *testing.T, path, token string) *atomic.Int64 {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var n atomic.Int64
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			conn.Write([]byte(token))
			conn.Close()
		}
	}()
	return &n
}

// wantUnixDenial asserts exactly one denial: op of the socket at path,
// observed by the supervisor, with the reason above.
func wantUnixDenial(t *testing.T, rep *report, op, syscall, path string) {
	t.Helper()
	if len(rep.Denials) != 1 {
		t.Fatalf("denials %+v, want exactly one %s of %s", rep.Denials, op, path)
	}
	d := rep.Denials[0]
	if d.Operation != op || d.Path != path || d.Syscall != syscall || d.Source != "seccomp-supervisor" ||
		d.Confidence != "observed" || d.Reason != unixOutsideReason || d.Address == nil || d.Address.Family != "unix" {
		t.Errorf("denial %+v (address %+v), want %s %s of %s (seccomp-supervisor, observed) %q", d, d.Address, op, syscall, path, unixOutsideReason)
	}
}

// TestUnixConnectSupervised: below Landlock ABI 9, with the network off,
// the supervisor keeps pathname unix sockets outside the writable roots out
// of reach (EACCES, as ABI 9 says, with a denial whose retry grants the
// network), race-free: it connects the command's socket itself, to the
// inode it resolved, so a thread that rewrites the sockaddr after the check
// reaches nothing outside. Sockets inside the workspace keep working,
// blocking or not, stream or datagram.
func TestUnixConnectSupervised(t *testing.T) {
	c := caps(t)
	if c.abi >= 9 {
		t.Skipf("Landlock ABI %d confines unix sockets itself (TestUnixSocketPaths)", c.abi)
	}
	Require(t, "user-notif")
	out := varTmpDir(t)
	sock := filepath.Join(out, "host.sock")
	const token = "host-unix-server"
	outsideConns := countingServer(t, sock, token)
	want(t, probeDirect(t, nil, "unix-connect", sock), "")
	outsideConns.Store(0)
	ws := shortWorkspace(t)
	wsw := []string{"--mode", "workspace-write"}

	t.Run("outside", func(t *testing.T) {
		r, rep := probe(t, ws, wsw, "unix-connect", sock)
		want(t, r, "EACCES")
		wantUnixDenial(t, rep, "connect", "connect", sock)
		if d := rep.degraded("landlock-resolve-unix"); d != "" && (c.namespaces || c.abi < 6) {
			t.Errorf("landlock-resolve-unix degraded with the supervisor: %q", d)
		}
		res := retryOutcome(t, ws, rep)
		if !strings.Contains(res.stdout, `"ok":true`) || !strings.Contains(res.stdout, token) {
			t.Errorf("the retry did not reach the socket: %s %s", res.stdout, res.stderr)
		}
	})
	t.Run("outside/read-only", func(t *testing.T) {
		r, rep := probe(t, ws, readOnly, "unix-connect", sock)
		want(t, r, "EACCES")
		wantUnixDenial(t, rep, "connect", "connect", sock)
	})
	t.Run("relative", func(t *testing.T) {
		rel, err := filepath.Rel(ws, sock)
		if err != nil {
			t.Fatal(err)
		}
		r, rep := probe(t, ws, wsw, "unix-connect", rel)
		want(t, r, "EACCES")
		wantUnixDenial(t, rep, "connect", "connect", sock)
		r, _ = probe(t, ws, wsw, "unix-serve", "rel.sock")
		want(t, r, "")
	})
	t.Run("symlink", func(t *testing.T) {
		link := filepath.Join(ws, "link.sock")
		if err := os.Symlink(sock, link); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(link)
		r, rep := probe(t, ws, wsw, "unix-connect", link)
		want(t, r, "EACCES")
		wantUnixDenial(t, rep, "connect", "connect", sock)
	})
	t.Run("inside", func(t *testing.T) {
		r, rep := probe(t, ws, wsw, "unix-serve", filepath.Join(ws, "s.sock"))
		want(t, r, "")
		// The side effect of a connect sbx carries out: the server sees
		// sbx's process as its peer (pid 0: outside the call's PID
		// namespace), with the command's uid and gid.
		t.Logf("peer credentials seen by a server inside: %s", r.Detail)
		if len(rep.Denials) != 0 {
			t.Errorf("denials %+v for a socket inside the workspace", rep.Denials)
		}
		want := fmt.Sprintf("uid=%d gid=%d", os.Geteuid(), os.Getegid())
		if !strings.Contains(r.Detail, want) {
			t.Errorf("peer credentials %q, want %s", r.Detail, want)
		}
	})
	t.Run("inside/host-served/nonblocking", func(t *testing.T) {
		in := filepath.Join(ws, "h.sock")
		n := countingServer(t, in, "inside")
		r, _ := probe(t, ws, wsw, "unix-connect-nonblock", in)
		want(t, r, "")
		r, _ = probe(t, ws, wsw, "unix-connect", in)
		want(t, r, "")
		if r.OK && r.Detail != "inside" {
			t.Errorf("read %q, want the inside server's token", r.Detail)
		}
		if n.Load() != 2 {
			t.Errorf("the inside server accepted %d connections, want 2", n.Load())
		}
		r, rep := probe(t, ws, wsw, "unix-connect-nonblock", sock)
		want(t, r, "EACCES")
		wantUnixDenial(t, rep, "connect", "connect", sock)
	})
	t.Run("datagram", func(t *testing.T) {
		dsock := filepath.Join(out, "dgram.sock")
		ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: dsock, Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		want(t, probeDirect(t, nil, "unix-sendto", dsock), "")
		r, rep := probe(t, ws, wsw, "unix-sendto", dsock)
		want(t, r, "EACCES")
		wantUnixDenial(t, rep, "send", "sendto", dsock)
		r, rep = probe(t, ws, wsw, "unix-dgram-serve", filepath.Join(ws, "d.sock"))
		want(t, r, "")
		if r.OK && r.Detail != `received ["one" "two"]` {
			t.Errorf("the datagrams inside: %s", r.Detail)
		}
		if len(rep.Denials) != 0 {
			t.Errorf("denials %+v for a socket inside the workspace", rep.Denials)
		}
	})
	t.Run("race", func(t *testing.T) {
		// Same-length names, so that a half-rewritten path names neither.
		rsock := filepath.Join(out, "race.sock")
		in := filepath.Join(ws, strings.Repeat("r", max(1, len(rsock)-len(ws)-1)))
		n := countingServer(t, rsock, "outside")
		r, _ := probe(t, ws, wsw, "unix-race", in, rsock, raceRounds())
		want(t, r, "")
		if got := n.Load(); got != 0 {
			t.Errorf("the outside server accepted %d connections from the race: %s", got, r.Detail)
		}
	})
	if got := outsideConns.Load(); got != 1 {
		// The retry's, with the network on.
		t.Errorf("the outside server accepted %d connections, want 1 (the retry's)", got)
	}
}

// raceRounds is how many rounds a race test runs: 3000 here, 500 with
// -test.short, which the kernel matrix passes (under QEMU's TCG each round
// costs tens of times more, and the host run already does the 3000).
func raceRounds() string {
	if testing.Short() {
		return "500"
	}
	return "3000"
}
