package run

import (
	"context"
	"io"
	"os"
	"sync"

	"github.com/sbx-sandbox/sbx/internal/call"
	"github.com/sbx-sandbox/sbx/internal/enforce/host"
	"github.com/sbx-sandbox/sbx/internal/report"
	"github.com/sbx-sandbox/sbx/internal/steptrace"
	"github.com/sbx-sandbox/sbx/internal/wire"
)

// DefaultMaxOutput is the cap of each captured stream without
// max_output_bytes.
const DefaultMaxOutput = 1 << 20

// IO is what a call reads and where its output goes.
type IO struct {
	// Stdin is the text the command reads, on a pipe (then end-of-file)
	// or typed into the pty.
	Stdin string
	// Stdout and Stderr receive the output; on a pty everything the
	// terminal shows goes to Stdout (stderr merged, input echoed, lines
	// ending "\r\n") and Stderr is unused. Nil discards.
	Stdout, Stderr io.Writer
	// PTY, when set, runs the command on a fresh pty of that size.
	PTY *wire.PTYSize
	// pipes, when not nil, are the pipes made ahead for a prestarted
	// stage (Prestart); otherwise Run makes them.
	pipes *callPipes
}

// Run runs the prepared call p with stdio and returns what
// host.Run saw. The command's whole tree is killed when ctx ends (the
// report then says killed_by "signal"). p.Call's ForwardSignals and
// Cleanup are the caller's to set before.
func Run(ctx context.Context, p *call.Prepared, stdio IO) (report.Report, error) {
	rep, err := execCall(ctx, p.Call, stdio)
	// The tree is dead: what a granted .git must not keep goes now.
	rep.Denials = append(rep.Denials, p.SettleGitGrant()...)
	return rep, err
}

// Output is a call's report with its captured output.
type Output struct {
	report.Report
	Stdout, Stderr                   string
	StdoutTruncated, StderrTruncated bool
}

// Capture runs p with its output captured in capped buffers of
// maxOutput bytes each (0: DefaultMaxOutput); in's Stdout and Stderr are
// ignored.
func Capture(ctx context.Context, p *call.Prepared, maxOutput int, in IO) (Output, error) {
	if maxOutput == 0 {
		maxOutput = DefaultMaxOutput
	}
	stdout, stderr := host.NewCappedBuffer(maxOutput), host.NewCappedBuffer(maxOutput)
	in.Stdout, in.Stderr = stdout, stderr
	rep, err := Run(ctx, p, in)
	return Output{Report: rep, Stdout: stdout.String(), Stderr: stderr.String(),
		StdoutTruncated: stdout.Truncated(), StderrTruncated: stderr.Truncated()}, err
}

// Stream runs p with its output sent to sink as events, each with callID,
// nothing buffered; past maxOutput bytes per stream (0: no cap) output is
// dropped and the output says truncated. in's Stdout and Stderr are
// ignored.
func Stream(ctx context.Context, p *call.Prepared, maxOutput int, in IO, sink wire.EventSink, callID string) (Output, error) {
	var mu sync.Mutex
	stdout := &eventWriter{mu: &mu, sink: sink, stream: "stdout", callID: callID, limit: int64(maxOutput)}
	stderr := &eventWriter{mu: &mu, sink: sink, stream: "stderr", callID: callID, limit: int64(maxOutput)}
	in.Stdout, in.Stderr = stdout, stderr
	rep, err := Run(ctx, p, in)
	return Output{Report: rep, StdoutTruncated: stdout.truncated, StderrTruncated: stderr.truncated}, err
}

// Prestart makes the namespaces (or, unprivileged, the stage) r will most
// likely want while it is prepared, on pipes it puts in stdio
// (host.Prestart), when r is a call that can be guessed so and stdio has no
// pty. release
// throws away whatever the call did not use. Prestart is one slot per
// process: only a process that runs one call at a time may use it.
func Prestart(r call.Request, stdio *IO) (release func(), err error) {
	netns, ok := call.PrestartHint(r)
	if !ok || stdio.PTY != nil {
		return func() {}, nil
	}
	if stdio.pipes, err = newCallPipes(stdio.Stdin); err != nil {
		return nil, err
	}
	pipes := stdio.pipes
	host.Prestart(netns, [3]*os.File{pipes.stdin, pipes.outW, pipes.errW})
	return func() {
		host.DiscardPrestart()
		pipes.close()
	}, nil
}

// execCall runs call with its output copied to stdout and stderr and
// in.Stdin as its input, on pipes or on a pty (where stderr is merged
// into stdout).
func execCall(ctx context.Context, call host.Call, in IO) (report.Report, error) {
	stdout, stderr := orDiscard(in.Stdout), orDiscard(in.Stderr)
	if in.PTY != nil {
		return execOnPTY(ctx, call, *in.PTY, in.Stdin, stdout)
	}
	p := in.pipes
	if p == nil {
		var err error
		if p, err = newCallPipes(in.Stdin); err != nil {
			return report.Report{}, err
		}
	}
	defer p.stopStdin()
	var wg sync.WaitGroup
	for _, s := range []struct {
		r *os.File
		w io.Writer
	}{{p.outR, stdout}, {p.errR, stderr}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			copyOutput(s.w, s.r)
			s.r.Close()
		}()
	}
	call.Cmd.Stdin, call.Cmd.Stdout, call.Cmd.Stderr = p.stdin, p.outW, p.errW
	// Our copies of the write ends must go, or the readers never see EOF:
	// once the command runs (the readers then finish while Run ends the
	// call), else once Run returns.
	closeWrite := sync.OnceFunc(func() {
		p.outW.Close()
		p.errW.Close()
	})
	call.Started = closeWrite
	rep, err := host.Run(ctx, call)
	steptrace.Mark("the command runs; wait, end init and supervisor")
	closeWrite()
	drained := make(chan struct{})
	go func() { wg.Wait(); close(drained) }()
	drain(drained, p.outR, p.errR)
	steptrace.Mark("drain the output")
	return rep, err
}

// copyBuffers are copyOutput's: io.Copy from an *os.File makes a 32 KiB
// buffer for every copy, two per call, which was most of what a server
// allocated per call (and so of its garbage collections).
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// copyOutput copies r to w through a pooled buffer. Both are wrapped: the
// *os.File's WriteTo, or a ReadFrom of w's that falls back to a copy,
// would each make a buffer of their own.
func copyOutput(w io.Writer, r io.Reader) {
	buf := copyBuffers.Get().(*[]byte)
	io.CopyBuffer(struct{ io.Writer }{w}, struct{ io.Reader }{r}, *buf)
	copyBuffers.Put(buf)
}

// execOnPTY runs call on a fresh pty of size, types stdin into it and
// copies what the terminal shows to stdout: stderr is merged there, and
// the terminal echoes the input and ends lines with "\r\n".
func execOnPTY(ctx context.Context, call host.Call, size wire.PTYSize, stdin string, stdout io.Writer) (report.Report, error) {
	p, err := AttachPTY(&call, size)
	if err != nil {
		return report.Report{}, err
	}
	defer p.Close()
	// Blocks while the terminal's input queue is full; the Close ends it.
	go io.WriteString(p.Master, PTYInput(stdin))
	drained := CopyOut(p.Master, stdout)
	rep, err := host.Run(ctx, call)
	FinishPTY(p, drained)
	return rep, err
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}
