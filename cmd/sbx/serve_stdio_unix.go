//go:build unix

package main

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// pollableStdio returns the server's stdin and stdout as files Go's poller
// waits on, when they are pipes or sockets, and done, which closes them and
// gives the fds their flags back once the connection is served.
//
// os.Stdin and os.Stdout are not pollable (their fds were blocking when the
// program started), so the reader goroutine's read was a blocking system
// call that kept its P: the goroutine each exec request starts waited on
// that P until sysmon took it back, 0.16 ms a call (p50, a danger-full-access
// call through a durable server: 1.74 -> 1.39 ms, and 1.83 -> 1.40 ms of the
// server's CPU per call, with the hand-offs it saved) (#31). A read that
// parks its goroutine instead frees the P at once.
//
// Each is a duplicate of the fd (O_NONBLOCK is the open file's flag, shared
// with the original): closing it leaves the program's own fd open. Where
// stdin or stdout is the same file as stderr (2>&1), both stay as they
// are: sbx's log lines are written to stderr by plain, blocking writes.
func pollableStdio(in io.Reader, out io.Writer, errw io.Writer) (io.Reader, io.Writer, func()) {
	fin, ok1 := in.(*os.File)
	fout, ok2 := out.(*os.File)
	if !ok1 || !ok2 {
		return in, out, func() {}
	}
	sin, okIn := stat(fin)
	sout, okOut := stat(fout)
	if !okIn || !okOut || !pollableKind(sin) || !pollableKind(sout) {
		return in, out, func() {}
	}
	if ferr, ok := errw.(*os.File); ok {
		serr, ok := stat(ferr)
		if !ok || sameFile(sin, serr) || sameFile(sout, serr) {
			return in, out, func() {} // unknown counts as shared
		}
	}
	pin, restoreIn, err := nonblockingDup(fin)
	if err != nil {
		return in, out, func() {}
	}
	pout, restoreOut, err := nonblockingDup(fout)
	if err != nil {
		pin.Close()
		restoreIn()
		return in, out, func() {}
	}
	return pin, pout, func() {
		pin.Close()
		pout.Close()
		restoreIn()
		restoreOut()
	}
}

// rawFD is f's fd, without what f.Fd does besides (it makes a pollable
// file blocking), or -1.
func rawFD(f *os.File) int {
	fd := -1
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(u uintptr) { fd = int(u) })
	}
	return fd
}

// stat is fstat of f's fd; false when it fails.
func stat(f *os.File) (unix.Stat_t, bool) {
	var st unix.Stat_t
	return st, unix.Fstat(rawFD(f), &st) == nil
}

// pollableKind says whether st is a pipe's or a socket's: a terminal or a
// file stays as it is (a terminal left non-blocking would trouble the
// shell after sbx).
func pollableKind(st unix.Stat_t) bool {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFIFO, unix.S_IFSOCK:
		return true
	}
	return false
}

// sameFile says whether a and b are the same file (a pipe's two ends are).
func sameFile(a, b unix.Stat_t) bool { return a.Dev == b.Dev && a.Ino == b.Ino }

// nonblockingDup duplicates f's fd, makes the open file non-blocking and
// returns the duplicate as a pollable file, and restore, which gives the
// open file its flags back.
func nonblockingDup(f *os.File) (*os.File, func(), error) {
	fd := rawFD(f)
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return nil, nil, err
	}
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return nil, nil, err
	}
	if _, err := unix.FcntlInt(uintptr(dup), unix.F_SETFL, flags|unix.O_NONBLOCK); err != nil {
		unix.Close(dup)
		return nil, nil, err
	}
	// NewFile makes a non-blocking fd pollable.
	return os.NewFile(uintptr(dup), f.Name()), func() { unix.FcntlInt(uintptr(fd), unix.F_SETFL, flags) }, nil
}
