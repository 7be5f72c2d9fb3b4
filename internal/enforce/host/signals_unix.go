//go:build unix

package host

import (
	"os"
	"sync"
	"syscall"
)

// relayedSignals are what a call that forwards signals relays to its
// command.
var relayedSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// callSignals are the signals a call listens to: those it relays to the
// command (when the call asks for it) and the parent-death signal.
type callSignals struct {
	relay  chan os.Signal  // nil unless the call relays signals
	pdeath chan os.Signal  // nil without a parent-death signal
	ready  <-chan struct{} // closed once what the call hears is subscribed
	hub    *signalHub      // registered with (nil: none)
}

// hub is this process's one subscription to the signals its calls hear.
// Subscribing to a signal, and unsubscribing, each wait for a round trip
// to the Go runtime's signal-mask thread, a locked thread that each round
// trip wakes and parks again (~4 futex calls and two context switches):
// every call of a server paid two (the parent-death signal on, then off),
// beside its compile and after its answer (#31). The hub subscribes each
// signal the first time a call needs it, through the Notifier installed
// then, and keeps it; a call registers its channels with it and
// unregisters them, under a mutex.
var hub = signalHub{raise: func(sig syscall.Signal) { syscall.Kill(os.Getpid(), sig) }}

type signalHub struct {
	// raise sends this process a relayed signal no call took (relayLoop).
	raise func(syscall.Signal)
	mu    sync.Mutex
	// relayIn and pdeathIn are the hub's subscriptions, nil until a call
	// needs them (relayIn again after a relayed signal no call took).
	relayIn, pdeathIn chan os.Signal
	// done is closed once the last subscription started is in (a chain:
	// each waits for the one before), nil before the first.
	done  chan struct{}
	calls map[*callSignals]struct{}
}

// subscribeSignals registers c's signals with the hub, subscribing in the
// background what the hub lacks: the program's Notifier (SetNotifier) hears
// them; without one there is nothing to relay and no parent-death signal.
func subscribeSignals(c Call) *callSignals {
	return hub.register(installedNotifier(), c.ForwardSignals)
}

// register is subscribeSignals through n (nil: no Notifier), for a call
// that relays signals (forward) or not.
func (h *signalHub) register(n *Notifier, forward bool) *callSignals {
	s := &callSignals{}
	if n == nil {
		ready := make(chan struct{})
		close(ready)
		s.ready = ready
		return s
	}
	if forward {
		s.relay = make(chan os.Signal, 4)
	}
	if parentDeathSignal != 0 {
		s.pdeath = make(chan os.Signal, 1)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.subscribeLocked(n, forward)
	s.ready, s.hub = h.done, h
	if h.calls == nil {
		h.calls = map[*callSignals]struct{}{}
	}
	h.calls[s] = struct{}{}
	return s
}

// subscribeLocked starts subscribing what the hub lacks of (relay,
// parent death) through n. h.mu is held.
func (h *signalHub) subscribeLocked(n *Notifier, relay bool) {
	var subscribe []func()
	if relay && h.relayIn == nil {
		in := make(chan os.Signal, 4)
		h.relayIn = in
		subscribe = append(subscribe, func() { n.Notify(in, relayedSignals...) })
		go h.relayLoop(n, in)
	}
	if parentDeathSignal != 0 && h.pdeathIn == nil {
		in := make(chan os.Signal, 1)
		h.pdeathIn = in
		subscribe = append(subscribe, func() { n.Notify(in, parentDeathSignal) })
		go h.pdeathLoop(in)
	}
	if len(subscribe) == 0 {
		if h.done == nil {
			h.done = make(chan struct{})
			close(h.done)
		}
		return
	}
	prev, done := h.done, make(chan struct{})
	h.done = done
	go func() {
		if prev != nil {
			<-prev
		}
		for _, f := range subscribe {
			f()
		}
		close(done)
	}()
}

// relayLoop hands each relayed signal to every call that relays signals.
// One that no call takes does what it did before the hub caught it: the
// hub unsubscribes (a later call subscribes again) and sends it to this
// process once more, so that sbx run ends on a SIGINT before or after its
// call as it did before the subscription (Go's default for it), and a
// subscriber of the program's own (sbx's Ctrl-C during an approval) hears it.
func (h *signalHub) relayLoop(n *Notifier, in chan os.Signal) {
	for sig := range in {
		h.mu.Lock()
		taken := false
		for s := range h.calls {
			if s.relay != nil {
				taken = true
				select {
				case s.relay <- sig:
				default: // full: as signal.Notify drops one
				}
			}
		}
		if taken {
			h.mu.Unlock()
			continue
		}
		h.relayIn = nil
		n.Stop(in)
		h.mu.Unlock()
		if num, ok := sig.(syscall.Signal); ok {
			h.raise(num)
		}
		return
	}
}

// pdeathLoop hands the parent-death signal to every call: each checks
// whether its parent is gone. With no call, nothing asked for it.
func (h *signalHub) pdeathLoop(in chan os.Signal) {
	for sig := range in {
		h.mu.Lock()
		for s := range h.calls {
			select {
			case s.pdeath <- sig:
			default:
			}
		}
		h.mu.Unlock()
	}
}

// stop unregisters the call's channels: what arrives later is not theirs.
// The subscriptions stay, for the next call.
func (s *callSignals) stop() {
	if s.hub == nil {
		return
	}
	s.hub.mu.Lock()
	delete(s.hub.calls, s)
	s.hub.mu.Unlock()
}

// wait returns once the signals are subscribed. Call it before the start,
// so a Ctrl-C between start and wait is relayed rather than killing sbx
// and orphaning the command.
func (s *callSignals) wait() { <-s.ready }
