//go:build unix

package host

import (
	"context"
	"os"
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

// callSignals are the signals a call listens to: those it relays to the
// command (when the call asks for it) and the parent-death signal.
// Subscribing to a signal, and unsubscribing, waits for a round trip to
// the runtime's signal-mask thread (~0.1 ms per signal here), so both
// happen in the background: the subscription while the call is compiled,
// the unsubscription after it.
type callSignals struct {
	relay  chan os.Signal // nil unless the call relays signals
	pdeath chan os.Signal // nil without a parent-death signal
	ready  chan struct{}  // closed once both are subscribed
	// notifier subscribed them (nil: nothing was).
	notifier *Notifier
}

// subscribeSignals subscribes the call's signals in the background,
// through the program's Notifier (SetNotifier): without one there is
// nothing to relay and no parent-death signal.
func subscribeSignals(c Call) *callSignals {
	s := &callSignals{ready: make(chan struct{}), notifier: installedNotifier()}
	if s.notifier == nil {
		close(s.ready)
		return s
	}
	if c.ForwardSignals {
		s.relay = make(chan os.Signal, 4)
	}
	if parentDeathSignal != 0 {
		s.pdeath = make(chan os.Signal, 1)
	}
	go func() {
		defer close(s.ready)
		if s.relay != nil {
			s.notifier.Notify(s.relay, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
		}
		if s.pdeath != nil {
			s.notifier.Notify(s.pdeath, parentDeathSignal)
		}
	}()
	return s
}

// wait returns once the signals are subscribed. Call it before the start,
// so a Ctrl-C between start and wait is relayed rather than killing sbx
// and orphaning the command.
func (s *callSignals) wait() { <-s.ready }

// stop unsubscribes in the background: a signal that arrives meanwhile is
// dropped instead of taking its default action.
func (s *callSignals) stop() {
	go func() {
		<-s.ready
		for _, c := range []chan os.Signal{s.relay, s.pdeath} {
			if c != nil {
				s.notifier.Stop(c)
			}
		}
	}()
}

// waitCall waits for the command while relaying signals and enforcing the
// timeout and ctx, then kills what is left of its process group.
func waitCall(ctx context.Context, c Call, proc process, sigs *callSignals, rep *report.Report) (syscall.WaitStatus, syscall.Rusage, error) {
	done := make(chan struct{})
	var ws syscall.WaitStatus
	var ru syscall.Rusage
	var waitErr error
	go func() {
		ws, ru, waitErr = proc.Wait()
		close(done)
	}()
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
