//go:build windows

package host

import (
	"context"
	"os"
	"syscall"
	"time"

	"github.com/sbx-sandbox/sbx/internal/enforce/windows"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// relayedSignals subscribes to Ctrl-C/Ctrl-Break (os.Interrupt) and console
// close, logoff and shutdown (SIGTERM) when c asks for it, through the
// program's Notifier (none installed: nothing is relayed). Call it before
// the start, so an interrupt between start and wait is relayed.
func relayedSignals(c Call) (chan os.Signal, func()) {
	n := installedNotifier()
	if !c.ForwardSignals || n == nil {
		return nil, func() {}
	}
	sigc := make(chan os.Signal, 4)
	n.Notify(sigc, os.Interrupt, syscall.SIGTERM)
	return sigc, func() { n.Stop(sigc) }
}

// waitCall waits for the command while relaying interrupts and enforcing the
// timeout and ctx, then kills what is left of its job.
func waitCall(ctx context.Context, c Call, proc *windows.Process, sigc chan os.Signal, rep *report.Report) (uint32, error) {
	done := make(chan struct{})
	var code uint32
	var waitErr error
	go func() {
		code, waitErr = proc.Wait()
		close(done)
	}()
	ctxDone := ctx.Done()
	var timeout <-chan time.Time
	if c.Timeout > 0 {
		t := time.NewTimer(c.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	// interrupted is when the last Ctrl-C/Ctrl-Break was relayed: a command
	// that ends within the kill grace after it ended because of it.
	var interrupted time.Time
	for {
		select {
		case <-done:
			// The command is gone; take the rest of its job with it.
			proc.Kill()
			if rep.KilledBy == "" && !interrupted.IsZero() && time.Since(interrupted) <= c.killGrace() {
				rep.KilledBy, rep.KilledBySignal = "signal", "SIGINT"
			}
			return code, waitErr
		case s := <-sigc:
			if s == os.Interrupt {
				proc.Interrupt()
				interrupted = time.Now()
			} else {
				// A console close, logoff or shutdown leaves no time
				// to wait out a grace period: the job is killed now.
				if rep.KilledBy == "" {
					rep.KilledBy, rep.KilledBySignal = "signal", "SIGTERM"
				}
				proc.Kill()
			}
		case <-timeout:
			rep.TimedOut, rep.KilledBy = true, "timeout"
			proc.Kill()
			timeout = nil
		case <-ctxDone:
			rep.KilledBy = "signal"
			proc.Kill()
			ctxDone = nil
		}
	}
}
