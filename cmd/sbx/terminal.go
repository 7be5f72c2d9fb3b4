package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/sbx-sandbox/sbx/internal/enforce/host"
	"github.com/sbx-sandbox/sbx/internal/report"
	"github.com/sbx-sandbox/sbx/internal/run"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
	"github.com/sbx-sandbox/sbx/internal/wire"
)

// ptySize is the window size of a call's pseudo-terminal.
type ptySize struct{ Rows, Cols int }

var defaultPTYSize = ptySize(wire.DefaultPTYSize)

// maxStdinBytes caps exec's "stdin" text (wire.MaxStdinBytes).
const maxStdinBytes = wire.MaxStdinBytes

// check refuses sizes a terminal cannot have, naming the field as
// prefix+"rows" or prefix+"cols".
func (s ptySize) check(prefix string) error { return wire.PTYSize(s).Check(prefix) }

// parsePTYSize parses --pty-size ROWSxCOLS.
func parsePTYSize(v string) (ptySize, error) {
	r, c, ok := strings.Cut(v, "x")
	rows, err1 := strconv.Atoi(r)
	cols, err2 := strconv.Atoi(c)
	if !ok || err1 != nil || err2 != nil {
		return ptySize{}, &strictjson.FieldError{Field: "--pty-size", Err: fmt.Errorf("%q is not ROWSxCOLS", v)}
	}
	s := ptySize{Rows: rows, Cols: cols}
	if err := s.check(""); err != nil {
		return ptySize{}, &strictjson.FieldError{Field: "--pty-size", Err: err}
	}
	return s, nil
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
func runOnPTY(call host.Call, size ptySize, closeStdin bool, out io.Writer) (report.Report, error) {
	onTerminal := host.IsTerminal(os.Stdin)
	if onTerminal {
		if r, c, err := host.Size(os.Stdin); err == nil {
			size = ptySize{Rows: int(r), Cols: int(c)}
		}
	}
	p, err := run.AttachPTY(&call, wire.PTYSize(size))
	if err != nil {
		return report.Report{}, err
	}
	defer p.Close()
	if onTerminal && !closeStdin {
		restore, err := host.MakeRaw(os.Stdin)
		if err != nil {
			return report.Report{}, err
		}
		defer restore()
		resized, stopResized := windowChanges()
		defer stopResized()
		defer host.FollowSize(os.Stdin, p.Master, resized)()
	}
	switch {
	case closeStdin:
		go io.WriteString(p.Master, run.PTYInput(""))
	case onTerminal:
		// Ends with sbx: a read of sbx's stdin cannot be interrupted.
		go io.Copy(p.Master, os.Stdin)
	default:
		// The end of piped input is typed as end-of-file, or a command
		// reading to the end would wait for ever.
		go func() {
			lw := &lastByteWriter{w: p.Master}
			if _, err := io.Copy(lw, os.Stdin); err == nil {
				io.WriteString(p.Master, run.PTYEOF(lw.n > 0 && lw.last != '\n'))
			}
		}()
	}
	drained := run.CopyOut(p.Master, out)
	rep, err := host.Run(context.Background(), call)
	run.FinishPTY(p, drained)
	return rep, err
}

// ptyInput is what is typed into a pty (run.PTYInput).
func ptyInput(text string) string { return run.PTYInput(text) }
