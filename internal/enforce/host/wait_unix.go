//go:build unix

package host

import (
	"context"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/report"
)

// process is a started command, whatever the backend.
type process interface {
	Wait() (syscall.WaitStatus, syscall.Rusage, error)
	Signal(sig syscall.Signal) error
}

// waitCall waits for the command while relaying signals and enforcing the
// timeout and ctx, then kills what is left of its process group.
func waitCall(ctx context.Context, c Call, proc process, sigs *callSignals, rep *report.Report) (syscall.WaitStatus, syscall.Rusage, error) {
	var ws syscall.WaitStatus
	var ru syscall.Rusage
	var waitErr error
	wait := func() { ws, ru, waitErr = proc.Wait() }
	// A process that says when its command has exited (linux.Process)
	// is waited for here once it has: a goroutine blocked in Wait would
	// cost a wake-up more per call.
	var done <-chan struct{}
	if e, ok := proc.(interface{ Ended() <-chan struct{} }); ok {
		done = e.Ended()
	}
	if done == nil {
		d, w := make(chan struct{}), wait
		go func() {
			w()
			close(d)
		}()
		done, wait = d, nil
	}
	sigs.wait()
	sigc := sigs.relay
	pdc, parentGone, stopPD := parentDeath(sigs.pdeath)
	defer stopPD()
	ctxDone := ctx.Done()
	var timeout, grace <-chan time.Time
	if c.Timeout > 0 {
		t := time.NewTimer(c.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	// stopping starts the grace period once: SIGINT alone does not, since
	// an interactive command may handle it and go on.
	killGrace := c.killGrace()
	var graceTimer *time.Timer
	stopping := func(why string, sig syscall.Signal) {
		if rep.KilledBy == "" {
			rep.KilledBy = why
			if sig != 0 {
				rep.KilledBySignal = unix.SignalName(sig)
			}
		}
		if graceTimer == nil {
			graceTimer = time.NewTimer(killGrace)
			grace = graceTimer.C
		}
	}
	// interrupted is the last SIGINT or SIGQUIT relayed: a command that
	// ends within the grace period after it ended because of it (it may
	// have caught it and cleaned up first); one that goes on longer
	// handled it, and its end is its own.
	var interrupted struct {
		at  time.Time
		sig syscall.Signal
	}
	defer func() {
		if graceTimer != nil {
			graceTimer.Stop()
		}
	}()
	for {
		select {
		case <-done:
			if wait != nil {
				// Ends what is left of the tree, and reaps it.
				wait()
			}
			// The command is gone; take its group with it.
			proc.Signal(syscall.SIGKILL)
			if rep.KilledBy == "" && interrupted.sig != 0 && time.Since(interrupted.at) <= killGrace {
				rep.KilledBy, rep.KilledBySignal = "signal", unix.SignalName(interrupted.sig)
			}
			return ws, ru, waitErr
		case s := <-sigc:
			sig := s.(syscall.Signal)
			proc.Signal(sig)
			switch sig {
			case syscall.SIGTERM, syscall.SIGHUP:
				stopping("signal", sig)
			case syscall.SIGINT, syscall.SIGQUIT:
				interrupted.at, interrupted.sig = time.Now(), sig
			}
		case <-pdc:
			if parentGone() {
				proc.Signal(syscall.SIGTERM)
				stopping("parent-death", 0)
			}
		case <-grace:
			proc.Signal(syscall.SIGKILL)
			grace = nil
		case <-timeout:
			rep.TimedOut, rep.KilledBy = true, "timeout"
			proc.Signal(syscall.SIGKILL)
			timeout = nil
		case <-ctxDone:
			rep.KilledBy = "signal"
			proc.Signal(syscall.SIGKILL)
			ctxDone = nil
		}
	}
}

// setExit fills the report's exit status from the command's wait status:
// its own code, or 128+N when signal N ended it.
func setExit(rep *report.Report, ws syscall.WaitStatus) {
	switch {
	case ws.Exited():
		rep.ExitCode = ws.ExitStatus()
	case ws.Signaled():
		n := int(ws.Signal())
		rep.Signal = &n
		rep.SignalName = unix.SignalName(ws.Signal())
		rep.ExitCode = 128 + n
	}
}
