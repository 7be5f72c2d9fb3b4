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
// beside its compile and after its answer (#31). The hub subscribes the
// parent-death signal the first time a call needs it, through the Notifier
// installed then, and keeps it: nothing sends it unless a call asked the
// kernel for it (parentDeath). The relayed signals it holds only while a
// call that relays them is registered, as before: between such calls
// they do what the program has them do (Go's default ends sbx). A call
// registers its channels with the hub and unregisters them, under a mutex.
var hub signalHub

// subscribed is a closed channel: the ready of a call with nothing to wait
// for.
var subscribed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

type signalHub struct {
	mu sync.Mutex
	// relayIn and pdeathIn are the hub's subscriptions, nil until a call
	// needs them; relayIn is nil again once no registered call relays.
	relayIn, pdeathIn chan os.Signal
	// done is closed once the last subscription started is in (a chain:
	// each waits for the one before), nil before the first.
	done chan struct{}
	// notifier is what the relayed signals were subscribed through.
	notifier *Notifier
	calls    map[*callSignals]struct{}
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
		s.ready = subscribed
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
		h.relayIn, h.notifier = in, n
		subscribe = append(subscribe, func() { n.Notify(in, relayedSignals...) })
		go h.hand(in, func(s *callSignals) chan os.Signal { return s.relay })
	}
	if parentDeathSignal != 0 && h.pdeathIn == nil {
		in := make(chan os.Signal, 1)
		h.pdeathIn = in
		subscribe = append(subscribe, func() { n.Notify(in, parentDeathSignal) })
		go h.hand(in, func(s *callSignals) chan os.Signal { return s.pdeath })
	}
	if len(subscribe) == 0 {
		if h.done == nil {
			h.done = subscribed
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

// hand gives each signal that arrives on in to every registered call's
// channel of that kind (to: the call's relay or pdeath; a call without one
// gets nothing), until in is closed (stop). The parent-death signal goes to
// every call, and each checks whether its own parent is gone.
func (h *signalHub) hand(in chan os.Signal, to func(*callSignals) chan os.Signal) {
	for sig := range in {
		h.mu.Lock()
		for s := range h.calls {
			select {
			case to(s) <- sig: // a nil channel: never ready
			default: // full: as signal.Notify drops one
			}
		}
		h.mu.Unlock()
	}
}

// stop unregisters the call's channels: what arrives later is not theirs.
// The parent-death subscription stays, for the next call; the relayed
// signals' ends with the last call that relays them, in the background (a
// relayed signal that arrives meanwhile is dropped instead of taking its
// default action).
func (s *callSignals) stop() {
	h := s.hub
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.calls[s]; !ok {
		return
	}
	delete(h.calls, s)
	if s.relay == nil {
		return
	}
	for other := range h.calls {
		if other.relay != nil {
			return // still relaying for it
		}
	}
	in, n := h.relayIn, h.notifier
	h.relayIn = nil
	done := h.done
	go func() {
		<-done // subscribed before it is stopped
		n.Stop(in)
		close(in) // Stop returned: nothing sends on in any more
	}()
}

// wait returns once the signals are subscribed. Call it before the start,
// so a Ctrl-C between start and wait is relayed rather than killing sbx
// and orphaning the command.
func (s *callSignals) wait() { <-s.ready }
