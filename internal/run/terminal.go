package run

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/sbx-sandbox/sbx/internal/enforce/host"
	"github.com/sbx-sandbox/sbx/internal/wire"
)

// AttachPTY opens a pty of size and makes its slave the command's stdio,
// controlling terminal and only openable terminal.
func AttachPTY(call *host.Call, size wire.PTYSize) (*host.PTY, error) {
	p, err := host.OpenPTY(uint16(size.Rows), uint16(size.Cols))
	if err != nil {
		return nil, err
	}
	call.Cmd.Stdin, call.Cmd.Stdout, call.Cmd.Stderr = p.Slave, p.Slave, p.Slave
	call.Cmd.Terminal = true
	call.Policy.Terminal = p.SlavePath
	return p, nil
}

// PTYInput is what is typed into a pty: text, then end-of-file the way a
// person types it (Ctrl-D; twice when the last line is unfinished, since
// the first only ends the line).
func PTYInput(text string) string {
	return text + PTYEOF(text != "" && !strings.HasSuffix(text, "\n"))
}

// PTYEOF is the end-of-file a person types after a finished or an
// unfinished line.
func PTYEOF(unfinishedLine bool) string {
	if unfinishedLine {
		return "\x04\x04"
	}
	return "\x04"
}

// CopyOut copies the master to w until the slave's last holder closes it
// (EIO); the channel closes when done.
func CopyOut(master *os.File, w io.Writer) chan struct{} {
	done := make(chan struct{})
	go func() {
		io.Copy(w, master)
		close(done)
	}()
	return done
}

// FinishPTY closes sbx's slave so the master reads to the end.
func FinishPTY(p *host.PTY, drained chan struct{}) {
	p.Slave.Close()
	drain(drained, p.Master)
}

// drain waits for the output readers to be done (done closes), or, should
// a process that escaped the group still hold the write ends, gives them a
// moment and then closes the read ends under them.
func drain(done chan struct{}, readEnds ...*os.File) {
	select {
	case <-done:
	case <-time.After(500 * time.Millisecond):
		for _, f := range readEnds {
			f.Close()
		}
		<-done
	}
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

// callPipes are a call's stdin (fed from text) and its stdout and stderr
// pipes. Made before the call is resolved, they can be a prestarted
// stage's stdio (host.Prestart).
type callPipes struct {
	stdin, outR, outW, errR, errW *os.File
	stopStdin                     func()
}

func newCallPipes(text string) (*callPipes, error) {
	stdin, stop, err := stdinText(text)
	if err != nil {
		return nil, err
	}
	p := &callPipes{stdin: stdin, stopStdin: stop}
	if p.outR, p.outW, err = os.Pipe(); err == nil {
		if p.errR, p.errW, err = os.Pipe(); err != nil {
			p.outR.Close()
			p.outW.Close()
		}
	}
	if err != nil {
		stop()
		return nil, err
	}
	return p, nil
}

// close releases whatever of the pipes the call has not.
func (p *callPipes) close() {
	p.stopStdin()
	for _, f := range []*os.File{p.outR, p.outW, p.errR, p.errW} {
		f.Close()
	}
}
