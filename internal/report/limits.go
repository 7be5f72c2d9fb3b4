package report

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Limits are the resource limits of one call; a zero field is no limit.
type Limits struct {
	// MemoryBytes caps the memory of the whole tree (cgroup), or of each
	// process's address space (rlimit fallback).
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	// Pids caps the number of processes and threads of the whole tree.
	Pids int `json:"pids,omitempty"`
	// CPUs is a CPU bandwidth quota in cores (0.5: half of one core).
	CPUs float64 `json:"cpus,omitempty"`
}

// IsZero reports whether no limit is set.
func (l Limits) IsZero() bool { return l == Limits{} }

// The ranges a limit must be in; outside them the kernel would refuse the
// cgroup write (after the call's cgroup was made) or the limit would mean
// nothing.
const (
	// MinMemoryBytes: below 1 MiB no command can start.
	MinMemoryBytes = 1 << 20
	// MaxPids is the kernel's PID_MAX_LIMIT on 64-bit (pids.max refuses
	// more with EINVAL).
	MaxPids = 4 << 20
	// MinCPUs is the smallest quota: 1 ms of each 100 ms period.
	MinCPUs = 0.01
	// cpusPerCore is how far beyond this machine's CPUs a quota may go: a
	// request written for a larger machine still runs (unlimited in
	// effect), a typo like 1e9 does not.
	cpusPerCore = 4
	// MaxTimeout is the longest timeout of a call: a year, beyond any tool
	// call and far inside time.Duration's 292 years.
	MaxTimeout = 365 * 24 * time.Hour
)

// MaxCPUs is the largest CPU quota a call may ask for on this machine.
func MaxCPUs() float64 { return float64(cpusPerCore * max(runtime.NumCPU(), 1)) }

// LimitsRequest is the limits a caller asked for, the "limits" object of
// sbx exec or the flags of sbx run: a nil field was not given, and a given
// one must be a real limit (0 is not "no limit": leave it out).
type LimitsRequest struct {
	MemoryBytes *int64   `json:"memory_bytes,omitempty"`
	Pids        *int     `json:"pids,omitempty"`
	CPUs        *float64 `json:"cpus,omitempty"`
}

// LimitNames are what a caller calls the limits, so that an error names
// the field as given: flags for sbx run, JSON fields for sbx exec.
type LimitNames struct {
	MemoryBytes, Pids, CPUs string
	// Omit is how to ask for no limit ("leave the flag out").
	Omit string
}

// JSONLimitNames are the names of the "limits" object of a request.
var JSONLimitNames = LimitNames{MemoryBytes: "limits.memory_bytes", Pids: "limits.pids", CPUs: "limits.cpus", Omit: "leave the field out"}

// LimitError is a limit out of range; Field is the caller's name of it.
type LimitError struct {
	Field string
	Err   error
}

func (e *LimitError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *LimitError) Unwrap() error { return e.Err }

// Limits validates r and returns the limits it asks for. Both ways into a
// call (run's flags, exec's JSON) come through here, so they accept the
// same values; the error is a *LimitError naming the first bad field.
func (r LimitsRequest) Limits(names LimitNames) (Limits, error) {
	var l Limits
	notZero := func(name string, zero bool) error {
		if zero {
			return &LimitError{Field: name, Err: fmt.Errorf("must be greater than 0; %s for no limit", names.Omit)}
		}
		return nil
	}
	if r.MemoryBytes != nil {
		if err := notZero(names.MemoryBytes, *r.MemoryBytes == 0); err != nil {
			return Limits{}, err
		}
		l.MemoryBytes = *r.MemoryBytes
	}
	if r.Pids != nil {
		if err := notZero(names.Pids, *r.Pids == 0); err != nil {
			return Limits{}, err
		}
		l.Pids = *r.Pids
	}
	if r.CPUs != nil {
		if err := notZero(names.CPUs, *r.CPUs == 0); err != nil {
			return Limits{}, err
		}
		l.CPUs = *r.CPUs
	}
	return l, l.check(names)
}

// Validate names the first limit that is out of range (a zero field is no
// limit), by its JSON name.
func (l Limits) Validate() error {
	return l.check(LimitNames{MemoryBytes: "memory_bytes", Pids: "pids", CPUs: "cpus"})
}

// check is the one range check of every limit; zero fields are not set.
func (l Limits) check(names LimitNames) error {
	bad := func(name, format string, a ...any) error {
		return &LimitError{Field: name, Err: fmt.Errorf(format, a...)}
	}
	switch {
	case l.MemoryBytes < 0:
		return bad(names.MemoryBytes, "must not be negative")
	case l.MemoryBytes > 0 && l.MemoryBytes < MinMemoryBytes:
		return bad(names.MemoryBytes, "%d is below 1 MiB, which no command can start in", l.MemoryBytes)
	case l.Pids < 0:
		return bad(names.Pids, "must not be negative")
	case l.Pids > MaxPids:
		return bad(names.Pids, "%d is more than the kernel's limit of %d processes", l.Pids, MaxPids)
	case l.CPUs < 0 || math.IsNaN(l.CPUs) || math.IsInf(l.CPUs, 0):
		return bad(names.CPUs, "must be a positive number of cores")
	case l.CPUs > 0 && l.CPUs < MinCPUs:
		return bad(names.CPUs, "%g is below the smallest quota, %g", l.CPUs, MinCPUs)
	case l.CPUs > MaxCPUs():
		return bad(names.CPUs, "%g is out of range: give a number of cores from %g to %g (%d × the %d CPUs here)",
			l.CPUs, MinCPUs, MaxCPUs(), cpusPerCore, runtime.NumCPU())
	}
	return nil
}

// CheckTimeout refuses a timeout outside (0, MaxTimeout]; name is the
// caller's name of the field.
func CheckTimeout(name string, d time.Duration) error {
	switch {
	case d <= 0:
		return &LimitError{Field: name, Err: errors.New("must be greater than 0")}
	case d > MaxTimeout:
		return &LimitError{Field: name, Err: ErrTimeoutRange}
	}
	return nil
}

// ErrTimeoutRange is the error of a timeout beyond MaxTimeout: it says the
// accepted range in the units of both callers.
var ErrTimeoutRange = fmt.Errorf("out of range: the longest timeout is %dh (365 days, %d ms)", int64(MaxTimeout/time.Hour), MaxTimeout.Milliseconds())

// ParseSize reads a byte count with an optional binary suffix: 512K, 64M,
// 1G, 1.5G (K, M, G, T; a trailing "B" or "iB" is accepted).
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimSuffix(strings.TrimSuffix(strings.ToUpper(t), "B"), "I")
	mult := 1.0
	if n := len(t); n > 0 {
		if i := strings.IndexByte("KMGT", t[n-1]); i >= 0 {
			mult, t = math.Pow(1024, float64(i+1)), t[:n-1]
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("%q is not a size (examples: 67108864, 64M, 1.5G)", s)
	}
	b := v * mult
	if b >= math.MaxInt64 {
		return 0, errors.New(s + " is too large")
	}
	if b > 0 && b < 1 {
		// It would truncate to 0, which means "no limit".
		return 0, fmt.Errorf("%q is less than one byte", s)
	}
	return int64(b), nil
}

// Resources is how a call's limits were applied and what it used.
type Resources struct {
	// Mechanism is what enforced the limits: "cgroup-v2", "cgroup-v1",
	// "rlimit", a "+"-joined mix when controllers differ, or "none".
	Mechanism string `json:"mechanism"`
	Limits
	// PeakMemoryBytes is the tree's peak memory when a memory cgroup
	// measured it, else the largest resident set of one process (rusage).
	PeakMemoryBytes int64 `json:"peak_memory_bytes"`
	// PeakMemorySource is "cgroup" or "rusage"; absent when nothing ran.
	PeakMemorySource string `json:"peak_memory_source,omitempty"`
	// CPUTimeMS is user+system CPU time of the tree (cgroup), or of the
	// command and the descendants it waited for (rusage).
	CPUTimeMS int64 `json:"cpu_time_ms"`
	// OOMKills counts processes the kernel's OOM killer ended in the call's
	// memory cgroup.
	OOMKills int `json:"oom_kills,omitempty"`
}
