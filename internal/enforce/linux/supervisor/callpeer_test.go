//go:build linux

package supervisor

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCallPeer: what the server's check says of peers it can make without
// privileges: the server's own process (a connect its supervisor carried
// out), a socket bound to the supervisor's mark, and a plain process,
// which is no call. The calls themselves are in integration/controlplane_test.go.
func TestCallPeer(t *testing.T) {
	pair := func() [2]int {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
		return fds
	}
	fds := pair()
	if why, err := CallPeer(fds[0]); err != nil || !strings.Contains(why, "this server's own supervisor") {
		t.Errorf("the server's own process: %q, %v", why, err)
	}

	// A listening socket and a client bound to the mark.
	dir := t.TempDir()
	l, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(l)
	if err := unix.Bind(l, &unix.SockaddrUnix{Name: dir + "/s"}); err != nil {
		t.Fatal(err)
	}
	unix.Listen(l, 4)
	c, _ := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	defer unix.Close(c)
	if err := unix.Bind(c, &unix.SockaddrUnix{Name: "@" + CallSocketPrefix + "test"}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Connect(c, &unix.SockaddrUnix{Name: dir + "/s"}); err != nil {
		t.Fatal(err)
	}
	a, _, err := unix.Accept(l)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(a)
	if why, err := CallPeer(a); err != nil || !strings.Contains(why, "sbx supervisor") {
		t.Errorf("a socket bound to the mark: %q, %v", why, err)
	}
	if name, err := boundName(c); err != nil || name != "\x00"+CallSocketPrefix+"test" {
		t.Errorf("boundName: %q, %v", name, err)
	}
	if name, err := boundName(fds[1]); err != nil || name != "" {
		t.Errorf("boundName of an unbound socket: %q, %v", name, err)
	}

	// A plain child is no call, and neither is the test itself.
	cmd := exec.Command("sleep", "5")
	if err := cmd.Start(); err != nil {
		t.Skip("SKIP: no sleep to start:", err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if why, err := callAncestry(cmd.Process.Pid); err != nil || why != "" {
		t.Errorf("a plain child: %q, %v", why, err)
	}
	if why, err := callAncestry(os.Getpid()); err != nil || why != "" {
		t.Errorf("the test: %q, %v", why, err)
	}
	if _, err := callAncestry(1 << 30); err == nil {
		t.Error("a pid that does not exist: no error")
	}
}
