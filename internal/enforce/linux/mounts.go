//go:build linux

package linux

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/fspath"
)

// procReadOnly are the parts of a procfs that change the whole machine,
// not the call's processes: bind-mounted read-only over the call's procfs,
// as bubblewrap does, so that even a command that kept a capability (or a
// kernel without Landlock) cannot write sysctls or trigger SysRq.
var procReadOnly = []string{"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"}

func protectProc() error {
	for _, path := range procReadOnly {
		err := bindReadOnly(path)
		if errors.Is(err, unix.ENOENT) {
			continue // the kernel has no such entry (no CONFIG_PROC_SYSCTL, no IRQs shown)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// mountProcHere mounts a procfs on /proc from the calling process, which
// is inside the call's PID namespace (the stage, its PID 1).
func mountProcHere() error {
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount proc: %w", err)
	}
	return nil
}

// mask hides path: a directory under an empty read-only tmpfs, anything
// else under a read-only bind of /dev/null.
func mask(path string) error {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fmt.Errorf("mask %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		if err := unix.Mount("sbx-mask", path, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=0,mode=0500"); err != nil {
			return fmt.Errorf("mask %s: mount tmpfs: %w", path, err)
		}
		return nil
	}
	if err := unix.Mount("/dev/null", path, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("mask %s: bind /dev/null: %w", path, err)
	}
	if err := unix.Mount("", path, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mask %s: remount read-only: %w", path, err)
	}
	return nil
}

// readOnlyRoot confines writes to the writable roots with mounts: every
// mount outside the roots read-only, each root and the mounts at or below
// it with the flags they had (bwrap's --ro-bind / / --bind W W). The mounts
// at or below a keep path also keep theirs (the call's procfs, when a
// prestarted thread mounted it first). A mount point the caller cannot
// reach is read-only too (setattrReadOnlyRoot) or left
// (remountReadOnlyRoot: the command cannot reach it either). Any other
// failure fails the launch rather than run less confined. mountinfo is
// where the remount walk reads the calling thread's mounts.
func readOnlyRoot(writeRoots, keep []string, mountinfo string) error {
	if !forceRemount {
		done, err := setattrReadOnlyRoot(writeRoots, keep)
		if done || err != nil {
			return err
		}
	}
	return remountReadOnlyRoot(writeRoots, keep, mountinfo)
}

// forceRemount makes readOnlyRoot take the remount walk, as on a kernel
// without mount_setattr (a test runs both).
var forceRemount = false

// setattrReadOnlyRoot is readOnlyRoot in a few system calls (Linux 5.12+),
// whatever the number of mounts: a detached copy of each writable root's
// tree is taken first (open_tree: the copies keep the flags), then the
// whole tree is made read-only at once (mount_setattr with AT_RECURSIVE,
// all or nothing), then each copy is attached over its root. done is false,
// with nothing changed, when the kernel (or a container's seccomp profile)
// has no such calls: the caller walks the mounts instead. One mount
// remounted per mount point cost ~0.2 ms a call with the 20 mounts here.
func setattrReadOnlyRoot(writeRoots, keep []string) (done bool, err error) {
	if slices.Contains(writeRoots, "/") {
		// Everything stays writable. (A copy attached over "/" would not
		// be seen: lookups start at the root below it.) Nothing is
		// set-id in the call: every mount becomes nosuid.
		err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID})
		if unsupportedSyscall(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("nosuid root: mount_setattr: %w", err)
		}
		return true, nil
	}
	var trees []int
	defer func() {
		for _, fd := range trees {
			unix.Close(fd)
		}
	}()
	kept := append(slices.Clip(writeRoots), keep...)
	for _, w := range kept {
		fd, err := unix.OpenTree(unix.AT_FDCWD, w, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if err != nil {
			if len(trees) == 0 && unsupportedSyscall(err) {
				return false, nil
			}
			return false, fmt.Errorf("read-only root: copy %s: open_tree: %w", w, err)
		}
		trees = append(trees, fd)
		if len(trees) <= len(writeRoots) {
			// A writable root's copy is nosuid, all of it (issue 27 §2: a
			// set-id file there, made before the call by anyone, runs
			// without its bits inside it; no_new_privs says the same for
			// execve, this says it for the mount).
			if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID}); err != nil {
				if len(trees) == 1 && unsupportedSyscall(err) {
					return false, nil
				}
				return false, fmt.Errorf("writable root %s: nosuid: mount_setattr: %w", w, err)
			}
		}
	}
	err = unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY})
	if unsupportedSyscall(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read-only root: mount_setattr: %w", err)
	}
	for i, w := range kept {
		if err := unix.MoveMount(trees[i], "", unix.AT_FDCWD, w, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return true, fmt.Errorf("read-only root: attach the copy of %s: move_mount: %w", w, err)
		}
	}
	return true, nil
}

// unsupportedSyscall is the answer of a kernel without a system call, or of
// a seccomp profile that refuses the ones it does not know.
func unsupportedSyscall(err error) bool {
	return errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM)
}

// remountReadOnlyRoot is readOnlyRoot on kernels before 5.12: each root is
// bind-mounted onto itself (a mount of its own, writable), then every mount
// outside the roots is remounted read-only, one by one. The flags come from
// mountinfo, not statfs, so a hung network or FUSE mount is never asked.
func remountReadOnlyRoot(writeRoots, keep []string, mountinfo string) error {
	for _, w := range writeRoots {
		if err := unix.Mount(w, w, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind mount writable root %s: %w", w, err)
		}
	}
	mounts, err := mountPoints(mountinfo)
	if err != nil {
		return fmt.Errorf("read-only root: %w", err)
	}
	for _, m := range mounts {
		if fspath.CoveredBy(m.path, keep) {
			continue
		}
		remountOne := remount
		if fspath.CoveredBy(m.path, writeRoots) {
			// Writable, and nosuid (see setattrReadOnlyRoot).
			remountOne = remountNosuid
		}
		err := remountOne(m.path, m.locked)
		if errors.Is(err, unix.EACCES) || errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// mountPoint is a mount point and the flags a remount of its top mount
// must keep.
type mountPoint struct {
	path   string
	locked uintptr
}

// mountOptionFlags are the per-mount options a remount must repeat: inside
// a user namespace they are locked, and a remount without them fails.
var mountOptionFlags = map[string]uintptr{
	"nosuid": unix.MS_NOSUID, "nodev": unix.MS_NODEV, "noexec": unix.MS_NOEXEC,
	"noatime": unix.MS_NOATIME, "nodiratime": unix.MS_NODIRATIME, "relatime": unix.MS_RELATIME,
	// Not locked, but a remount that leaves it out makes the mount
	// writable: a read-only mount below a writable root stays read-only.
	"ro": unix.MS_RDONLY,
}

// threadMountinfo lists the calling thread's mounts, while /proc is a
// procfs of its PID namespace.
const threadMountinfo = "/proc/thread-self/mountinfo"

// initMountinfo lists them once the call's own procfs is on /proc (a
// prestarted launcher thread's): the thread is not in that PID namespace,
// so thread-self is not there, but its init is PID 1 there and shares the
// thread's mount namespace.
const initMountinfo = "/proc/1/mountinfo"

// mountPoints lists the mount points of a mount namespace from its
// mountinfo: the fifth field (with the kernel's octal escapes of space,
// tab, newline and backslash undone) and the sixth, the per-mount options.
// Where mounts stack, the last line is the top one, whose flags count.
func mountPoints(mountinfo string) ([]mountPoint, error) {
	b, err := os.ReadFile(mountinfo)
	if err != nil {
		return nil, err
	}
	return parseMountinfo(string(b))
}

func parseMountinfo(b string) ([]mountPoint, error) {
	var out []mountPoint
	for _, line := range strings.Split(b, "\n") {
		f := strings.Fields(line)
		if len(f) < 6 {
			continue
		}
		p, err := unescapeMountinfo(f[4])
		if err != nil {
			return nil, fmt.Errorf("read-only root: mountinfo %q: %w", line, err)
		}
		m := mountPoint{path: p}
		for _, o := range strings.Split(f[5], ",") {
			m.locked |= mountOptionFlags[o]
		}
		if i := slices.IndexFunc(out, func(x mountPoint) bool { return x.path == p }); i >= 0 {
			out[i] = m
		} else {
			out = append(out, m)
		}
	}
	return out, nil
}

func unescapeMountinfo(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+4 > len(s) {
			return "", fmt.Errorf("truncated escape %q", s[i:])
		}
		n, err := strconv.ParseUint(s[i+1:i+4], 8, 8)
		if err != nil {
			return "", fmt.Errorf("escape %q: %w", s[i:i+4], err)
		}
		b.WriteByte(byte(n))
		i += 3
	}
	return b.String(), nil
}

func bindReadOnly(path string) error {
	if err := unix.Mount(path, path, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind mount %s: %w", path, err)
	}
	return remountReadOnly(path)
}

// remountReadOnly makes the mount at path read-only.
func remountReadOnly(path string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return fmt.Errorf("statfs %s: %w", path, err)
	}
	var locked uintptr
	for _, f := range []struct{ st, ms uintptr }{
		{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if uintptr(st.Flags)&f.st != 0 {
			locked |= f.ms
		}
	}
	return remount(path, locked)
}

// remount makes the mount at path read-only, keeping its locked flags: a
// remount inside a user namespace must repeat the flags the original mount
// was locked with (nosuid, nodev, noexec, atime), or it fails.
func remount(path string, locked uintptr) error {
	if err := unix.Mount("", path, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|locked, ""); err != nil {
		return fmt.Errorf("remount %s read-only: %w", path, err)
	}
	return nil
}

// remountNosuid makes the mount at path nosuid, keeping its other flags
// (its read-only flag too: see mountOptionFlags).
func remountNosuid(path string, locked uintptr) error {
	if err := unix.Mount("", path, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_NOSUID|locked, ""); err != nil {
		return fmt.Errorf("remount %s nosuid: %w", path, err)
	}
	return nil
}
