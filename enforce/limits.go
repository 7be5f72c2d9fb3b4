package enforce

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
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

// maxCPUs bounds a CPU quota: more cores than any machine has, far below
// what overflows the kernel's quota in µs.
const maxCPUs = 1 << 20

// Validate names the first limit that is out of range.
func (l Limits) Validate() error {
	switch {
	case l.MemoryBytes < 0:
		return fmt.Errorf("memory_bytes: must not be negative")
	case l.MemoryBytes > 0 && l.MemoryBytes < 1<<20:
		return fmt.Errorf("memory_bytes: %d is below 1 MiB, which no command can start in", l.MemoryBytes)
	case l.Pids < 0:
		return fmt.Errorf("pids: must not be negative")
	case l.CPUs < 0 || math.IsNaN(l.CPUs) || math.IsInf(l.CPUs, 0):
		return fmt.Errorf("cpus: must be a positive number of cores")
	case l.CPUs > 0 && l.CPUs < 0.01:
		return fmt.Errorf("cpus: %g is below the smallest quota, 0.01", l.CPUs)
	case l.CPUs > maxCPUs:
		// The quota is written in µs per 100 ms period: a larger count of
		// cores overflows it (a negative or garbage cpu.max).
		return fmt.Errorf("cpus: %g is more than %d cores", l.CPUs, maxCPUs)
	}
	return nil
}

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
