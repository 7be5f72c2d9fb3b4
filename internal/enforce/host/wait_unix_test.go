//go:build unix

package host

import (
	"context"
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sbx-sandbox/sbx/internal/report"
)

func TestSetExit(t *testing.T) {
	tests := []struct {
		name       string
		ws         syscall.WaitStatus
		wantCode   int
		wantSignal string
	}{
		{name: "exit 0", ws: 0, wantCode: 0},
		{name: "exit 3", ws: 3 << 8, wantCode: 3},
		{name: "exit 255", ws: 255 << 8, wantCode: 255},
		{name: "SIGKILL", ws: syscall.WaitStatus(syscall.SIGKILL), wantCode: 128 + 9, wantSignal: "SIGKILL"},
		{name: "SIGTERM", ws: syscall.WaitStatus(syscall.SIGTERM), wantCode: 128 + 15, wantSignal: "SIGTERM"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rep report.Report
			setExit(&rep, tt.ws)
			if rep.ExitCode != tt.wantCode || rep.SignalName != tt.wantSignal {
				t.Errorf("exit code %d, signal %q; want %d, %q", rep.ExitCode, rep.SignalName, tt.wantCode, tt.wantSignal)
			}
			if (rep.Signal != nil) != (tt.wantSignal != "") {
				t.Errorf("signal number = %v, want one only for a signal", rep.Signal)
			}
		})
	}
}

// fakeProcess is a command that ends when it gets one of the signals in
// exitOn (dying of it), or on its own after exitAfter.
type fakeProcess struct {
	exitOn    []syscall.Signal
	exitAfter time.Duration
	mu        sync.Mutex
	sent      []syscall.Signal
	ended     bool
	ws        syscall.WaitStatus
	done      chan struct{}
}

func (p *fakeProcess) start() {
	p.done = make(chan struct{})
	if p.exitAfter > 0 {
		time.AfterFunc(p.exitAfter, func() { p.end(0) })
	}
}

func (p *fakeProcess) end(ws syscall.WaitStatus) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.ended {
		p.ended, p.ws = true, ws
		close(p.done)
	}
}

func (p *fakeProcess) Wait() (syscall.WaitStatus, syscall.Rusage, error) {
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ws, syscall.Rusage{}, nil
}

func (p *fakeProcess) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	p.sent = append(p.sent, sig)
	p.mu.Unlock()
	if slices.Contains(p.exitOn, sig) {
		p.end(syscall.WaitStatus(sig))
	}
	return nil
}

func TestWaitCall(t *testing.T) {
	kill, term, intr := syscall.SIGKILL, syscall.SIGTERM, syscall.SIGINT
	tests := []struct {
		name         string
		call         Call
		cancel       bool             // ctx is cancelled
		relay        []syscall.Signal // signals sbx got, relayed
		exitOn       []syscall.Signal // the command dies of these
		exitAfter    time.Duration    // or ends on its own after this
		wantSent     []syscall.Signal
		wantKilledBy string
		wantSignal   string
		wantTimedOut bool
	}{
		{name: "ends on its own", exitAfter: time.Millisecond,
			wantSent: []syscall.Signal{kill}},
		{name: "timeout", call: Call{Timeout: 10 * time.Millisecond}, exitOn: []syscall.Signal{kill},
			wantSent: []syscall.Signal{kill, kill}, wantKilledBy: "timeout", wantTimedOut: true},
		{name: "ctx cancelled", cancel: true, exitOn: []syscall.Signal{kill},
			wantSent: []syscall.Signal{kill, kill}, wantKilledBy: "signal"},
		{name: "SIGTERM obeyed", call: Call{ForwardSignals: true}, relay: []syscall.Signal{term},
			exitOn:   []syscall.Signal{term, kill},
			wantSent: []syscall.Signal{term, kill}, wantKilledBy: "signal", wantSignal: "SIGTERM"},
		{name: "SIGTERM ignored: killed after the grace", call: Call{ForwardSignals: true, KillGrace: 10 * time.Millisecond},
			relay: []syscall.Signal{term}, exitOn: []syscall.Signal{kill},
			wantSent: []syscall.Signal{term, kill, kill}, wantKilledBy: "signal", wantSignal: "SIGTERM"},
		{name: "SIGINT ends it", call: Call{ForwardSignals: true}, relay: []syscall.Signal{intr},
			exitOn:   []syscall.Signal{intr, kill},
			wantSent: []syscall.Signal{intr, kill}, wantKilledBy: "signal", wantSignal: "SIGINT"},
		{name: "SIGINT handled: its end is its own", call: Call{ForwardSignals: true, KillGrace: 10 * time.Millisecond},
			relay: []syscall.Signal{intr}, exitOn: []syscall.Signal{kill}, exitAfter: 200 * time.Millisecond,
			wantSent: []syscall.Signal{intr, kill}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancel {
				cancel()
			}
			// The signals as subscribeSignals would deliver them, without
			// subscribing this process to any.
			ready := make(chan struct{})
			close(ready)
			sigs := &callSignals{ready: ready}
			if tt.relay != nil {
				sigs.relay = make(chan os.Signal, len(tt.relay))
				for _, s := range tt.relay {
					sigs.relay <- s
				}
			}
			proc := &fakeProcess{exitOn: tt.exitOn, exitAfter: tt.exitAfter}
			proc.start()
			var rep report.Report
			if _, _, err := waitCall(ctx, tt.call, proc, sigs, &rep); err != nil {
				t.Fatalf("waitCall: %v", err)
			}
			proc.mu.Lock()
			sent := proc.sent
			proc.mu.Unlock()
			if !slices.Equal(sent, tt.wantSent) {
				t.Errorf("signals sent = %v, want %v", sent, tt.wantSent)
			}
			if rep.KilledBy != tt.wantKilledBy || rep.KilledBySignal != tt.wantSignal || rep.TimedOut != tt.wantTimedOut {
				t.Errorf("killed by %q (%q), timed out %v; want %q (%q), %v",
					rep.KilledBy, rep.KilledBySignal, rep.TimedOut, tt.wantKilledBy, tt.wantSignal, tt.wantTimedOut)
			}
		})
	}
}
