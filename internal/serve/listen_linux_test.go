package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestListen: the socket appears at its path only once it listens (a
// client that waits for the file connects at once), mode 0600, with no
// temporary name left; an existing path is refused, not replaced.
func TestListen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sbx.sock")
	l, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %v, %v: want a socket, mode 0600", fi, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("the directory holds %d names, want the socket alone: %v", len(entries), entries)
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		t.Errorf("connect right after Listen: %v", err)
	}
	if _, err := Listen(path); err == nil || !strings.Contains(err.Error(), "a server listens on it") {
		t.Errorf("a second Listen on the path: %v, want refused", err)
	}
	// Not a socket: refused, left in place.
	plain := filepath.Join(dir, "plain")
	os.WriteFile(plain, []byte("keep"), 0o600)
	if _, err := Listen(plain); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("Listen on a regular file: %v, want refused", err)
	}
	if b, _ := os.ReadFile(plain); string(b) != "keep" {
		t.Errorf("the regular file was replaced: %q", b)
	}
	// A path too long for a temporary name beside it is bound directly.
	long := filepath.Join(dir, strings.Repeat("d", 100-len(dir)))
	if len(long) >= 108 || len(long)+8 < 108 {
		t.Skipf("SKIP: temporary directory %s leaves no room for the long-path case", dir)
	}
	l2, err := Listen(long)
	if err != nil {
		t.Fatal(err)
	}
	l2.Close()
}

// TestListenStale: a socket nobody listens on any more (its server was
// killed: the file stays) is replaced, and the new server answers on it.
func TestListenStale(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sbx.sock")
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	unix.Close(fd) // bound, never listened, closed: what a SIGKILL leaves
	l, err := Listen(path)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	defer l.Close()
	c, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(c)
	if err := unix.Connect(c, &unix.SockaddrUnix{Name: path}); err != nil {
		t.Errorf("connect to the new server: %v", err)
	}
}
