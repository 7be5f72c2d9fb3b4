//go:build linux

package linux

import (
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// selfMountinfo is sbx's own /proc/self/mountinfo, read again only when
// the kernel says the mount table changed. A server compiles a call group
// for every call without a PID namespace (danger-full-access among them),
// and reading mountinfo (the kernel formats every mount) was ~7% of such a
// call's CPU.
//
// The kernel's change notice is exact: a poll of an open mountinfo reports
// POLLPRI|POLLERR once any mount is added, removed or changed in its mount
// namespace since the file was last polled or opened (mounts_poll), so the
// text kept here is what a read now would return, up to the same race a
// read has with a mount made right after it. Nothing of a call is kept:
// the text is the host's mount table as sbx's own namespace sees it.
var selfMountinfo mountinfoWatch

// mountinfoWatch is an open mountinfo and the text last read from it.
type mountinfoWatch struct {
	mu   sync.Mutex
	f    *os.File
	text []byte
	// gen counts the reads of the text: what is derived from it (the
	// cgroup mounts) is derived again when gen has moved.
	gen uint64
}

// readSelfMountinfo returns the text of /proc/self/mountinfo (the thread
// group's mount namespace, as os.ReadFile of that path returns it).
func readSelfMountinfo() ([]byte, error) {
	text, _, err := readSelfMountinfoGen()
	return text, err
}

// readSelfMountinfoGen is readSelfMountinfo with the text's generation,
// which changes whenever the text is read anew.
func readSelfMountinfoGen() ([]byte, uint64, error) {
	m := &selfMountinfo
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.f != nil && !mountsChanged(m.f) {
		return m.text, m.gen, nil
	}
	m.gen++
	if m.f == nil {
		f, err := os.Open("/proc/self/mountinfo")
		if err != nil {
			return nil, m.gen, err
		}
		m.f = f
	} else if _, err := m.f.Seek(0, io.SeekStart); err != nil {
		m.drop()
		text, err := os.ReadFile("/proc/self/mountinfo")
		return text, m.gen, err
	}
	// Polled (or opened) before it is read: a change during the read is
	// reported by the next poll, and the text is read again then.
	text, err := io.ReadAll(m.f)
	if err != nil {
		m.drop()
		return nil, m.gen, err
	}
	m.text = text
	return text, m.gen, nil
}

// drop forgets the open file and its text; m.mu is held.
func (m *mountinfoWatch) drop() {
	m.f.Close()
	m.f, m.text = nil, nil
}

// mountsChanged polls f without waiting: true when the mount table
// changed since the last poll, or when poll cannot say (then it is read).
func mountsChanged(f *os.File) bool {
	fds := []unix.PollFd{{Fd: int32(f.Fd()), Events: unix.POLLPRI}}
	n, err := unix.Poll(fds, 0)
	if err != nil {
		return true
	}
	return n != 0 && fds[0].Revents != 0
}
