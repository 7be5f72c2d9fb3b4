//go:build unix

package fsop

import (
	"io/fs"
	"os"
	"syscall"
)

// keepOwner gives f (the replacement of a file) the owner and group of the
// file it replaces, so that root writing someone's file leaves it theirs.
// Best effort: a user who may not give files away keeps the new file as
// its own, as any editor that replaces by rename does.
func keepOwner(f *os.File, old fs.FileInfo) {
	st, ok := old.Sys().(*syscall.Stat_t)
	if !ok || (int(st.Uid) == os.Geteuid() && int(st.Gid) == os.Getegid()) {
		return
	}
	f.Chown(int(st.Uid), int(st.Gid))
}
