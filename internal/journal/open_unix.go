//go:build unix

package journal

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// openNoFollow opens path, refusing a symbolic link in its last component
// (ELOOP): a log is never written through a link someone planted.
func openNoFollow(path string, flag int, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, perm)
}

// syncDir makes dir's entries (a created file's name) durable: fsync of the
// file covers its data, not the directory entry that names it.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// lockFile takes f's exclusive flock without waiting. The lock belongs to
// the open file, so the kernel drops it when the writer's process dies.
func lockFile(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return fmt.Errorf("%w: another Writer (this process or another sbx serve) has the log open", ErrLocked)
	}
	if err != nil {
		return fmt.Errorf("flock: %w", err)
	}
	return nil
}

// CheckDir refuses a state directory that someone other than this
// process's user could change, as ssh refuses ~/.ssh: one not owned by the
// effective uid, or writable by its group or by others. The logs there
// hold grants that a restarted server replays, so whoever may write them
// grants permissions. dir is followed if it is a symbolic link: the
// directory itself is what is checked.
func CheckDir(dir string) error {
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return &os.PathError{Op: "stat", Path: dir, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return fmt.Errorf("%w: %s is not a directory", ErrUnsafeDir, dir)
	}
	if uid := os.Geteuid(); int(st.Uid) != uid {
		return fmt.Errorf("%w: %s is owned by uid %d, not by this server's uid %d (its logs hold grants a restarted server replays)", ErrUnsafeDir, dir, st.Uid, uid)
	}
	if perm := os.FileMode(st.Mode).Perm(); perm&0o022 != 0 {
		return fmt.Errorf("%w: %s has mode %#o: writable by its group or others, who could plant grants a restarted server replays (chmod go-w %s)", ErrUnsafeDir, dir, perm, dir)
	}
	return nil
}
