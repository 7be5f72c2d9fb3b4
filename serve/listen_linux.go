package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Listen makes the unix socket at path, mode 0600 from its creation (the
// umask is narrowed around the bind: a chmod after it would leave a window
// in which anyone could connect). An existing path is refused, not
// replaced: it may be another server's socket, or not a socket at all.
func Listen(path string) (*net.UnixListener, error) {
	if _, err := os.Lstat(path); err == nil {
		return nil, fmt.Errorf("listen %s: already exists (another server's socket, or a stale one: remove it)", path)
	}
	old := syscall.Umask(0o177)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", path, err)
	}
	l.SetUnlinkOnClose(true)
	return l, nil
}

// PeerCred is a connected peer's credentials, as the kernel gives them
// (SO_PEERCRED: what they were at connect time).
type PeerCred struct{ PID, UID, GID int }

// peerCred reads SO_PEERCRED of c.
func peerCred(c *net.UnixConn) (PeerCred, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return PeerCred{}, err
	}
	var cred *unix.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return PeerCred{}, err
	}
	if serr != nil {
		return PeerCred{}, fmt.Errorf("getsockopt SO_PEERCRED: %w", serr)
	}
	return PeerCred{PID: int(cred.Pid), UID: int(cred.Uid), GID: int(cred.Gid)}, nil
}

// allowedPeer: only the server's own uid, and root, may talk to it. Any
// other uid would run commands with the server's authority.
func allowedPeer(p PeerCred) error {
	if p.UID == os.Getuid() || p.UID == 0 {
		return nil
	}
	return fmt.Errorf("uid %d (pid %d) is neither the server's uid %d nor root", p.UID, p.PID, os.Getuid())
}

// ServeListener accepts connections on l until ctx ends or a client
// shuts the server down and every connection has ended. Each connection's
// peer is checked first; a refused one is closed with the reason logged.
func (s *Server) ServeListener(ctx context.Context, l *net.UnixListener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	active := 0
	var mu sync.Mutex
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("accept: %w", err)
		}
		cred, err := peerCred(c)
		if err == nil {
			err = allowedPeer(cred)
		}
		if err != nil {
			s.Logf("refused a connection: %v", err)
			c.Close()
			continue
		}
		mu.Lock()
		active++
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			err := s.ServeConn(ctx, c, c)
			if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
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
