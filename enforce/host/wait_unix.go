//go:build unix

package host

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"sbx/enforce"
)

// process is a started command, whatever the backend.
type process interface {
	Wait() (syscall.WaitStatus, syscall.Rusage, error)
	Signal(sig syscall.Signal) error
}

// relayedSignals subscribes to the signals a person at a terminal sends
// (when c asks for it). Call it before the start, so a Ctrl-C between start
// and wait is relayed rather than killing sbx and orphaning the command.
func relayedSignals(c Call) (chan os.Signal, func()) {
	if !c.ForwardSignals {
		return nil, func() {}
	}
	sigc := make(chan os.Signal, 4)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	return sigc, func() { signal.Stop(sigc) }
}

// killGrace is how long a command told to stop (SIGTERM or SIGHUP relayed,
// or sbx's parent gone) has to exit before its tree is killed.
const killGrace = 2 * time.Second

// waitCall waits for the command while relaying signals and enforcing the
// timeout and ctx, then kills what is left of its process group.
func waitCall(ctx context.Context, c Call, proc process, sigc chan os.Signal, rep *enforce.Report) (syscall.WaitStatus, syscall.Rusage, error) {
	done := make(chan struct{})
	var ws syscall.WaitStatus
	var ru syscall.Rusage
	var waitErr error
	go func() {
		ws, ru, waitErr = proc.Wait()
		close(done)
	}()
	pdc, parentGone, stopPD := parentDeath()
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
	var graceTimer *time.Timer
	stopping := func(why string) {
		if rep.KilledBy == "" {
			rep.KilledBy = why
		}
		if graceTimer == nil {
			graceTimer = time.NewTimer(killGrace)
			grace = graceTimer.C
		}
	}
	defer func() {
		if graceTimer != nil {
			graceTimer.Stop()
		}
	}()
	for {
		select {
		case <-done:
			// The command is gone; take its group with it.
			proc.Signal(syscall.SIGKILL)
			return ws, ru, waitErr
		case s := <-sigc:
			proc.Signal(s.(syscall.Signal))
			if s == syscall.SIGTERM || s == syscall.SIGHUP {
				stopping("signal")
			}
		case <-pdc:
			if parentGone() {
				proc.Signal(syscall.SIGTERM)
				stopping("parent-death")
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
func setExit(rep *enforce.Report, ws syscall.WaitStatus) {
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
