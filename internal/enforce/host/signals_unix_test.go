//go:build unix

package host

import (
	"os"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fakeNotifier stands for signal.Notify and signal.Stop: it counts the
// subscriptions (each a round trip to the runtime's signal-mask thread in
// a real one) and delivers what a test sends to the subscribed channels.
type fakeNotifier struct {
	mu              sync.Mutex
	subs            map[os.Signal]chan<- os.Signal
	notifies, stops int
}

func (f *fakeNotifier) notifier() *Notifier {
	f.subs = map[os.Signal]chan<- os.Signal{}
	return &Notifier{
		Notify: func(c chan<- os.Signal, sigs ...os.Signal) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.notifies++
			for _, s := range sigs {
				f.subs[s] = c
			}
		},
		Stop: func(c chan<- os.Signal) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.stops++
			for s, sc := range f.subs {
				if sc == c {
					delete(f.subs, s)
				}
			}
		},
	}
}

func (f *fakeNotifier) send(t *testing.T, sig os.Signal) {
	t.Helper()
	f.mu.Lock()
	c := f.subs[sig]
	f.mu.Unlock()
	if c == nil {
		t.Fatalf("%v is not subscribed", sig)
	}
	c <- sig
}

func (f *fakeNotifier) counts() (int, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.notifies, f.stops
}

func receive(t *testing.T, c <-chan os.Signal, want os.Signal) {
	t.Helper()
	select {
	case got := <-c:
		if got != want {
			t.Fatalf("received %v, want %v", got, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%v never arrived", want)
	}
}

// TestSignalHub: the hub subscribes the parent-death signal once, for
// every later call, holds the relayed signals while a call that relays them
// is registered, and hands each signal to the calls registered.
func TestSignalHub(t *testing.T) {
	h := &signalHub{}
	f := &fakeNotifier{}
	n := f.notifier()
	groups := 1 // the relayed signals
	if parentDeathSignal != 0 {
		groups++
	}

	first := h.register(n, true)
	first.wait()
	if got, _ := f.counts(); got != groups {
		t.Fatalf("first call: %d subscriptions, want %d", got, groups)
	}
	f.send(t, syscall.SIGTERM)
	receive(t, first.relay, syscall.SIGTERM)
	first.stop()
	first.stop() // twice: nothing more
	// The relayed signals go back to the program once no call relays.
	for deadline := time.Now().Add(5 * time.Second); ; {
		if _, stops := f.counts(); stops == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the relayed signals were never unsubscribed after the last call that relays them")
		}
		time.Sleep(time.Millisecond)
	}
	f.mu.Lock()
	_, held := f.subs[syscall.SIGINT]
	f.mu.Unlock()
	if held {
		t.Fatal("SIGINT is still subscribed with no call relaying it")
	}

	// A server's calls: the parent-death subscription stays, none is
	// made again.
	for range 3 {
		s := h.register(n, false)
		s.wait()
		if parentDeathSignal != 0 {
			f.send(t, parentDeathSignal)
			receive(t, s.pdeath, parentDeathSignal)
		}
		s.stop()
	}
	if got, stops := f.counts(); got != groups || stops != 1 {
		t.Fatalf("after 4 calls: %d subscriptions and %d unsubscriptions, want %d and 1", got, stops, groups)
	}

	// Two relaying calls at once: one subscription, held until both end.
	a, b := h.register(n, true), h.register(n, true)
	a.wait()
	b.wait()
	if got, _ := f.counts(); got != groups+1 {
		t.Fatalf("two relaying calls: %d subscriptions, want %d", got, groups+1)
	}
	f.send(t, syscall.SIGHUP)
	receive(t, a.relay, syscall.SIGHUP)
	receive(t, b.relay, syscall.SIGHUP)
	a.stop()
	f.send(t, syscall.SIGINT) // still held for b
	receive(t, b.relay, syscall.SIGINT)
	b.stop()
}
