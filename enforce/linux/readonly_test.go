//go:build linux

package linux

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

func TestUnescapeMountinfo(t *testing.T) {
	for in, want := range map[string]string{
		`/`: "/", `/a\040b`: "/a b", `/tab\011x`: "/tab\tx", `/back\134slash`: `/back\slash`, `/nl\012`: "/nl\n",
	} {
		if got, err := unescapeMountinfo(in); err != nil || got != want {
			t.Errorf("unescapeMountinfo(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{`/a\04`, `/a\`, `/a\999`} {
		if got, err := unescapeMountinfo(bad); err == nil {
			t.Errorf("unescapeMountinfo(%q) = %q, want an error", bad, got)
		}
	}
}

func TestParseMountinfo(t *testing.T) {
	info := `22 1 0:21 / / rw,relatime shared:1 - ext4 /dev/vda rw
23 22 0:22 / /proc rw,nosuid,nodev,noexec,relatime shared:2 - proc proc rw
24 22 0:23 / /my\040dir ro,noatime - tmpfs tmpfs rw
25 22 0:24 / /tmp rw,nosuid,nodev shared:3 - tmpfs tmpfs rw
26 25 0:25 / /tmp rw,noexec - tmpfs tmpfs rw
`
	got, err := parseMountinfo(info)
	if err != nil {
		t.Fatal(err)
	}
	want := []mountPoint{
		{"/", unix.MS_RELATIME},
		{"/proc", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_RELATIME},
		{"/my dir", unix.MS_NOATIME},
		{"/tmp", unix.MS_NOEXEC}, // the top of the two mounts on /tmp
	}
	if !slices.Equal(got, want) {
		t.Errorf("parseMountinfo = %+v, want %+v", got, want)
	}
	if _, err := parseMountinfo("1 2 0:1 / /bad\\04 rw - x x rw\n"); err == nil {
		t.Error("a truncated escape parsed")
	}
}

// TestReadOnlyRoot runs readOnlyRoot on this kernel, in a mount namespace of
// one locked thread that then dies: inside the writable root files can be
// made, outside it (on the same file system and on another mount) they
// cannot, with EROFS: the mounts, not Landlock, refuse them. Device files
// stay writable.
func TestReadOnlyRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a mount namespace from a thread (the stage does it inside a user namespace; the kernel matrix covers that)")
	}
	root := t.TempDir()
	outside, err := os.MkdirTemp("/var/tmp", "sbx-ro-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(outside)
	type result struct{ inside, outsideFS, outsideTmp, devNull error }
	done := make(chan result, 1)
	go func() {
		// Never unlocked: the thread leaves the runtime when this returns.
		runtime.LockOSThread()
		var r result
		if err := unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_FS); err != nil {
			r.inside = err
			done <- r
			return
		}
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
			r.inside = err
			done <- r
			return
		}
		if err := readOnlyRoot([]string{root}); err != nil {
			r.inside = err
			done <- r
			return
		}
		r.inside = os.WriteFile(filepath.Join(root, "f"), []byte("x"), 0o644)
		r.outsideFS = os.WriteFile(filepath.Join(outside, "f"), []byte("x"), 0o644)
		r.outsideTmp = os.WriteFile(filepath.Join(filepath.Dir(root), "sbx-ro-sibling"), []byte("x"), 0o644)
		r.devNull = os.WriteFile(os.DevNull, []byte("x"), 0)
		done <- r
	}()
	r := <-done
	if r.inside != nil {
		t.Fatalf("write inside the writable root: %v", r.inside)
	}
	if !errors.Is(r.outsideFS, unix.EROFS) {
		t.Errorf("write in %s (outside): %v, want EROFS", outside, r.outsideFS)
	}
	if !errors.Is(r.outsideTmp, unix.EROFS) {
		t.Errorf("write next to the root: %v, want EROFS", r.outsideTmp)
	}
	if r.devNull != nil {
		t.Errorf("write /dev/null: %v", r.devNull)
	}
	// The host's mounts are untouched.
	if err := os.WriteFile(filepath.Join(outside, "g"), []byte("x"), 0o644); err != nil {
		t.Errorf("the host's %s became read-only: %v", outside, err)
	}
}
