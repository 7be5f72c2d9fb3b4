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
		{"/my dir", unix.MS_RDONLY | unix.MS_NOATIME}, // ro: kept by a nosuid remount
		{"/tmp", unix.MS_NOEXEC},                      // the top of the two mounts on /tmp
	}
	if !slices.Equal(got, want) {
		t.Errorf("parseMountinfo = %+v, want %+v", got, want)
	}
	if _, err := parseMountinfo("1 2 0:1 / /bad\\04 rw - x x rw\n"); err == nil {
		t.Error("a truncated escape parsed")
	}
}

// TestReadOnlyRoot runs readOnlyRoot on this kernel, both ways (one
// mount_setattr, and the remount walk of kernels before 5.12), in a mount
// namespace of one locked thread that then dies: inside the writable root
// files can be made, and a mount below it keeps its flags (a read-only one
// stays read-only); so do a kept mount (the call's procfs, when it was
// mounted first) and the mounts below it; outside them (on the same file
// system and on another mount) files cannot be made, with EROFS: the
// mounts, not Landlock, refuse them. Device files stay writable. With "/"
// among the roots nothing changes.
func TestReadOnlyRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a mount namespace from a thread (the stage does it inside a user namespace; the kernel matrix covers that)")
	}
	bothReadOnlyRoots(t, testReadOnlyRoot)
}

// bothReadOnlyRoots runs test twice, as subtests: with the read-only root
// made by mount_setattr, and by the remount walk of kernels before 5.12.
func bothReadOnlyRoots(t *testing.T, test func(t *testing.T)) {
	for _, remount := range []bool{false, true} {
		name := "mount_setattr"
		if remount {
			name = "remount"
		}
		t.Run(name, func(t *testing.T) {
			forceRemount = remount
			defer func() { forceRemount = false }()
			test(t)
		})
	}
}

func testReadOnlyRoot(t *testing.T) {
	root := t.TempDir()
	outside, err := os.MkdirTemp("/var/tmp", "sbx-ro-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(outside)
	for _, d := range []string{"rw", "ro"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"tmpfs", "keep"} {
		if err := os.Mkdir(filepath.Join(outside, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	keep := filepath.Join(outside, "keep")
	type result struct {
		viaSetattr                                                                                       bool
		setup, inside, belowRW, belowRO, outsideFS, outsideTmp, outsideMount, devNull, kept, keptRO, all error
		// nosuid of the writable root and of a mount below it (issue 27
		// §2), and of the kept mount, which keeps its flags.
		nosuidRoot, nosuidBelow, nosuidKept, nosuidAll bool
	}
	inNamespace := func(roots []string, check func(r *result)) result {
		done := make(chan result, 1)
		go func() {
			// Never unlocked: the thread leaves the runtime when this returns.
			runtime.LockOSThread()
			var r result
			defer func() { done <- r }()
			if r.setup = unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_FS); r.setup != nil {
				return
			}
			if r.setup = unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); r.setup != nil {
				return
			}
			// A writable and a read-only mount below the root, a
			// writable one outside it.
			for _, m := range []struct {
				path  string
				flags uintptr
			}{{filepath.Join(root, "rw"), 0}, {filepath.Join(root, "ro"), unix.MS_RDONLY}, {filepath.Join(outside, "tmpfs"), 0}, {keep, 0}} {
				if r.setup = unix.Mount("sbx-test", m.path, "tmpfs", m.flags, "size=64k"); r.setup != nil {
					return
				}
			}
			// A read-only mount below the kept one.
			if r.setup = os.Mkdir(filepath.Join(keep, "ro"), 0o755); r.setup != nil {
				return
			}
			if r.setup = unix.Mount("sbx-test", filepath.Join(keep, "ro"), "tmpfs", unix.MS_RDONLY, "size=64k"); r.setup != nil {
				return
			}
			if !forceRemount {
				r.viaSetattr, r.setup = setattrReadOnlyRoot(roots, []string{keep})
			}
			if !r.viaSetattr && r.setup == nil {
				r.setup = readOnlyRoot(roots, []string{keep}, threadMountinfo)
			}
			if r.setup != nil {
				return
			}
			check(&r)
		}()
		return <-done
	}
	write := func(path string) error { return os.WriteFile(path, []byte("x"), 0o644) }
	r := inNamespace([]string{root}, func(r *result) {
		r.inside = write(filepath.Join(root, "f"))
		r.belowRW = write(filepath.Join(root, "rw", "f"))
		r.belowRO = write(filepath.Join(root, "ro", "f"))
		r.outsideFS = write(filepath.Join(outside, "f"))
		r.outsideTmp = write(filepath.Join(filepath.Dir(root), "sbx-ro-sibling"))
		r.outsideMount = write(filepath.Join(outside, "tmpfs", "f"))
		r.devNull = os.WriteFile(os.DevNull, []byte("x"), 0)
		r.kept = write(filepath.Join(keep, "f"))
		r.keptRO = write(filepath.Join(keep, "ro", "f"))
		r.nosuidRoot, r.nosuidBelow, r.nosuidKept = nosuid(root), nosuid(filepath.Join(root, "rw")), nosuid(keep)
	})
	if r.setup != nil {
		t.Fatalf("set up: %v", r.setup)
	}
	if !forceRemount && !r.viaSetattr && hasMountSetattr() {
		t.Error("the kernel has mount_setattr, readOnlyRoot walked the mounts")
	}
	if r.inside != nil {
		t.Errorf("write inside the writable root: %v", r.inside)
	}
	if r.belowRW != nil {
		t.Errorf("write on a writable mount below the writable root: %v", r.belowRW)
	}
	if !errors.Is(r.belowRO, unix.EROFS) {
		t.Errorf("write on a read-only mount below the writable root: %v, want EROFS", r.belowRO)
	}
	if !errors.Is(r.outsideFS, unix.EROFS) {
		t.Errorf("write in %s (outside): %v, want EROFS", outside, r.outsideFS)
	}
	if !errors.Is(r.outsideTmp, unix.EROFS) {
		t.Errorf("write next to the root: %v, want EROFS", r.outsideTmp)
	}
	if !errors.Is(r.outsideMount, unix.EROFS) {
		t.Errorf("write on a writable mount outside the root: %v, want EROFS", r.outsideMount)
	}
	if r.devNull != nil {
		t.Errorf("write /dev/null: %v", r.devNull)
	}
	if r.kept != nil {
		t.Errorf("write on the kept mount: %v", r.kept)
	}
	if !errors.Is(r.keptRO, unix.EROFS) {
		t.Errorf("write on a read-only mount below the kept one: %v, want EROFS", r.keptRO)
	}
	if !r.nosuidRoot || !r.nosuidBelow {
		t.Errorf("the writable root is nosuid: %t, a mount below it: %t; want both", r.nosuidRoot, r.nosuidBelow)
	}
	if r.nosuidKept {
		t.Error("the kept mount became nosuid: it keeps its flags")
	}
	r = inNamespace([]string{root, "/"}, func(r *result) {
		r.all = write(filepath.Join(outside, "all"))
		r.nosuidAll = nosuid(outside)
	})
	if r.setup != nil || r.all != nil {
		t.Errorf(`with "/" a writable root: set up %v, write outside %v`, r.setup, r.all)
	}
	if !r.nosuidAll {
		t.Errorf(`with "/" a writable root: %s is not nosuid`, outside)
	}
	// The host's mounts are untouched.
	if err := os.WriteFile(filepath.Join(outside, "g"), []byte("x"), 0o644); err != nil {
		t.Errorf("the host's %s became read-only: %v", outside, err)
	}
}

// hasMountSetattr reports whether the kernel knows mount_setattr (5.12+):
// asked with a bad fd, it says EBADF, not ENOSYS.
func hasMountSetattr() bool {
	return !errors.Is(unix.MountSetattr(-1, "", unix.AT_EMPTY_PATH, &unix.MountAttr{}), unix.ENOSYS)
}

// nosuid reports whether the mount of path is nosuid.
func nosuid(path string) bool {
	var st unix.Statfs_t
	return unix.Statfs(path, &st) == nil && st.Flags&unix.ST_NOSUID != 0
}
