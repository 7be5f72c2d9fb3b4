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
	if _, err := Listen(path); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("a second Listen on the path: %v, want refused", err)
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
