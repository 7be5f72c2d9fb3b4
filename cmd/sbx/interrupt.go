package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/sbx-sandbox/sbx/internal/enforce/host"
	"github.com/sbx-sandbox/sbx/internal/escalate"
)

// interruptible is an approver that SIGINT or SIGTERM to sbx settles
// cancelled while it is asked: the call never starts, and its result says
// so. Signal handling is process-wide state, so it lives here, in the
// program, not in the library: package call only honours the context
// escalate.Ask is given. Outside an ask sbx's signals go where they
// went (to the command, through the relay, once it runs).
type interruptible struct{ escalate.Approver }

// Approve asks the wrapped approver through escalate.Ask under a context
// that the signals end. A late answer is dropped.
func (a interruptible) Approve(ctx context.Context, q escalate.ApprovalRequest) (escalate.Outcome, error) {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return escalate.Ask(ctx, a.Approver, q, 0)
}

// withInterrupt wraps approver (nil stays nil: no approver configured).
func withInterrupt(approver escalate.Approver) escalate.Approver {
	if approver == nil {
		return nil
	}
	return interruptible{approver}
}

// The program, not the library, catches signals: host relays SIGINT,
// SIGTERM, SIGHUP and SIGQUIT to a running command, and hears sbx's
// parent-death signal, through this process's signal.Notify.
func init() { host.SetNotifier(host.Notifier{Notify: signal.Notify, Stop: signal.Stop}) }
