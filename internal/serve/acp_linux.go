package serve

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// DialACP connects to the ACP client listening on the unix socket at path
// (sbx serve --acp-socket), with raw system calls as Listen does (package
// net links cgo). The client must be sbx serve's own user or root
// (SO_PEERCRED), as every client of --listen: another uid's socket could
// otherwise answer the approvals.
func DialACP(path string) (*os.File, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	for {
		err = unix.Connect(fd, &unix.SockaddrUnix{Name: path})
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("connect %s: %w", path, err)
	}
	f, err := acpFile(fd)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// ACPFile takes an inherited file descriptor, a unix socket already
// connected to an ACP client (sbx serve --acp-fd). It is made
// close-on-exec, so that no sandboxed command inherits it (an inherited fd
// bypasses Landlock), and its peer is checked as DialACP's.
func ACPFile(fd int) (*os.File, error) {
	switch {
	case fd < 0:
		return nil, fmt.Errorf("fd %d: not a file descriptor", fd)
	case fd < 3:
		return nil, fmt.Errorf("fd %d: stdin, stdout and stderr are not an ACP connection", fd)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("fd %d: %w", fd, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return nil, fmt.Errorf("fd %d: not a socket", fd)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil {
		return nil, fmt.Errorf("fd %d: fcntl FD_CLOEXEC: %w", fd, err)
	}
	f, err := acpFile(fd)
	if err != nil {
		return nil, fmt.Errorf("fd %d: %w", fd, err)
	}
	return f, nil
}

// acpFile checks a connected unix stream socket's peer and makes it a
// pollable file (Close unblocks its reads).
func acpFile(fd int) (*os.File, error) {
	typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	if err != nil {
		return nil, fmt.Errorf("getsockopt SO_TYPE: %w", err)
	}
	if typ != unix.SOCK_STREAM {
		return nil, errors.New("not a stream socket")
	}
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return nil, fmt.Errorf("getsockopt SO_PEERCRED (not a unix socket?): %w", err)
	}
	if err := allowedPeer(PeerCred{PID: int(cred.Pid), UID: int(cred.Uid), GID: int(cred.Gid)}); err != nil {
		return nil, fmt.Errorf("the ACP client: %w", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		return nil, fmt.Errorf("set non-blocking: %w", err)
	}
	return os.NewFile(uintptr(fd), "sbx-acp-conn"), nil
}
