//go:build linux

package integration

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

// TestUnixSocketPaths: with the network off, a pathname unix socket outside
// the writable roots (a host daemon's) is unreachable from Landlock ABI 9
// (RESOLVE_UNIX: EACCES), while a socket the command serves inside its
// workspace keeps working. Below ABI 9 the seccomp supervisor refuses it
// instead; without the supervisor either, the outside socket stays reachable
// and the report says landlock-resolve-unix. With the network on every socket is
// reachable, and nothing is degraded for it.
func TestUnixSocketPaths(t *testing.T) {
	c := caps(t)
	sock := filepath.Join(varTmpDir(t), "host.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	const token = "host-unix-server"
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conn.Write([]byte(token))
			conn.Close()
		}
	}()
	want(t, probeDirect(t, nil, "unix-connect", sock), "")
	for _, mode := range [][]string{readOnly, wsWrite} {
		t.Run(mode[1]+"/outside", func(t *testing.T) {
			r, rep := probe(t, workspace(t), mode, "unix-connect", sock)
			if c.abi >= 9 || c.supervised {
				// Below ABI 9 the supervisor refuses it (TestUnixConnectSupervised).
				want(t, r, "EACCES")
				// Landlock, or below ABI 9 the supervisor, closes the gap
				// (but for abstract addresses without a network namespace).
				if d := rep.degraded("landlock-resolve-unix"); d != "" && (c.abi >= 9 || c.namespaces || c.abi < 6) {
					t.Errorf("degraded landlock-resolve-unix on ABI %d (supervised %t): %s", c.abi, c.supervised, d)
				}
				return
			}
			want(t, r, "")
			if r.OK && r.Detail != token {
				t.Errorf("reached something other than the test's server: %q", r.Detail)
			}
			if rep.degraded("landlock-resolve-unix") == "" {
				t.Errorf("reached a unix socket outside the writable roots on ABI %d, but degraded has no landlock-resolve-unix: %+v", c.abi, rep.Degraded)
			}
		})
	}
	t.Run("workspace-write/inside", func(t *testing.T) {
		// A short cwd: a sockaddr_un path has at most 107 bytes.
		ws, err := os.MkdirTemp("", "sbxu")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(ws) })
		ws, _ = filepath.EvalSymlinks(ws)
		r, _ := probe(t, ws, wsWrite, "unix-serve", filepath.Join(ws, "s.sock"))
		want(t, r, "")
	})
	for _, mode := range [][]string{{"--mode", "read-only", "--network"}, danger} {
		t.Run(modeName(mode), func(t *testing.T) {
			r, rep := probe(t, workspace(t), mode, "unix-connect", sock)
			want(t, r, "")
			if r.OK && r.Detail != token {
				t.Errorf("reached something other than the test's server: %q", r.Detail)
			}
			if d := rep.degraded("landlock-resolve-unix"); d != "" {
				t.Errorf("degraded landlock-resolve-unix with the network on: %s", d)
			}
		})
	}
}
