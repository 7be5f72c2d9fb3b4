//go:build linux

package linux

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/report"
)

// TestWriteLimit checks the files and values each controller and cgroup
// version gets, in a directory standing for a group (only files that
// exist in a real group are created beforehand).
func TestWriteLimit(t *testing.T) {
	l := report.Limits{MemoryBytes: 64 << 20, Pids: 10, CPUs: 0.25}
	for _, c := range []struct {
		ctl     string
		version int
		files   []string // present in the group
		want    map[string]string
	}{
		{ctlMemory, 2, []string{"memory.max", "memory.swap.max"}, map[string]string{"memory.max": "67108864", "memory.swap.max": "0"}},
		// Without swap accounting v2 has no memory.swap.max: still fine.
		{ctlMemory, 2, []string{"memory.max"}, map[string]string{"memory.max": "67108864"}},
		{ctlMemory, 1, []string{"memory.limit_in_bytes", "memory.memsw.limit_in_bytes"},
			map[string]string{"memory.limit_in_bytes": "67108864", "memory.memsw.limit_in_bytes": "67108864"}},
		{ctlPids, 2, []string{"pids.max"}, map[string]string{"pids.max": "10"}},
		{ctlPids, 1, []string{"pids.max"}, map[string]string{"pids.max": "10"}},
		{ctlCPU, 2, []string{"cpu.max"}, map[string]string{"cpu.max": "25000 100000"}},
		{ctlCPU, 1, []string{"cpu.cfs_period_us", "cpu.cfs_quota_us"}, map[string]string{"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "25000"}},
	} {
		dir := t.TempDir()
		for _, f := range c.files {
			if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := writeLimit(dir, c.ctl, c.version, l); err != nil {
			t.Errorf("%s v%d: %v", c.ctl, c.version, err)
			continue
		}
		for f, want := range c.want {
			if b, _ := os.ReadFile(filepath.Join(dir, f)); string(b) != want {
				t.Errorf("%s v%d: %s = %q, want %q", c.ctl, c.version, f, b, want)
			}
		}
	}
	// The limit file itself missing is an error: the limit would not apply.
	if err := writeLimit(t.TempDir(), ctlPids, 2, l); err == nil {
		t.Error("writeLimit without pids.max succeeded")
	}
}

func TestReadKey(t *testing.T) {
	p := filepath.Join(t.TempDir(), "memory.events")
	os.WriteFile(p, []byte("low 0\nhigh 0\nmax 12\noom 1\noom_kill 3\noom_group_kill 0\n"), 0o644)
	if v, ok := readKey(p, "oom_kill"); !ok || v != 3 {
		t.Errorf("oom_kill = %d, %t; want 3", v, ok)
	}
	if v, ok := readKey(p, "oom"); !ok || v != 1 {
		t.Errorf("oom = %d, %t; want 1 (not a prefix match of oom_kill)", v, ok)
	}
	if _, ok := readKey(p, "absent"); ok {
		t.Error("absent key found")
	}
}

// A dead process's call group is swept at a process's first call into its
// parent, a live one's never; the next sweep of that parent waits
// sweepEvery.
func TestSweepStale(t *testing.T) {
	parent := t.TempDir()
	dead := exec.Command("/bin/true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	deadDir := filepath.Join(parent, fmt.Sprintf("sbx-%d-1", dead.Process.Pid))
	oldDir := filepath.Join(parent, fmt.Sprintf("sbx-%d", dead.Process.Pid)) // before call numbers
	liveDir := filepath.Join(parent, fmt.Sprintf("sbx-%d-1", os.Getpid()))
	for _, d := range []string{deadDir, oldDir, liveDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sweepStale(parent)
	for d, want := range map[string]bool{deadDir: false, oldDir: false, liveDir: true} {
		if _, err := os.Stat(d); (err == nil) != want {
			t.Errorf("%s: there %v after the sweep, want %v", d, err == nil, want)
		}
	}
	if err := os.Mkdir(deadDir, 0o755); err != nil {
		t.Fatal(err)
	}
	sweepStale(parent) // within sweepEvery: not read again
	if _, err := os.Stat(deadDir); err != nil {
		t.Errorf("swept again within %v: %v", sweepEvery, err)
	}
}

// TestCgroupReadFile: the poller-free reader reads a file of any size
// whole (cgroup.procs of a big tree is longer than its first buffer) and
// says when a file is missing (memory.peak without the memory controller).
func TestCgroupReadFile(t *testing.T) {
	dir := t.TempDir()
	want := strings.Repeat("4242\n", 1000)
	path := filepath.Join(dir, "cgroup.procs")
	if err := os.WriteFile(path, []byte(want), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := readFile(path); err != nil || string(b) != want {
		t.Errorf("readFile: %d bytes, %v; want %d bytes", len(b), err, len(want))
	}
	if pids := readPids(path); len(pids) != 1000 || pids[999] != 4242 {
		t.Errorf("readPids: %d pids", len(pids))
	}
	if _, err := readFile(filepath.Join(dir, "memory.peak")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v, want ErrNotExist", err)
	}
	if err := writeFile(filepath.Join(dir, "cgroup.kill"), "1"); err == nil {
		t.Error("writeFile created a missing file")
	}
}
