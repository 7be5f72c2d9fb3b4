//go:build darwin

package darwin

import (
	"errors"
	"fmt"
	"maps"
	"sync"

	"golang.org/x/sys/unix"
)

// stopIdent is the EVFILT_USER event that ends the tracker's loop.
const stopIdent = 1

// pidTracker follows a process tree: a kqueue reports each fork of a
// tracked process, and a scan of the process table then adds every process
// whose parent is tracked or that is in the root's process group (which
// catches orphans re-parented to launchd, as long as they did not leave the
// group).
type pidTracker struct {
	kq   int
	root int
	mu   sync.Mutex
	seen map[int]bool
	done chan struct{}
}

func trackTree(root int) (*pidTracker, error) {
	kq, err := unix.Kqueue()
	if err != nil {
		return nil, fmt.Errorf("kqueue: %w", err)
	}
	t := &pidTracker{kq: kq, root: root, seen: map[int]bool{}, done: make(chan struct{})}
	var ev unix.Kevent_t
	unix.SetKevent(&ev, stopIdent, unix.EVFILT_USER, unix.EV_ADD|unix.EV_CLEAR)
	if _, err := unix.Kevent(kq, []unix.Kevent_t{ev}, nil, nil); err != nil {
		unix.Close(kq)
		return nil, fmt.Errorf("kevent EVFILT_USER: %w", err)
	}
	t.add(root)
	t.scan()
	go t.loop()
	return t, nil
}

// add records pid and watches it for forks. A process that is already gone
// (ESRCH) is still recorded: its denials may be in the log.
func (t *pidTracker) add(pid int) {
	t.seen[pid] = true
	if t.kq < 0 {
		return
	}
	var ev unix.Kevent_t
	unix.SetKevent(&ev, pid, unix.EVFILT_PROC, unix.EV_ADD|unix.EV_CLEAR)
	ev.Fflags = unix.NOTE_FORK | unix.NOTE_EXIT
	unix.Kevent(t.kq, []unix.Kevent_t{ev}, nil, nil)
}

// scan adds the untracked children of tracked processes until nothing
// changes.
func (t *pidTracker) scan() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.kq < 0 {
		return
	}
	procs, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return
	}
	for changed := true; changed; {
		changed = false
		for i := range procs {
			pid := int(procs[i].Proc.P_pid)
			if t.seen[pid] {
				continue
			}
			if t.seen[int(procs[i].Eproc.Ppid)] || int(procs[i].Eproc.Pgid) == t.root {
				t.add(pid)
				changed = true
			}
		}
	}
}

func (t *pidTracker) loop() {
	defer close(t.done)
	events := make([]unix.Kevent_t, 32)
	for {
		n, err := unix.Kevent(t.kq, nil, events, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return
		}
		forked := false
		for _, ev := range events[:n] {
			if ev.Filter == unix.EVFILT_USER && ev.Ident == stopIdent {
				return
			}
			if ev.Filter == unix.EVFILT_PROC && ev.Fflags&unix.NOTE_FORK != 0 {
				forked = true
			}
		}
		if forked {
			t.scan()
		}
	}
}

// stop scans once more (descendants still running) and returns every pid
// seen.
func (t *pidTracker) stop() map[int]bool {
	t.scan()
	var ev unix.Kevent_t
	unix.SetKevent(&ev, stopIdent, unix.EVFILT_USER, 0)
	ev.Fflags = unix.NOTE_TRIGGER
	unix.Kevent(t.kq, []unix.Kevent_t{ev}, nil, nil)
	<-t.done
	t.mu.Lock()
	defer t.mu.Unlock()
	// Closed only here, after the loop ended, so no kevent call can reach a
	// reused fd number.
	unix.Close(t.kq)
	t.kq = -1
	return maps.Clone(t.seen)
}
