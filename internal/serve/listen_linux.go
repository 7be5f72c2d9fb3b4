package serve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/enforce/host"
)

// Listener is a listening unix socket. It is made with raw system calls,
// not package net: net links cgo, and sbx stays a static binary.
type Listener struct {
	fd   int
	path string
	once sync.Once
}

// Listen makes the unix socket at path, mode 0600 from its creation (the
// umask is narrowed around the bind: a chmod after it would leave a window
// in which anyone could connect). An existing path is refused, not
// replaced: it may be another server's socket, or not a socket at all. The
// one exception is a stale socket (see removeStale): a server killed with
// SIGKILL leaves its socket behind, and a restarted container would
// otherwise refuse to start for ever.
//
// The socket is bound under a temporary name beside path and linked to
// path only once it listens, so that path never names a socket that
// refuses connections: a client that waits for the file and then
// connects (the usual way to wait for a server) gets in at once. The link
// fails on an existing path (EEXIST), so two servers cannot take the same
// one between the check and the link.
func Listen(path string) (*Listener, error) {
	// Two servers starting at once on one path take turns: the lock keeps
	// one from removing, as stale, a socket the other has just linked.
	unlock, err := lockDir(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", path, err)
	}
	defer unlock()
	if err := removeStale(path); err != nil {
		return nil, fmt.Errorf("listen %s: %w", path, err)
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	tmp := bindName(path)
	old := syscall.Umask(0o177)
	err = unix.Bind(fd, &unix.SockaddrUnix{Name: tmp})
	syscall.Umask(old)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("bind %s: %w", tmp, err)
	}
	if err := unix.Listen(fd, 128); err != nil {
		unix.Close(fd)
		os.Remove(tmp)
		return nil, fmt.Errorf("listen %s: %w", path, err)
	}
	if tmp != path {
		err := os.Link(tmp, path)
		os.Remove(tmp)
		if err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("listen %s: %w", path, err)
		}
	}
	return &Listener{fd: fd, path: path}, nil
}

// removeStale removes path when it is a stale socket: a socket, owned by
// this user, that refuses connections (ECONNREFUSED: no process listens on
// it). Anything else that exists is refused: a live server's socket (the
// connection is accepted, or its queue is full), a socket of another user,
// a file that is not a socket.
func removeStale(path string) error {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return err
	}
	refuse := errors.New("already exists (another server's socket, or not a socket: remove it)")
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK || st.Uid != uint32(os.Geteuid()) {
		return refuse
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	err = unix.Connect(fd, &unix.SockaddrUnix{Name: path})
	unix.Close(fd)
	if !errors.Is(err, unix.ECONNREFUSED) {
		return errors.New("already exists: a server listens on it")
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("remove stale socket: %w", err)
	}
	return nil
}

// lockDir takes an exclusive flock(2) on dir, released by the function it
// returns. A directory the server may enter but not read (flock needs an
// fd opened for reading) is not locked: two servers starting at once on a
// stale socket there could then remove each other's new one, a narrower
// failure than refusing to start.
func lockDir(dir string) (func(), error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.EACCES) {
		return func() {}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	for {
		err = unix.Flock(fd, unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return func() { unix.Close(fd) }, nil
}

// bindName is the temporary name Listen binds to, beside path; path itself
// when that name would not fit a socket address (108 bytes on Linux, the
// terminating NUL included).
func bindName(path string) string {
	var b [6]byte
	rand.Read(b[:])
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+"."+hex.EncodeToString(b[:]))
	if len(tmp) >= len(unix.RawSockaddrUnix{}.Path) {
		return path
	}
	return tmp
}

// Close stops accepting (a blocked accept returns) and removes the socket.
func (l *Listener) Close() error {
	l.once.Do(func() {
		// shutdown wakes an accept blocked on another thread; close alone
		// does not.
		unix.Shutdown(l.fd, unix.SHUT_RDWR)
		unix.Close(l.fd)
		os.Remove(l.path)
	})
	return nil
}

// accept returns the next connection as a pollable file (Close unblocks
// its reads) and its peer's credentials.
func (l *Listener) accept() (*os.File, PeerCred, error) {
	for {
		fd, _, err := unix.Accept4(l.fd, unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK)
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.ECONNABORTED) {
			continue
		}
		if err != nil {
			return nil, PeerCred{}, err
		}
		cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
		if err != nil {
			unix.Close(fd)
			return nil, PeerCred{}, fmt.Errorf("getsockopt SO_PEERCRED: %w", err)
		}
		p := PeerCred{PID: int(cred.Pid), UID: int(cred.Uid), GID: int(cred.Gid)}
		if p.call, err = host.CallPeer(fd); err != nil {
			p.call = "sbx could not tell whether it is a sandboxed call (" + err.Error() + ")"
		}
		return os.NewFile(uintptr(fd), "sbx-serve-conn"), p, nil
	}
}

// PeerCred is a connected peer's credentials, as the kernel gives them
// (SO_PEERCRED: what they were at connect time).
type PeerCred struct {
	PID, UID, GID int
	// call, when not empty, says why the peer is a sandboxed call (or
	// that sbx could not tell): see host.CallPeer.
	call string
}

// allowedPeer: only the server's own uid, and root, may talk to it. Any
// other uid would run commands with the server's authority. And no
// process inside a sandbox, whatever its uid, may: the server would run
// its commands in any mode it asks for, danger-full-access included
// (DESIGN.md, invariant 6); the uid alone cannot tell, since a call runs
// as its caller.
func allowedPeer(p PeerCred) error {
	if p.UID == os.Getuid() || p.UID == 0 {
		if p.call != "" {
			return fmt.Errorf("%w: %s", errCallPeer, p.call)
		}
		return nil
	}
	err := fmt.Errorf("uid %d (pid %d) is neither the server's uid %d nor root", p.UID, p.PID, os.Getuid())
	if p.UID == overflowUID && !identityUIDMap() {
		// The unprivileged server serves from a user namespace of its own
		// that maps only its uid: every other uid, root's included, reads
		// as the overflow uid, and is refused.
		err = fmt.Errorf("%w: the server runs in a user namespace, where uids it does not map (root's among them) show as the overflow uid", err)
	}
	return err
}

// errCallPeer starts the refusal of a peer inside an sbx sandbox.
var errCallPeer = errors.New("a sandboxed call never reaches an sbx server")

// refusePeer tells a refused peer why, as a JSON-RPC error with a null id
// (the server reads none of its requests), and closes the connection: a
// client sees the reason, not an unexplained end of file. What the peer
// sends meanwhile is read and dropped for up to refuseLinger, so that a
// client that writes its first request after the refusal gets the error
// on its next read rather than EPIPE on that write.
func refusePeer(c *os.File, reason error) {
	defer c.Close()
	b, err := json.Marshal(response{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: &Error{
		Code: CodeDenied, Message: "connection refused: " + reason.Error(), Data: ErrorData{Kind: KindDenied}}})
	if err != nil {
		return
	}
	c.SetDeadline(time.Now().Add(refuseLinger))
	if _, err := c.Write(append(b, '\n')); err != nil {
		return
	}
	select {
	case lingering <- struct{}{}:
		defer func() { <-lingering }()
	default:
		return // refused peers keep no more than cap(lingering) fds open
	}
	if rc, err := c.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { unix.Shutdown(int(fd), unix.SHUT_WR) })
	}
	io.Copy(io.Discard, io.LimitReader(c, 1<<20))
}

// refuseLinger bounds how long a refused connection is kept to drain.
const refuseLinger = 2 * time.Second

// lingering bounds the refused connections kept to drain at once: a call
// that connects in a loop must not run the server out of fds (EMFILE would
// end its accept loop).
var lingering = make(chan struct{}, 16)

// overflowUID is the kernel's default /proc/sys/kernel/overflowuid.
const overflowUID = 65534

// identityUIDMap reports whether the server's uids are the host's (the
// initial user namespace's uid map).
func identityUIDMap() bool {
	b, err := os.ReadFile("/proc/self/uid_map")
	return err == nil && strings.Join(strings.Fields(string(b)), " ") == "0 0 4294967295"
}

// ServeListener accepts connections on l until ctx ends, or a client
// shut the server down and every connection has ended. Each connection's
// peer is checked first; a refused one is closed with the reason logged.
func (s *Server) ServeListener(ctx context.Context, l *Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	var mu sync.Mutex
	active := 0
	for {
		c, cred, err := l.accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("accept: %w", err)
		}
		if err := allowedPeer(cred); err != nil {
			s.Logf("refused a connection: %v", err)
			go refusePeer(c, err)
			continue
		}
		mu.Lock()
		active++
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			// The connection's end (or the server's) also unblocks its read.
			stopRead := context.AfterFunc(ctx, func() { c.Close() })
			defer stopRead()
			err := s.ServeConn(ctx, c, c)
			if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				s.Logf("connection of pid %d: %v", cred.PID, err)
			}
			mu.Lock()
			active--
			last := active == 0
			mu.Unlock()
			if last && s.ShuttingDown() {
				// Shut down and no client left: the server is done.
				cancel()
			}
		}()
	}
}
