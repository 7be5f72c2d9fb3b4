//go:build linux

package linux

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

const mountwatchChildEnv = "SBX_MOUNTWATCH_TEST_CHILD"

// TestReadSelfMountinfoFollowsMounts: the kept mountinfo is read again once
// a mount is made or removed, and is at every step what a fresh read of
// /proc/self/mountinfo returns. It runs in a re-executed test binary in its
// own mount namespace (and user namespace when not root), so that its
// mounts touch nothing outside.
func TestReadSelfMountinfoFollowsMounts(t *testing.T) {
	if os.Getenv(mountwatchChildEnv) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), mountwatchChildEnv+"=1")
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS}
		if os.Getuid() != 0 {
			cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWUSER
			cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}}
			cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}}
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "--- PASS") {
			t.Fatalf("child did not pass:\n%s", out)
		}
		return
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		t.Fatalf("make / private: %v", err)
	}
	dir := t.TempDir()
	same := func(step string, wantDir bool) {
		t.Helper()
		got, err := readSelfMountinfo()
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		fresh, err := os.ReadFile("/proc/self/mountinfo")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, fresh) {
			t.Fatalf("%s: kept mountinfo\n%s\nfresh\n%s", step, got, fresh)
		}
		if has := bytes.Contains(got, []byte(" "+dir+" ")); has != wantDir {
			t.Fatalf("%s: mount at %s listed: %v, want %v", step, dir, has, wantDir)
		}
	}
	same("first read", false)
	same("unchanged", false)
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, ""); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	same("after mount", true)
	if err := unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount read-only: %v", err)
	}
	same("after remount", true)
	if got, _ := readSelfMountinfo(); !bytes.Contains(got, []byte(" "+dir+" ro,")) {
		t.Fatalf("remount read-only not seen:\n%s", got)
	}
	if err := unix.Unmount(dir, 0); err != nil {
		t.Fatalf("unmount: %v", err)
	}
	same("after unmount", false)
}

// The cgroup mounts are parsed again exactly when mountinfo's text is new,
// and a call without limits finds the same v2 mount as one with.
func TestCgroupMountsFollowMountinfo(t *testing.T) {
	a, b := cgroupMountsNow(), cgroupMountsNow()
	if fmt.Sprintf("%p", a) != fmt.Sprintf("%p", b) {
		t.Fatalf("mountinfo unchanged, but the mounts were parsed again")
	}
	if got, want := findCgroups(false).v2Mount, findCgroups(true).v2Mount; got != want {
		t.Fatalf("v2 mount without limits %q, with %q", got, want)
	}
	selfMountinfo.mu.Lock()
	if selfMountinfo.f != nil {
		selfMountinfo.drop() // as a mount change makes it read the text anew
	}
	selfMountinfo.mu.Unlock()
	if c := cgroupMountsNow(); fmt.Sprintf("%p", c) == fmt.Sprintf("%p", a) {
		t.Fatalf("mountinfo read anew, but the old parse was kept")
	}
}
