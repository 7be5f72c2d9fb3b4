package host

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// PTY is a fresh pseudo-terminal for one call: the command gets Slave as
// fds 0-2 and as its controlling terminal, sbx reads and writes Master.
type PTY struct {
	Master, Slave *os.File
	// SlavePath is the slave's device (/dev/pts/N): the one terminal the
	// sandbox lets the command open.
	SlavePath string
}

// OpenPTY opens a new pseudo-terminal of rows x cols. Both ends are
// close-on-exec; the launcher hands the slave to the command explicitly.
func OpenPTY(rows, cols uint16) (*PTY, error) {
	m, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("open /dev/ptmx: %w", err)
	}
	// Non-blocking, so the runtime poller serves reads and a Close ends them.
	master := os.NewFile(uintptr(m), "/dev/ptmx")
	if err := unix.IoctlSetPointerInt(m, unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		return nil, fmt.Errorf("unlockpt: %w", err)
	}
	// TIOCGPTPEER opens the slave through the master's own devpts mount, so
	// no path lookup can be raced to another device.
	s, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(m), unix.TIOCGPTPEER, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC)
	if errno != 0 {
		master.Close()
		return nil, fmt.Errorf("open pty slave (TIOCGPTPEER): %w", errno)
	}
	slave := os.NewFile(s, "pty-slave")
	path, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", s))
	if err == nil {
		err = SetSize(master, rows, cols)
	}
	if err != nil {
		master.Close()
		slave.Close()
		return nil, fmt.Errorf("pty slave: %w", err)
	}
	return &PTY{Master: master, Slave: slave, SlavePath: path}, nil
}

// Close closes both ends.
func (p *PTY) Close() {
	p.Master.Close()
	p.Slave.Close()
}

// SetSize sets the window size of the terminal f (master or slave); the
// command's process group gets SIGWINCH.
func SetSize(f *os.File, rows, cols uint16) error {
	if err := unix.IoctlSetWinsize(int(f.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}); err != nil {
		return fmt.Errorf("TIOCSWINSZ: %w", err)
	}
	return nil
}

// Size returns the window size of the terminal f.
func Size(f *os.File) (rows, cols uint16, err error) {
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0, 0, fmt.Errorf("TIOCGWINSZ: %w", err)
	}
	return ws.Row, ws.Col, nil
}

// FollowSize copies the window size of terminal from to terminal to each
// time resized fires (the program's SIGWINCH: the library subscribes to no
// signal, which is process-wide state), until the returned stop is called.
func FollowSize(from, to *os.File, resized <-chan struct{}) (stop func()) {
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-resized:
				if r, c, err := Size(from); err == nil {
					SetSize(to, r, c)
				}
			}
		}
	}()
	return func() { close(done) }
}

// MakeRaw puts the terminal f in raw mode (no echo, no line editing, no
// signals from keys: Ctrl-C reaches the pty as a byte) and returns the
// function that restores its previous mode.
func MakeRaw(f *os.File) (restore func(), err error) {
	fd := int(f.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, fmt.Errorf("TCGETS: %w", err)
	}
	t := *old
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB
	t.Cflag |= unix.CS8
	t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &t); err != nil {
		return nil, fmt.Errorf("TCSETS: %w", err)
	}
	return func() { unix.IoctlSetTermios(fd, unix.TCSETS, old) }, nil
}
