//go:build linux

package linux

import (
	"io"
	"os"
	"slices"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// selfMountinfo is sbx's own /proc/self/mountinfo, read again only when
// the kernel says the mount table changed. A server compiles a call group
// for every call without a PID namespace (danger-full-access among them),
// and reading mountinfo (the kernel formats every mount) was ~7% of such a
// call's CPU.
//
// Two signals say the table changed, and either one makes it read again:
//   - a poll of the open mountinfo reports POLLPRI|POLLERR when the mount
//     namespace's event number differs from the one seen at the last poll
//     (mounts_poll). That number is taken from a counter the whole kernel
//     shares, bumped without atomics under each namespace's own lock, so
//     under mount activity in other namespaces (every sandboxed call makes
//     some) it can come back to the value last seen: measured here on 6.18,
//     about 1 unmount in 100 went unnoticed by poll alone, never later.
//   - the list of the namespace's mount IDs (listmount, Linux 6.8), which
//     are never reused, differs from the one kept with the text: every mount
//     added or removed is seen.
//
// IMPORTANT: a remount (the same mount, new options) changes no ID and is
// seen by poll only. What is derived from the text, the cgroup mounts
// (cgroup.go), reads their types, points and controllers, which a remount
// does not change. Without listmount (before 6.8) the text is read every
// time. Nothing of a call is kept: the text is the host's mount table as
// sbx's own namespace sees it.
var selfMountinfo mountinfoWatch

// mountinfoWatch is an open mountinfo and the text last read from it.
type mountinfoWatch struct {
	mu   sync.Mutex
	f    *os.File
	text []byte
	ids  []uint64 // the mount IDs listmount gave when text was read
	// scratch is the buffer the next listing goes to, swapped with ids.
	scratch []uint64
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
	ids, idsOK := listMountIDs(m.scratch[:0])
	m.scratch = ids
	if m.f != nil && idsOK && !mountsChanged(m.f) && slices.Equal(ids, m.ids) {
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
	// The IDs were listed before the text was read: a mount in between
	// makes the next listing differ, and the text is read again then.
	if idsOK {
		m.ids, m.scratch = ids, m.ids
	} else {
		m.ids = nil
	}
	return text, m.gen, nil
}

// drop forgets the open file and its text; m.mu is held.
func (m *mountinfoWatch) drop() {
	m.f.Close()
	m.f, m.text, m.ids = nil, nil, nil
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

// mntIDReq is struct mnt_id_req (linux/mount.h), its first version.
type mntIDReq struct {
	size  uint32
	spare uint32
	mntID uint64
	param uint64
}

// lsmtRoot lists the mounts of the caller's whole namespace (LSMT_ROOT).
const lsmtRoot = ^uint64(0)

// listMountIDs appends to buf the IDs of every mount of sbx's mount
// namespace, in the kernel's order; false when listmount is missing
// (before Linux 6.8) or fails, and then the text is read every time.
func listMountIDs(buf []uint64) ([]uint64, bool) {
	var chunk [128]uint64
	req := mntIDReq{size: unix.MNT_ID_REQ_SIZE_VER0, mntID: lsmtRoot}
	for {
		n, _, errno := unix.Syscall6(unix.SYS_LISTMOUNT, uintptr(unsafe.Pointer(&req)),
			uintptr(unsafe.Pointer(&chunk[0])), uintptr(len(chunk)), 0, 0, 0)
		if errno != 0 {
			return nil, false
		}
		buf = append(buf, chunk[:n]...)
		if int(n) < len(chunk) {
			return buf, true
		}
		// A full chunk: go on after its last ID (param is the ID the
		// listing continues after).
		req.param = chunk[n-1]
	}
}
