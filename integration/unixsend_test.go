//go:build linux

package integration

import (
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// dgramServer serves a datagram socket at path and counts what it reads.
func dgramServer(t *testing.T, path string) *atomic.Int64 {
	t.Helper()
	ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var n atomic.Int64
	go func() {
		buf := make([]byte, 64)
		for {
			if _, err := ln.Read(buf); err != nil {
				return
			}
			n.Add(1)
		}
	}()
	return &n
}

// TestUnixSendmsgSupervised: below Landlock ABI 9, with the network off,
// every sendmsg and sendmmsg is carried out by the supervisor: one with
// MSG_DONTROUTE (once exempt, for the stage's hand-over of its listener),
// a sendmmsg, and a sendmsg whose destination another thread fills after
// any check reach no datagram socket outside the writable roots (EACCES
// and a denial), while the same to one in the workspace works.
func TestUnixSendmsgSupervised(t *testing.T) {
	c := caps(t)
	if c.abi >= 9 {
		t.Skipf("Landlock ABI %d confines unix sockets itself (TestUnixSocketPaths)", c.abi)
	}
	Require(t, "user-notif")
	out := varTmpDir(t)
	ws := shortWorkspace(t)
	wsw := []string{"--mode", "workspace-write"}
	outside := filepath.Join(out, "host.dgram")
	outsideN := dgramServer(t, outside)
	inside := filepath.Join(ws, "in.dgram")
	insideN := dgramServer(t, inside)
	want(t, probeDirect(t, nil, "unix-sendmmsg", outside), "")
	outsideN.Store(0)

	for _, tc := range []struct{ op, syscall string }{
		{"unix-sendmsg-dontroute", "sendmsg"},
		{"unix-sendmmsg", "sendmmsg"},
	} {
		t.Run(tc.op, func(t *testing.T) {
			r, rep := probe(t, ws, wsw, tc.op, outside)
			want(t, r, "EACCES")
			wantUnixDenial(t, rep, "send", tc.syscall, outside)
			before := insideN.Load()
			r, rep = probe(t, ws, wsw, tc.op, inside)
			want(t, r, "")
			if len(rep.Denials) != 0 {
				t.Errorf("denials %+v for a socket inside the workspace", rep.Denials)
			}
			if tc.op == "unix-sendmmsg" && r.OK && !strings.HasPrefix(r.Detail, "sent 2 (lens 8 8)") {
				t.Errorf("sendmmsg inside: %s, want 2 sent with their msg_len", r.Detail)
			}
			waitCount(t, insideN, before+map[bool]int64{true: 2, false: 1}[tc.op == "unix-sendmmsg"])
		})
	}
	t.Run("race", func(t *testing.T) {
		r, rep := probe(t, ws, wsw, "unix-sendmsg-race", outside, raceRounds())
		want(t, r, "")
		t.Logf("race: %s", r.Detail)
		if !strings.HasPrefix(r.Detail, "sent 0,") {
			t.Errorf("the race sent datagrams: %s", r.Detail)
		}
		if len(rep.Denials) == 0 || rep.Denials[0].Path != outside {
			t.Errorf("denials %+v, want the outside socket's", rep.Denials)
		}
	})
	if got := outsideN.Load(); got != 0 {
		t.Errorf("the outside server read %d datagrams, want 0", got)
	}
}

// waitCount waits up to a second for n to reach want.
func waitCount(t *testing.T, n *atomic.Int64, want int64) {
	t.Helper()
	for range 100 {
		if n.Load() >= want {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("the inside server read %d datagrams, want %d", n.Load(), want)
}
