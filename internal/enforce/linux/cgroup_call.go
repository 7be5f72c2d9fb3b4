//go:build linux

package linux

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/report"
)

// This file is a call's own groups, from their creation in the parents
// CgroupPlan names to their removal: limits written, the command forked
// in, usage read, the tree killed, stale groups swept.

// callCgroup is the call's groups, created for one Start.
type callCgroup struct {
	v2   string
	v2fd int // O_PATH fd of v2 for CLONE_INTO_CGROUP, -1 for none
	v1   map[string]string
	// leave holds the tasks files of the v1 parents, opened before the
	// launcher thread restricts itself: it joins the v1 groups to fork the
	// command into them, then moves itself back out through these.
	leave []*os.File
}

// createCgroups makes the call's groups and writes the limits into them.
// On error nothing is left behind.
func createCgroups(cp *CgroupPlan, l report.Limits) (cg *callCgroup, err error) {
	cg = &callCgroup{v2fd: -1, v1: map[string]string{}}
	defer func() {
		if err != nil {
			cg.remove()
			cg = nil
		}
	}()
	name := callGroupName()
	if cp.V2Parent != "" {
		if err := ensureV2Parent(cp); err != nil {
			return cg, err
		}
		sweepStale(cp.V2Parent)
		cg.v2 = filepath.Join(cp.V2Parent, name)
		if err := os.Mkdir(cg.v2, 0o755); err != nil {
			cg.v2 = ""
			return cg, fmt.Errorf("cgroup: %w", err)
		}
		for _, c := range cp.V2Controllers {
			if err := writeLimit(cg.v2, c, 2, l); err != nil {
				return cg, err
			}
		}
		fd, err := unix.Open(cg.v2, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return cg, fmt.Errorf("cgroup: open %s: %w", cg.v2, err)
		}
		cg.v2fd = fd
	}
	for _, c := range sortedKeys(cp.V1) {
		sweepStale(cp.V1[c])
		dir := filepath.Join(cp.V1[c], name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return cg, fmt.Errorf("cgroup: %w", err)
		}
		cg.v1[c] = dir
		if err := writeLimit(dir, c, 1, l); err != nil {
			return cg, err
		}
		f, err := os.OpenFile(filepath.Join(cp.V1[c], "tasks"), os.O_WRONLY, 0)
		if err != nil {
			return cg, fmt.Errorf("cgroup: %w", err)
		}
		cg.leave = append(cg.leave, f)
	}
	return cg, nil
}

// callGroups numbers the call groups this process makes.
var callGroups atomic.Uint64

// callGroupName is the name of a new call group: "sbx-PID-N". A server runs
// calls at once, each with a group of its own (they were all "sbx-PID", and
// the second call at once failed to make its group).
func callGroupName() string {
	return "sbx-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(callGroups.Add(1), 10)
}

// ensureV2Parent creates sbx's own subtree when it is the parent, and
// enables the call's controllers down to the call group. Enabling is
// idempotent, and needed on every call: the subtree may have been made by a
// call that asked for none.
func ensureV2Parent(cp *CgroupPlan) error {
	var enable []string
	for _, c := range cp.V2Controllers {
		enable = append(enable, "+"+c)
	}
	if cp.V2Top != "" {
		if len(enable) > 0 {
			if err := writeFile(filepath.Join(cp.V2Top, "cgroup.subtree_control"), strings.Join(enable, " ")); err != nil {
				return err
			}
		}
		if err := os.Mkdir(cp.V2Parent, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("cgroup: %w", err)
		}
	}
	if len(enable) == 0 {
		return nil
	}
	return writeFile(filepath.Join(cp.V2Parent, "cgroup.subtree_control"), strings.Join(enable, " "))
}

// sweepEvery is how often one process sweeps a parent: a server makes a
// group for many calls, and reading the parent for every one of them was
// ~2% of a danger-full-access call's CPU. A dead process's empty group
// waits that much longer to go; it holds nothing and no call uses it (each
// group's name is its process's pid and call number).
const sweepEvery = 10 * time.Second

// swept is when this process last swept each parent.
var swept struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// sweepStale removes the empty call groups of sbx processes that died
// without cleaning up (SIGKILL): rmdir fails on a group still in use. Each
// parent is swept at the first call of a process, then at most every
// sweepEvery.
func sweepStale(parent string) {
	now := time.Now()
	swept.mu.Lock()
	if t, ok := swept.last[parent]; ok && now.Sub(t) < sweepEvery {
		swept.mu.Unlock()
		return
	}
	if swept.last == nil {
		swept.last = map[string]time.Time{}
	}
	swept.last[parent] = now
	swept.mu.Unlock()
	entries, _ := os.ReadDir(parent)
	for _, e := range entries {
		pid, ok := strings.CutPrefix(e.Name(), "sbx-")
		if !ok || !e.IsDir() {
			continue
		}
		pid, _, _ = strings.Cut(pid, "-") // sbx-PID-N (or sbx-PID, before)
		if n, err := strconv.Atoi(pid); err == nil && unix.Kill(n, 0) == unix.ESRCH {
			unix.Rmdir(filepath.Join(parent, e.Name()))
		}
	}
}

// writeLimit sets controller c's limit from l in dir, in the file names of
// cgroup version v.
func writeLimit(dir, c string, v int, l report.Limits) error {
	const period = 100000 // µs, the kernel's default CFS period
	var files [][2]string
	switch {
	case c == ctlMemory && v == 2:
		files = [][2]string{{"memory.max", strconv.FormatInt(l.MemoryBytes, 10)}, {"memory.swap.max", "0"}}
	case c == ctlMemory:
		// memsw (memory+swap) keeps the limit from being dodged by swapping;
		// it exists only with swap accounting and must follow the plain one.
		files = [][2]string{{"memory.limit_in_bytes", strconv.FormatInt(l.MemoryBytes, 10)}, {"memory.memsw.limit_in_bytes", strconv.FormatInt(l.MemoryBytes, 10)}}
	case c == ctlPids:
		files = [][2]string{{"pids.max", strconv.Itoa(l.Pids)}}
	case c == ctlCPU && v == 2:
		files = [][2]string{{"cpu.max", fmt.Sprintf("%d %d", int64(l.CPUs*period), period)}}
	case c == ctlCPU:
		files = [][2]string{{"cpu.cfs_period_us", strconv.Itoa(period)}, {"cpu.cfs_quota_us", strconv.FormatInt(int64(l.CPUs*period), 10)}}
	}
	for i, f := range files {
		err := writeFile(filepath.Join(dir, f[0]), f[1])
		if err != nil && i > 0 && errors.Is(err, os.ErrNotExist) {
			continue // the optional swap file: no swap accounting
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// writeFile writes an existing control file: never creating one, so a
// missing controller file is an error rather than a limit silently unset.
func writeFile(path, s string) error {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err == nil {
		_, err = unix.Write(fd, []byte(s))
		if cerr := unix.Close(fd); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("cgroup: write %q to %s: %w", s, path, err)
	}
	return nil
}

// readFile reads a cgroup control file with plain system calls, as
// writeFile writes one: an *os.File registers with Go's poller, and a
// kernfs file that supports poll (memory.events, cgroup.events) then costs
// an epoll_ctl to add and another to remove, with an fstat: ~15 µs of each
// call group's kill and usage (#31).
func readFile(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	b := make([]byte, 0, 512)
	for {
		if len(b) == cap(b) {
			b = slices.Grow(b, cap(b))
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return b, nil
		}
		b = b[:len(b)+n]
	}
}

// joinV1 moves the calling (launcher) thread into the v1 groups: a thread's
// children are born in its groups, and v1 has no CLONE_INTO_CGROUP.
func (cg *callCgroup) joinV1() error {
	tid := strconv.Itoa(unix.Gettid())
	for _, c := range sortedKeys(cg.v1) {
		if err := writeFile(filepath.Join(cg.v1[c], "tasks"), tid); err != nil {
			return err
		}
	}
	return nil
}

// leaveV1 moves the launcher thread back to sbx's own groups once it has
// forked, so it is neither counted nor charged as part of the call.
func (cg *callCgroup) leaveV1() {
	tid := []byte(strconv.Itoa(unix.Gettid()))
	for _, f := range cg.leave {
		f.Write(tid)
		f.Close()
	}
	cg.leave = nil
}

// cgroupUsage is what the call's groups measured; an OK flag is false for
// a figure no group measured.
type cgroupUsage struct {
	peak     int64
	peakOK   bool
	cpuMS    int64
	cpuOK    bool
	oomKills int
}

func (cg *callCgroup) usage() cgroupUsage {
	var u cgroupUsage
	if cg.v2 != "" {
		if v, err := readInt(filepath.Join(cg.v2, "memory.peak")); err == nil {
			u.peak, u.peakOK = v, true
		}
		// cpu.stat is a core file: there even without the cpu controller.
		if v, ok := readKey(filepath.Join(cg.v2, "cpu.stat"), "usage_usec"); ok {
			u.cpuMS, u.cpuOK = v/1000, true
		}
		if v, ok := readKey(filepath.Join(cg.v2, "memory.events"), "oom_kill"); ok {
			u.oomKills = int(v)
		}
	}
	if dir := cg.v1[ctlMemory]; dir != "" {
		if v, err := readInt(filepath.Join(dir, "memory.max_usage_in_bytes")); err == nil {
			u.peak, u.peakOK = v, true
		}
		if v, ok := readKey(filepath.Join(dir, "memory.oom_control"), "oom_kill"); ok {
			u.oomKills = int(v)
		}
	}
	return u
}

// Resources reports how the call's limits were enforced and what it used,
// from its groups where they measured it, else from the command's rusage.
func (pr *Process) Resources(ru syscall.Rusage) report.Resources {
	r := report.Resources{Mechanism: "none", PeakMemorySource: "rusage", OOMKills: pr.usage.oomKills}
	if pr.plan != nil {
		r.Limits = pr.plan.Limits
		if pr.plan.LimitMechanism != "" {
			r.Mechanism = pr.plan.LimitMechanism
		}
	}
	r.PeakMemoryBytes = ru.Maxrss * 1024
	if pr.usage.peakOK {
		r.PeakMemoryBytes, r.PeakMemorySource = pr.usage.peak, "cgroup"
	}
	r.CPUTimeMS = (ru.Utime.Nano() + ru.Stime.Nano()) / 1e6
	if pr.usage.cpuOK {
		r.CPUTimeMS = pr.usage.cpuMS
	}
	return r
}

// kill ends every process still in the call's groups, for launches without
// a PID namespace to do it (setsid and double-fork escapees included).
func (cg *callCgroup) kill() {
	if cg.v2 != "" && writeFile(filepath.Join(cg.v2, "cgroup.kill"), "1") == nil {
		return
	}
	for _, dir := range cg.dirs() {
		// Without cgroup.kill (before 5.14, or v1) a forking tree can add
		// processes while we kill: repeat until the group is empty.
		for range 100 {
			pids := readPids(filepath.Join(dir, "cgroup.procs"))
			if len(pids) == 0 {
				break
			}
			for _, pid := range pids {
				unix.Kill(pid, unix.SIGKILL)
			}
		}
	}
}

// dirs are the call's group directories: v2 first, then v1 by controller.
func (cg *callCgroup) dirs() []string {
	var dirs []string
	if cg.v2 != "" {
		dirs = append(dirs, cg.v2)
	}
	for _, c := range sortedKeys(cg.v1) {
		dirs = append(dirs, cg.v1[c])
	}
	return dirs
}

// remove deletes the call's groups. The killed processes leave their groups
// only once reaped (by their parent, or by init for orphans), so rmdir is
// retried briefly; a group still busy after that is left for the next
// call's sweep.
func (cg *callCgroup) remove() {
	for _, f := range cg.leave {
		f.Close()
	}
	if cg.v2fd >= 0 {
		unix.Close(cg.v2fd)
		cg.v2fd = -1
	}
	for _, dir := range cg.dirs() {
		for i := 0; i < 50; i++ {
			if err := unix.Rmdir(dir); err != unix.EBUSY {
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
}

// setCgroupFD clones a child into the call's v2 group.
func (cg *callCgroup) setCgroupFD(sys *syscall.SysProcAttr) {
	if cg != nil && cg.v2fd >= 0 {
		sys.UseCgroupFD, sys.CgroupFD = true, cg.v2fd
	}
}

func readInt(path string) (int64, error) {
	b, err := readFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// readKey reads "key value" from a flat-keyed cgroup file.
func readKey(path, key string) (int64, bool) {
	b, err := readFile(path)
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+" "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

func readPids(path string) []int {
	b, _ := readFile(path)
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			pids = append(pids, n)
		}
	}
	return pids
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
