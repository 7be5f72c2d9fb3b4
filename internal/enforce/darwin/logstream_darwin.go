//go:build darwin

package darwin

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// logPath is the only log(1) sbx runs, for the same reason as SandboxExec.
const logPath = "/usr/bin/log"

const (
	// logReadyTimeout bounds the wait for log stream to attach.
	logReadyTimeout = 2 * time.Second
	// logFlushGrace is how long violations of a finished command may take to
	// reach log stream.
	logFlushGrace = 150 * time.Millisecond
	// maxLoggedDenials bounds memory when a command hammers a denied path.
	maxLoggedDenials = 10000
)

// DenialLog collects Seatbelt violations from `log stream` while a command
// runs and keeps those of the command's process tree.
//
// IMPORTANT: unverified on Apple hardware. Known gaps: a descendant that
// forks and exits between two scans of the process table is not tracked, so
// its denials are dropped; violations are reported by the kernel
// asynchronously, and any that arrive after logFlushGrace are lost; the
// whole mechanism costs one log(1) process per call.
type DenialLog struct {
	cmd     *exec.Cmd
	mu      sync.Mutex
	logged  []LoggedDenial
	readers sync.WaitGroup
	tracker *pidTracker
}

// StartDenialLog starts log stream and waits until it is attached, so
// violations of a command started afterwards are seen.
func StartDenialLog() (*DenialLog, error) {
	cmd := exec.Command(logPath, "stream", "--style", "ndjson", "--predicate", LogPredicate)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("log stream: %w", err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("log stream: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("log stream: %w", err)
	}
	d := &DenialLog{cmd: cmd}
	ready := make(chan struct{})
	var once sync.Once
	signalReady := func() { once.Do(func() { close(ready) }) }
	d.readers.Add(2)
	go d.read(stdout, signalReady, true)
	go d.read(stderr, signalReady, false)
	select {
	case <-ready:
		return d, nil
	case <-time.After(logReadyTimeout):
		d.stop()
		return nil, fmt.Errorf("log stream: not attached after %s", logReadyTimeout)
	}
}

// read consumes one output stream of log stream. The ready banner may come
// on either; violations come on stdout.
func (d *DenialLog) read(r io.Reader, ready func(), parse bool) {
	defer d.readers.Done()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		if strings.HasPrefix(string(line), logReadyPrefix) {
			ready()
			continue
		}
		if !parse {
			continue
		}
		if l, ok := ParseLogLine(line); ok {
			d.mu.Lock()
			if len(d.logged) < maxLoggedDenials {
				d.logged = append(d.logged, l)
			}
			d.mu.Unlock()
		}
	}
}

// Track starts following the process tree rooted at pid (the command, which
// sandbox-exec becomes by exec).
func (d *DenialLog) Track(pid int) error {
	t, err := trackTree(pid)
	if err != nil {
		return err
	}
	d.tracker = t
	return nil
}

// Finish stops collecting and returns the tree's denials, classified
// against pol (see Denials). Call it after the command has exited.
func (d *DenialLog) Finish(pol policy.Policy) ([]report.Denial, int) {
	pids := map[int]bool{}
	if d.tracker != nil {
		pids = d.tracker.stop()
	}
	time.Sleep(logFlushGrace)
	d.stop()
	d.mu.Lock()
	defer d.mu.Unlock()
	return Denials(d.logged, pids, pol)
}

func (d *DenialLog) stop() {
	if d.cmd.Process != nil {
		d.cmd.Process.Kill()
	}
	d.readers.Wait()
	// log stream was killed: its exit status says nothing.
	_ = d.cmd.Wait()
}
