package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/sbx-sandbox/sbx/enforce"
	"github.com/sbx-sandbox/sbx/enforce/host"
	"github.com/sbx-sandbox/sbx/profiles"
)

// ptySize is the window size of a call's pseudo-terminal.
type ptySize struct{ Rows, Cols int }

var defaultPTYSize = ptySize{Rows: 24, Cols: 80}

// maxStdinBytes caps exec's "stdin" text: it is held in memory with the
// request, and a command that wants more should read a file.
const maxStdinBytes = 1 << 20

// check refuses sizes a terminal cannot have, naming the field as
// prefix+"rows" or prefix+"cols".
func (s ptySize) check(prefix string) error {
	for _, v := range []struct {
		name string
		n    int
	}{{"rows", s.Rows}, {"cols", s.Cols}} {
		if v.n < 1 || v.n > 65535 {
			return &profiles.FieldError{Field: prefix + v.name, Err: fmt.Errorf("%d is not between 1 and 65535", v.n)}
		}
	}
	return nil
}

// parsePTYSize parses --pty-size ROWSxCOLS.
func parsePTYSize(v string) (ptySize, error) {
	r, c, ok := strings.Cut(v, "x")
	rows, err1 := strconv.Atoi(r)
	cols, err2 := strconv.Atoi(c)
	if !ok || err1 != nil || err2 != nil {
		return ptySize{}, &profiles.FieldError{Field: "--pty-size", Err: fmt.Errorf("%q is not ROWSxCOLS", v)}
	}
	s := ptySize{Rows: rows, Cols: cols}
	if err := s.check(""); err != nil {
		return ptySize{}, &profiles.FieldError{Field: "--pty-size", Err: err}
	}
	return s, nil
}

// attachPTY opens a pty of size and makes its slave the command's stdio,
// controlling terminal and only openable terminal.
func attachPTY(call *host.Call, size ptySize) (*host.PTY, error) {
	p, err := host.OpenPTY(uint16(size.Rows), uint16(size.Cols))
	if err != nil {
		return nil, err
	}
	call.Cmd.Stdin, call.Cmd.Stdout, call.Cmd.Stderr = p.Slave, p.Slave, p.Slave
	call.Cmd.Terminal = true
	call.Policy.Terminal = p.SlavePath
	return p, nil
}

// ptyInput is what is typed into a pty: text, then end-of-file the way a
// person types it (Ctrl-D; twice when the last line is unfinished, since
// the first only ends the line).
func ptyInput(text string) string {
	return text + ptyEOF(text != "" && !strings.HasSuffix(text, "\n"))
}

// ptyEOF is the end-of-file a person types after a finished or an
// unfinished line.
func ptyEOF(unfinishedLine bool) string {
	if unfinishedLine {
		return "\x04\x04"
	}
	return "\x04"
}

// lastByteWriter remembers the last byte written through it.
type lastByteWriter struct {
	w    io.Writer
	last byte
	n    int64
}

func (l *lastByteWriter) Write(p []byte) (int, error) {
	n, err := l.w.Write(p)
	if n > 0 {
		l.last, l.n = p[n-1], l.n+int64(n)
	}
	return n, err
}

// runOnPTY runs call on a fresh pty, copying it both ways with sbx's own
// stdio. When sbx's stdin is a terminal, that terminal is raw for the call
// (restored before returning, signals included: sbx relays those rather
// than dying of them) and its size changes follow to the pty.
//
// IMPORTANT: a SIGKILL to sbx leaves its terminal raw (`reset` repairs it). With
// closeStdin, nothing is copied in and the command reads end-of-file.
func runOnPTY(call host.Call, size ptySize, closeStdin bool, out io.Writer) (enforce.Report, error) {
	onTerminal := host.IsTerminal(os.Stdin)
	if onTerminal {
		if r, c, err := host.Size(os.Stdin); err == nil {
			size = ptySize{Rows: int(r), Cols: int(c)}
		}
	}
	p, err := attachPTY(&call, size)
	if err != nil {
		return enforce.Report{}, err
	}
	defer p.Close()
	if onTerminal && !closeStdin {
		restore, err := host.MakeRaw(os.Stdin)
		if err != nil {
			return enforce.Report{}, err
		}
		defer restore()
		defer host.FollowSize(os.Stdin, p.Master)()
	}
	switch {
	case closeStdin:
		go io.WriteString(p.Master, ptyInput(""))
	case onTerminal:
		// Ends with sbx: a read of sbx's stdin cannot be interrupted.
		go io.Copy(p.Master, os.Stdin)
	default:
		// The end of piped input is typed as end-of-file, or a command
		// reading to the end would wait for ever.
		go func() {
			lw := &lastByteWriter{w: p.Master}
			if _, err := io.Copy(lw, os.Stdin); err == nil {
				io.WriteString(p.Master, ptyEOF(lw.n > 0 && lw.last != '\n'))
			}
		}()
	}
	drained := copyOut(p.Master, out)
	rep, err := host.Run(context.Background(), call)
	finishPTY(p, drained)
	return rep, err
}

// copyOut copies the master to w until the slave's last holder closes it
// (EIO); the channel closes when done.
func copyOut(master *os.File, w io.Writer) chan struct{} {
	done := make(chan struct{})
	go func() {
		io.Copy(w, master)
		close(done)
	}()
	return done
}

// finishPTY closes sbx's slave so the master reads to the end.
func finishPTY(p *host.PTY, drained chan struct{}) {
	p.Slave.Close()
	drain(drained, p.Master)
}

// stdinText feeds text to the command's stdin through a pipe and closes
// it: the command reads text, then end-of-file. The returned stop closes
// what is left once the command is gone.
func stdinText(text string) (*os.File, func(), error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("stdin pipe: %w", err)
	}
	var once sync.Once
	closeW := func() { once.Do(func() { w.Close() }) }
	go func() {
		// A command that exits unread makes this fail; nothing to report.
		io.WriteString(w, text)
		closeW()
	}()
	return r, func() { r.Close(); closeW() }, nil
}
