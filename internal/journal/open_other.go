//go:build !unix

package journal

import (
	"fmt"
	"os"
)

// openNoFollow opens path, refusing a symbolic link. IMPORTANT: without
// O_NOFOLLOW the check and the open are two steps, so a link swapped in
// between is followed; the state directory is the user's own (0700).
func openNoFollow(path string, flag int, perm os.FileMode) (*os.File, error) {
	if st, err := os.Lstat(path); err == nil && st.Mode()&os.ModeSymlink != 0 {
		return nil, &os.PathError{Op: "open", Path: path, Err: fmt.Errorf("a symbolic link")}
	}
	return os.OpenFile(path, flag, perm)
}

// syncDir is a no-op: Windows has no fsync of a directory (NTFS journals
// the entry with the file's own flush).
func syncDir(string) error { return nil }

// lockFile does nothing. IMPORTANT: two Writers of one session can then
// interleave their records; replay stops at the first record out of seq.
func lockFile(*os.File) error { return nil }

// CheckDir checks that dir is a directory. IMPORTANT: ownership and the
// group and others' write bits are not checked here (Windows keeps them in
// ACLs): the state directory is trusted to be the user's own.
func CheckDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: %s is not a directory", ErrUnsafeDir, dir)
	}
	return nil
}
