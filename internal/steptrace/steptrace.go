// Package steptrace times the steps of one call for bench/README.md's
// floor table. With SBX_TRACE=FILE in sbx's environment, Begin starts a
// call, each Mark records the wall time and the process's CPU time
// (every thread of sbx, CLOCK_PROCESS_CPUTIME_ID) spent since the
// previous mark, and Flush appends the call's steps to FILE as one JSON
// line: {"steps":[["name",wall_us,cpu_us],...]}. go run ./bench/steps FILE
// prints each step's median. Without SBX_TRACE (the default) Begin, Mark
// and Flush only read a bool set at start-up.
//
// It is a benchmark's tool: one global trace, so the marks of calls that
// run at once interleave (time sequential calls only), and the CPU of a
// step counts whatever else sbx's threads did meanwhile.
package steptrace

import (
	"encoding/json"
	"os"
	"sync"
	"time"
)

var (
	file = os.Getenv("SBX_TRACE")
	on   = file != ""

	mu     sync.Mutex
	steps  [][3]any
	counts map[string]int
	last   struct{ wall, cpu int64 }
)

// Begin starts the trace of a call, dropping what was marked before.
func Begin() {
	if !on {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	steps = steps[:0]
	counts = nil
	last.wall, last.cpu = time.Now().UnixNano(), cpuNow()
}

// Mark ends the step name: the time since the previous mark is its.
func Mark(name string) {
	if !on {
		return
	}
	wall, cpu := time.Now().UnixNano(), cpuNow()
	mu.Lock()
	defer mu.Unlock()
	if last.wall == 0 {
		last.wall, last.cpu = wall, cpu
	}
	steps = append(steps, [3]any{name, (wall - last.wall) / 1000, (cpu - last.cpu) / 1000})
	last.wall, last.cpu = wall, cpu
}

// Count adds n to the call's counter name (the supervisor's
// notifications per syscall, for instance), written beside the steps as
// "counts":{"name":n,...}.
func Count(name string, n int) {
	if !on {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	if counts == nil {
		counts = map[string]int{}
	}
	counts[name] += n
}

// Flush appends the call's steps to the trace file (errors are dropped:
// a benchmark's trace never fails a call).
func Flush() {
	if !on {
		return
	}
	mu.Lock()
	line := map[string]any{"steps": steps}
	if len(counts) > 0 {
		line["counts"] = counts
	}
	b, _ := json.Marshal(line)
	steps = steps[:0]
	counts = nil
	mu.Unlock()
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	f.Write(append(b, '\n'))
	f.Close()
}
