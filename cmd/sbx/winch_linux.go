package main

import (
	"os"
	"os/signal"

	"golang.org/x/sys/unix"
)

// windowChanges fires each time sbx's terminal changes size (SIGWINCH)
// until stop: the subscription is process-wide state, so the program
// holds it and hands the library (host.FollowSize) a channel.
func windowChanges() (resized <-chan struct{}, stop func()) {
	winch := make(chan os.Signal, 1)
	out := make(chan struct{}, 1)
	done := make(chan struct{})
	signal.Notify(winch, unix.SIGWINCH)
	go func() {
		for {
			select {
			case <-done:
				return
			case <-winch:
				select {
				case out <- struct{}{}:
				default: // a resize is pending already: it reads the latest size
				}
			}
		}
	}()
	return out, func() { signal.Stop(winch); close(done) }
}
