package host

import (
	"os"
	"sync/atomic"
)

// Notifier is how host hears this process's signals: signal.Notify and
// signal.Stop, handed in by the program (cmd/sbx installs them with
// SetNotifier when it starts). Which signals a process catches is
// process-wide state, the program's, so the library never subscribes by
// itself: without a Notifier a call's ForwardSignals relays nothing, and
// no parent-death signal is asked for (PR_SET_PDEATHSIG would otherwise
// end the program: nothing would catch it).
type Notifier struct {
	Notify func(c chan<- os.Signal, sig ...os.Signal)
	Stop   func(c chan<- os.Signal)
}

var notifier atomic.Pointer[Notifier]

// SetNotifier installs n for every later call of this process. A program
// that embeds sbx (package sandbox) and wants its signals relayed to the
// command installs signal.Notify and signal.Stop.
func SetNotifier(n Notifier) {
	if n.Notify == nil || n.Stop == nil {
		notifier.Store(nil)
		return
	}
	notifier.Store(&n)
}

// installedNotifier is the program's Notifier, nil when none is installed.
func installedNotifier() *Notifier { return notifier.Load() }
