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
