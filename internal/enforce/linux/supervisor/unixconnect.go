//go:build linux

package supervisor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/enforce/linux/seccomp"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// Pathname unix sockets with the network off. Landlock ABI 9
// (LANDLOCK_ACCESS_FS_RESOLVE_UNIX) makes a socket outside the writable
// roots unreachable; below it nothing in the kernel does, so the supervisor
// does, and race-free: it never lets the kernel re-read an address it has
// checked. For a connect (or a datagram sent to an address) it takes the
// task's socket itself (pidfd_getfd), resolves the path it read once inside
// the task's root (openat2 RESOLVE_IN_ROOT from /proc/TID/root, so the
// task's mount namespace, masks included, and never sbx's), holds the
// socket's inode by an O_PATH fd, checks by inode that it lies under a
// writable root, and connects the task's socket to "/proc/self/fd/N" of
// that fd: what another thread writes into the sockaddr afterwards, or
// which symlink it swaps, changes nothing. The notification is answered
// with the operation's own result (0, bytes sent or -errno), never
// CONTINUE.
//
// Side effects, measured (TestUnixConnectSupervised): the server's
// SO_PEERCRED names sbx's process (pid 0 from inside the call's PID
// namespace, which does not contain sbx; sbx's pid outside), with the same
// uid and gid as the command's. Where sbx runs as root, the operation runs
// on a thread whose effective capabilities are the command's (none unless
// --cap-add), so file permissions apply as they would to the command.
// Before it connects a stream or seqpacket socket, the supervisor binds it
// to an abstract address "@sbx-call/RANDOM", by which sbx servers refuse
// it (markCallSocket in callpeer.go).
//
// IMPORTANT: what stays open, where the supervisor runs:
//   - without a private network namespace (no user namespaces) and with
//     Landlock's abstract-socket scope (ABI 6-8), a connect to an abstract
//     address continues, because only the kernel can apply the scope; a
//     thread that rewrites the sockaddr to a path after the check reaches
//     that path;
//     the same holds for a sendto, sendmsg or sendmmsg to an abstract
//     address there.
//
// Every sendmsg and sendmmsg, with a destination or not, is carried out
// too (sendmsg.go); a sendto without one is not notified (its address is
// a register no thread can fill afterwards).

// sunPathLen is sizeof(struct sockaddr_un.sun_path).
const sunPathLen = 108

// sockaddrCopy is a socket address read once from the task.
type sockaddrCopy struct {
	raw []byte
	// unixPath is the path of an AF_UNIX pathname address, "" otherwise;
	// abstract says it is an abstract one.
	unixPath string
	abstract bool
}

func (a sockaddrCopy) family() uint16 {
	if len(a.raw) < 2 {
		return unix.AF_UNSPEC
	}
	return binary.LittleEndian.Uint16(a.raw)
}

// readSockaddr copies n bytes of the address at p from the task; ok is
// false when they cannot be read. An address longer than any sockaddr is
// EINVAL for the kernel: raw is then nil and the call fails by itself.
func readSockaddr(tid int, p, n uint64) (sockaddrCopy, bool) {
	if n > unix.SizeofSockaddrAny {
		return sockaddrCopy{}, true
	}
	a := sockaddrCopy{raw: make([]byte, n)}
	if !readFull(tid, p, a.raw) {
		return sockaddrCopy{}, false
	}
	if a.family() == unix.AF_UNIX && n > 2 {
		name := a.raw[2:min(n, 2+sunPathLen)]
		if name[0] == 0 {
			a.abstract = true
		} else {
			// The kernel ends the path at the first NUL or at addrlen.
			a.unixPath = string(name)
			if i := strings.IndexByte(a.unixPath, 0); i >= 0 {
				a.unixPath = a.unixPath[:i]
			}
		}
	}
	return a, true
}

// taskSocket is what the supervisor holds of a task for one operation: its
// socket and its root, both opened while the notification was live.
type taskSocket struct {
	tid    int
	pidfd  int    // the task's (its thread's, from Linux 6.9)
	sock   int    // the task's socket, shared with it (pidfd_getfd)
	root   int    // O_PATH fd of /proc/TID/root: the task's root in its mount namespace
	cwd    string // the task's cwd as it names it, for a relative path
	domain int    // SO_DOMAIN of sock, -1 when it is no socket
	sotype int    // SO_TYPE of sock
}

func (t *taskSocket) close() {
	for _, fd := range []int{t.sock, t.root, t.pidfd} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// takeSocket takes the socket of c's fd argument (its first) for op and,
// for the address a when one is given, the task's root too (see
// openTaskSocket); when it cannot, t is nil and d answers the call: the
// call's own failure (EBADF), or a refusal of what sbx could not see.
func (s *Supervisor) takeSocket(c call, op string, a *sockaddrCopy) (t *taskSocket, d decision) {
	var errno syscall.Errno
	var blind, path string
	if a == nil {
		t, errno, blind = openTaskSock(c.tid, c.fd(0))
	} else {
		path = a.unixPath
		t, errno, blind = openTaskSocket(c.tid, c.fd(0), a.unixPath != "" && !filepath.IsAbs(a.unixPath))
	}
	switch {
	case errno != 0:
		return nil, decision{errno: errno}
	case blind != "":
		return nil, s.blind(c, op, path, blind)
	}
	return t, decision{}
}

// openTaskSocket takes fd of the task tid and its root. errno is the
// call's own failure (EBADF); blind, why sbx could not.
func openTaskSocket(tid int, fd int32, relative bool) (t *taskSocket, errno syscall.Errno, blind string) {
	if t, errno, blind = openTaskSock(tid, fd); t == nil {
		return nil, errno, blind
	}
	if blind = t.openRoot(relative); blind != "" {
		t.close()
		return nil, 0, blind
	}
	return t, 0, ""
}

// openTaskSock takes fd of the task tid, without its root (openRoot).
func openTaskSock(tid int, fd int32) (t *taskSocket, errno syscall.Errno, blind string) {
	pidfd, err := unix.PidfdOpen(tid, unix.PIDFD_THREAD)
	if errors.Is(err, unix.EINVAL) {
		// Before Linux 6.9 only a thread-group leader has a pidfd; the
		// fd table is the process's (threads made without CLONE_FILES
		// are rare, and the inode check in take catches them).
		v := newTaskView(tid)
		pidfd, err = unix.PidfdOpen(v.threadGroup(), 0)
	}
	if err != nil {
		return nil, 0, fmt.Sprintf("pidfd_open %d: %v", tid, err)
	}
	t = &taskSocket{tid: tid, pidfd: pidfd, sock: -1, root: -1, domain: -1, sotype: -1}
	if t.sock, errno, blind = t.take(fd); t.sock < 0 {
		t.close()
		return nil, errno, blind
	}
	var st unix.Stat_t
	if unix.Fstat(t.sock, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFSOCK {
		if t.domain, err = unix.GetsockoptInt(t.sock, unix.SOL_SOCKET, unix.SO_DOMAIN); err == nil {
			t.sotype, err = unix.GetsockoptInt(t.sock, unix.SOL_SOCKET, unix.SO_TYPE)
		}
		if err != nil {
			t.close()
			return nil, 0, fmt.Sprintf("getsockopt SO_DOMAIN, SO_TYPE: %v", err)
		}
	}
	return t, 0, ""
}

// take copies fd of the task into sbx, checking by inode that it is the
// one the task's process holds. errno is EBADF for an fd the task does not
// have; blind, why sbx could not.
func (t *taskSocket) take(fd int32) (int, syscall.Errno, string) {
	got, err := unix.PidfdGetfd(t.pidfd, int(fd), 0)
	if err != nil {
		if errors.Is(err, unix.EBADF) {
			return -1, unix.EBADF, ""
		}
		return -1, 0, fmt.Sprintf("pidfd_getfd %d: %v", fd, err)
	}
	var mine, theirs unix.Stat_t
	if unix.Fstat(got, &mine) != nil || unix.Stat(fmt.Sprintf("/proc/%d/fd/%d", t.tid, fd), &theirs) != nil ||
		mine.Dev != theirs.Dev || mine.Ino != theirs.Ino {
		unix.Close(got)
		return -1, 0, fmt.Sprintf("fd %d of the thread is not the one its process holds", fd)
	}
	return got, 0, ""
}

// openRoot opens the task's root, and with relative its cwd; it returns
// why it could not, or "".
func (t *taskSocket) openRoot(relative bool) string {
	root, err := unix.Open(fmt.Sprintf("/proc/%d/root", t.tid), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Sprintf("the task's root: %v", err)
	}
	t.root = root
	if relative {
		cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", t.tid))
		if err != nil || !filepath.IsAbs(cwd) || strings.HasSuffix(cwd, " (deleted)") {
			return fmt.Sprintf("the task's cwd is %q (%v)", cwd, err)
		}
		t.cwd = cwd
	}
	return ""
}

// socketInode is a pathname socket resolved for a task: an O_PATH fd of
// what the path names and of its directory, and where that is.
type socketInode struct {
	obj, dir int
	path     string // as the task names it, for the report
	mode     uint32
}

func (si *socketInode) close() {
	unix.Close(si.obj)
	unix.Close(si.dir)
}

// errBlind marks a resolution the supervisor could not see through.
type errBlind struct{ what string }

func (e errBlind) Error() string { return e.what }

// resolveSocket opens what the kernel's lookup of path (absolute, as the
// task names it) reaches for a connect: symlinks followed, the last one
// too, each step inside the task's root. An error is the errno the lookup
// fails with, or errBlind.
func resolveSocket(root int, path string) (*socketInode, error) {
	const inRoot = unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS
	for links := 0; ; links++ {
		if links > maxSymlinks {
			return nil, unix.ELOOP
		}
		i := strings.LastIndexByte(path, '/')
		dirPart, base := path[:i+1], path[i+1:]
		if base == "" || base == "." || base == ".." {
			dirPart, base = path, "."
		}
		dir, err := unix.Openat2(root, dirPart, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: inRoot})
		if err != nil {
			if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
				// A magic link (/proc/self/fd/N) the kernel would follow,
				// or a loop: sbx cannot tell which.
				return nil, errBlind{fmt.Sprintf("resolving %s: %v (a /proc magic link is not followed)", dirPart, err)}
			}
			return nil, err
		}
		obj, err := unix.Openat(dir, base, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			unix.Close(dir)
			return nil, err
		}
		var st unix.Stat_t
		if err := unix.Fstat(obj, &st); err != nil {
			unix.Close(obj)
			unix.Close(dir)
			return nil, errBlind{fmt.Sprintf("fstat %s: %v", path, err)}
		}
		if st.Mode&unix.S_IFMT != unix.S_IFLNK {
			si := &socketInode{obj: obj, dir: dir, mode: st.Mode, path: filepath.Clean(path)}
			if p, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", dir)); err == nil && filepath.IsAbs(p) {
				si.path = filepath.Join(p, base)
			}
			return si, nil
		}
		buf := make([]byte, pathMax)
		n, err := unix.Readlinkat(obj, "", buf)
		unix.Close(obj)
		unix.Close(dir)
		if err != nil || n == 0 {
			return nil, errBlind{fmt.Sprintf("readlink %s: %v", path, err)}
		}
		target := string(buf[:n])
		if !strings.HasPrefix(target, "/") {
			target = dirPart + target
		}
		path = target
	}
}

// underWriteRoot reports whether si lies under a writable root, by inode:
// the object itself or a directory above it, walked up with ".." (across
// mounts, as Landlock walks) until the task's root. This is where
// Landlock ABI 9 would look for RESOLVE_UNIX, which the plan grants on the
// write roots.
func (s *Supervisor) underWriteRoot(t *taskSocket, si *socketInode) (bool, error) {
	var st, rootSt unix.Stat_t
	if err := unix.Fstat(t.root, &rootSt); err != nil {
		return false, err
	}
	if unix.Fstat(si.obj, &st) == nil && s.roots[DevIno{st.Dev, st.Ino}] {
		return true, nil
	}
	cur, err := unix.Dup(si.dir)
	if err != nil {
		return false, err
	}
	defer func() { unix.Close(cur) }()
	for range pathMax {
		if err := unix.Fstat(cur, &st); err != nil {
			return false, err
		}
		if s.roots[DevIno{st.Dev, st.Ino}] {
			return true, nil
		}
		if st.Dev == rootSt.Dev && st.Ino == rootSt.Ino {
			return false, nil
		}
		up, err := unix.Openat(cur, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return false, err
		}
		var upSt unix.Stat_t
		if err := unix.Fstat(up, &upSt); err != nil || (upSt.Dev == st.Dev && upSt.Ino == st.Ino) {
			unix.Close(up)
			return false, err // the top of the mount tree
		}
		unix.Close(cur)
		cur = up
	}
	return false, errors.New("too deep")
}

// unixOutsideReason is the denial's reason for a socket outside the roots.
const unixOutsideReason = "a unix socket outside the writable roots is not reachable with the network off"

// unixTarget resolves the pathname address a for the operation op of c on
// t, and decides: a socket outside the writable roots is refused; the
// O_PATH fd of one inside is returned for the caller to reach it through.
func (s *Supervisor) unixTarget(c call, op string, t *taskSocket, a sockaddrCopy) (*socketInode, *outcome) {
	path := a.unixPath
	if !filepath.IsAbs(path) {
		path = t.cwd + "/" + path
	}
	si, err := resolveSocket(t.root, path)
	if err != nil {
		var b errBlind
		if errors.As(err, &b) {
			d := s.blind(c, op, path, b.what)
			return nil, &outcome{errno: d.errno, denials: d.denials}
		}
		var errno syscall.Errno
		if !errors.As(err, &errno) {
			errno = unix.EACCES
		}
		return nil, &outcome{errno: errno} // ENOENT, ENOTDIR, EACCES: the kernel's answer
	}
	if si.mode&unix.S_IFMT != unix.S_IFSOCK {
		si.close()
		return nil, &outcome{errno: unix.ECONNREFUSED} // what connect says of a file that is no socket
	}
	inside, err := s.underWriteRoot(t, si)
	if err != nil {
		si.close()
		d := s.blind(c, op, si.path, "walking up from "+si.path+": "+err.Error())
		return nil, &outcome{errno: d.errno, denials: d.denials}
	}
	if !inside {
		si.close()
		d := s.refuse(unix.EACCES, report.Denial{Operation: op, Path: si.path, Syscall: c.name, PID: c.tid,
			Address: &report.Address{Family: "unix", Address: a.unixPath}, Reason: unixOutsideReason})
		return nil, &outcome{errno: d.errno, denials: d.denials}
	}
	if s.in.LandlockUnix {
		si.close()
		return nil, &outcome{cont: true} // Landlock ABI 9 applies the same rule, in the kernel
	}
	return si, nil
}

// procSockaddr is the address of the inode held by fd, through the
// supervisor's own /proc: short enough for sun_path whatever the path.
func procSockaddr(fd int) []byte {
	name := fmt.Sprintf("/proc/self/fd/%d", fd)
	b := make([]byte, 2+len(name)+1)
	binary.LittleEndian.PutUint16(b, unix.AF_UNIX)
	copy(b[2:], name)
	return b
}

// unixConnect decides a connect on a network-off plan by carrying it out
// (see the top of this file). A socket that is not AF_UNIX with an address
// that is not AF_UNIX goes to network: the private namespace is its wall.
func (s *Supervisor) unixConnect(c call) decision {
	a, ok := readSockaddr(c.tid, c.args[1], c.args[2])
	if !ok {
		return s.blind(c, "connect", "", "cannot read the socket address from the task's memory")
	}
	if a.abstract && s.in.AbstractScoped {
		return cont // IMPORTANT: see the top of this file
	}
	t, d := s.takeSocket(c, "connect", &a)
	if t == nil {
		return d
	}
	var pre decision
	if t.domain != unix.AF_UNIX && a.family() != unix.AF_UNIX && s.in.Sockets == seccomp.SocketsLoopbackNetns {
		// An inet connect inside the private namespace: decided as ever,
		// then carried out too, so that neither a racing dup2 nor a
		// rewritten address turns it into a unix connect after the check.
		if pre = s.network(c); pre.errno != 0 {
			t.close()
			return pre
		}
	}
	target := ""
	mark := func(si *socketInode) *outcome {
		target = si.path
		return s.markCallSocket(c, t, si)
	}
	return decision{op: s.performAt(c, "connect", t, a, mark, func(addr []byte) outcome {
		out := outcome{errno: rawSockaddrCall(unix.SYS_CONNECT, t.sock, addr), denials: pre.denials}
		if out.errno == 0 && target != "" {
			out.denials = append(out.denials, s.controlPlaneDenial(c, t.sock, target)...)
		}
		return out
	})}
}

// maxDatagram bounds what the supervisor copies of a datagram it sends for
// the task: more than any AF_UNIX socket buffer allows (EMSGSIZE beyond).
const maxDatagram = 4 << 20

// unixSend decides a sendto or sendmsg to the address a on a network-off
// plan by carrying it out with the data copied from the task: data is read
// from iov (pairs of base, len) once. control says the message has
// ancillary data, which sbx cannot carry.
//
// pre is the decision send made of an inet address (continue, perhaps
// with a report): a datagram on an inet socket is carried out too, so
// that neither a racing dup2 nor a rewritten address turns it into one to
// a unix path after the check, except with ancillary data (UDP GSO,
// IP_PKTINFO), which continues.
func (s *Supervisor) unixSend(c call, a sockaddrCopy, iov []remoteIovec, flags int, control bool, pre decision) decision {
	if a.abstract && s.in.AbstractScoped {
		return pre // IMPORTANT: see the top of this file
	}
	t, d := s.takeSocket(c, "send", &a)
	if t == nil {
		return d
	}
	if control && (t.domain != unix.AF_UNIX || a.unixPath == "") {
		t.close()
		return pre // IMPORTANT: see the top of this file
	}
	var total uint64
	for _, v := range iov {
		total += v.len
	}
	if total > maxDatagram {
		t.close()
		return decision{errno: unix.EMSGSIZE}
	}
	data := make([]byte, total)
	off := 0
	for _, v := range iov {
		if v.len > 0 && !readFull(c.tid, v.base, data[off:off+int(v.len)]) {
			t.close()
			return decision{errno: unix.EFAULT}
		}
		off += int(v.len)
	}
	var refuse func(si *socketInode) *outcome
	if control {
		refuse = func(si *socketInode) *outcome {
			d := s.blind(c, "send", si.path, "the message has ancillary data, which the supervisor cannot send for the task")
			return &outcome{errno: d.errno, denials: d.denials}
		}
	}
	return decision{op: s.performAt(c, "send", t, a, refuse, func(addr []byte) outcome {
		return sendData(t.sock, data, flags, addr, pre)
	})}
}

// sendData sends data to addr on sock, the task's socket.
func sendData(sock int, data []byte, flags int, addr []byte, pre decision) outcome {
	{
		var p, dp unsafe.Pointer
		if len(addr) > 0 {
			p = unsafe.Pointer(&addr[0])
		}
		if len(data) > 0 {
			dp = unsafe.Pointer(&data[0])
		}
		for {
			n, _, errno := unix.Syscall6(unix.SYS_SENDTO, uintptr(sock), uintptr(dp), uintptr(len(data)),
				uintptr(flags), uintptr(p), uintptr(len(addr)))
			runtime.KeepAlive(addr)
			runtime.KeepAlive(data)
			if errno == unix.EINTR {
				continue
			}
			return outcome{val: int64(n), errno: errno, denials: pre.denials}
		}
	}
}

// remoteIovec is an iovec of the task's: an address in its memory.
type remoteIovec struct{ base, len uint64 }

// readIovecs copies the task's iovec array of n entries at p.
func readIovecs(tid int, p, n uint64) ([]remoteIovec, bool) {
	if n > 1024 { // UIO_MAXIOV
		return nil, false
	}
	buf := make([]byte, n*16)
	if !readFull(tid, p, buf) {
		return nil, false
	}
	iov := make([]remoteIovec, n)
	for i := range iov {
		iov[i] = remoteIovec{binary.LittleEndian.Uint64(buf[i*16:]), binary.LittleEndian.Uint64(buf[i*16+8:])}
	}
	return iov, true
}
