//go:build unix

package main

import (
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func nonblocking(t *testing.T, f *os.File) bool {
	t.Helper()
	flags, err := unix.FcntlInt(uintptr(rawFD(f)), unix.F_GETFL, 0)
	if err != nil {
		t.Fatal(err)
	}
	return flags&unix.O_NONBLOCK != 0
}

// blockingPipe is a pipe whose files are blocking, as a server's stdin
// and stdout are (os.Pipe's are pollable already).
func blockingPipe(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe(p[:]); err != nil {
		t.Fatal(err)
	}
	unix.CloseOnExec(p[0])
	unix.CloseOnExec(p[1])
	return os.NewFile(uintptr(p[0]), "r"), os.NewFile(uintptr(p[1]), "w")
}

// TestPollableStdio: a server on pipes reads and writes through pollable
// duplicates (a read parks its goroutine, not its P), and leaves its own
// fds open and blocking again when done; with stdout on stderr's file, it
// changes nothing.
func TestPollableStdio(t *testing.T) {
	inR, inW := blockingPipe(t)
	outR, outW := blockingPipe(t)
	errf, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []*os.File{inR, inW, outR, outW, errf} {
		defer f.Close()
	}

	in, out, done := pollableStdio(inR, outW, errf)
	pin, ok := in.(*os.File)
	if !ok || pin == inR {
		t.Fatalf("stdin on a pipe: got %T %v, want a pollable duplicate", in, in)
	}
	// Only a pollable file takes a deadline.
	if err := pin.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatalf("stdin's duplicate is not pollable: %v", err)
	}
	if !nonblocking(t, inR) || !nonblocking(t, outW) {
		t.Fatal("the pipes' open files are not non-blocking while served")
	}
	if _, err := inW.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if n, err := pin.Read(buf); err != nil || string(buf[:n]) != "ping\n" {
		t.Fatalf("read through the duplicate: %q, %v", buf[:n], err)
	}
	if _, err := out.Write([]byte("pong\n")); err != nil {
		t.Fatal(err)
	}
	if n, err := outR.Read(buf); err != nil || string(buf[:n]) != "pong\n" {
		t.Fatalf("written through the duplicate: %q, %v", buf[:n], err)
	}
	done()
	if nonblocking(t, inR) || nonblocking(t, outW) {
		t.Fatal("done left the pipes non-blocking")
	}
	// The program's own fds are still open.
	if _, err := inW.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if n, err := inR.Read(buf); err != nil || n != 1 {
		t.Fatalf("stdin's own fd after done: %d, %v", n, err)
	}

	// 2>&1: stdout is stderr's file; nothing changes.
	in, out, done = pollableStdio(inR, outW, outW)
	if in != inR || out != outW || nonblocking(t, inR) {
		t.Fatal("with stdout on stderr's file, the stdio changed")
	}
	done()
}
