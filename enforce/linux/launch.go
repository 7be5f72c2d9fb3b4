//go:build linux

package linux

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/enforce"
	"github.com/sbx-sandbox/sbx/policy"
	"github.com/sbx-sandbox/sbx/profiles"
)

// Spec is the command one call runs.
type Spec = enforce.Command

// Process is a started command.
type Process struct {
	Pid     int
	initPid int // PID namespace init of a thread launch, 0 if none
	// lifeline keeps the namespace's init (thread launch) or the stage
	// (stage launch) alive; closing it ends them.
	lifeline *os.File
	// done delivers the stage launch's exit; a thread launch has none:
	// Wait reaps its command itself.
	done chan exitResult
	// stageInit: the command is the child of a stage that is PID 1 of the
	// call's PID namespace (Pid is the stage's).
	stageInit bool
	// release, closed once the command is reaped, ends a thread launch's
	// launcher thread, which must outlive the command: parent-death
	// signals fire when the forking thread exits.
	release chan struct{}
	// sup is the seccomp supervisor, nil when the plan has none.
	sup *supervisor
	// cg is the call's control groups, nil when the plan has none; usage is
	// what they measured, read when the call ends.
	cg    *callCgroup
	plan  *Plan
	usage cgroupUsage
	// placeholders are the carve-out placeholders this call made, removed
	// by Wait.
	placeholders []string
	// proxy serves network by domain (proxy.go), nil without; Wait ends it.
	proxy *proxyServer
}

type exitResult struct {
	status syscall.WaitStatus
	rusage syscall.Rusage
	err    error
}

// ErrUserNS wraps a failure to make the stage's user namespace that the
// sysctls did not predict: a container runtime's seccomp profile, an LSM,
// or sbx running inside another sandbox (whose Landlock domain forbids
// writing the uid map). The caller may fall back to a launch without
// namespaces (see TryUserNS), reported.
var ErrUserNS = errors.New("user namespace")

// ErrStart wraps errors of the exec itself (command missing, not executable),
// as opposed to failures to set up the sandbox.
var ErrStart = errors.New("start")

// Start launches spec under p. The restrictions are applied before the
// command's first instruction: on a dedicated, locked launcher thread that
// forks the command (LaunchThread), or in a re-executed sbx stage inside new
// namespaces (LaunchStage), or not at all (LaunchDirect).
func Start(p *Plan, spec Spec) (*Process, error) {
	var pre *prestarted
	var preStage *stageProc
	if p.Launch == LaunchStage {
		preStage = takePending().forStage(p, spec)
	} else {
		pre = takePending().forThread(p)
	}
	if preStage != nil {
		// Whatever fails before it runs, it must not wait for a plan.
		defer func() {
			if preStage != nil {
				preStage.kill()
			}
		}()
	}
	if err := markInheritedCloexec(); err != nil {
		pre.end()
		return nil, err
	}
	if p.Launch == LaunchThread {
		// sbx's own environment holds what it strips from the command's;
		// where the command shares sbx's PID namespace and uid (no
		// namespaces can be made), /proc/<sbx>/environ and mem would be
		// open to it. A process that is not dumpable has its /proc files
		// owned by root and needs CAP_SYS_PTRACE to be read. (Not for a
		// stage launch: the uid map of a stage, still sbx's clone, must
		// stay writable by the caller; its command sees a PID namespace
		// of its own anyway.)
		if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
			pre.end()
			return nil, fmt.Errorf("prctl(PR_SET_DUMPABLE): %w", err)
		}
	}
	made, err := makePlaceholders(p.Placeholders)
	if err != nil {
		pre.end()
		return nil, err
	}
	// Removed once the call is over, and on every failure before that.
	ok := false
	defer func() {
		if !ok {
			removePlaceholders(made)
		}
	}()
	var sup *supervisor
	if p.Supervise != SuperviseOff && p.Launch != LaunchDirect {
		if sup, err = newSupervisor(p); err != nil {
			pre.end()
			return nil, err
		}
	}
	var cg *callCgroup
	if p.Cgroup != nil {
		if cg, err = createCgroups(p.Cgroup, p.Limits); err != nil {
			pre.end()
			if sup != nil {
				sup.release()
			}
			return nil, err
		}
	}
	var pr *Process
	switch {
	case preStage != nil:
		st := preStage
		preStage = nil
		pr, err = st.run(p, spec, sup)
	case p.Launch == LaunchStage:
		pr, err = startStage(p, spec, sup, cg)
	default:
		pr, err = startThread(p, spec, sup, cg, pre)
	}
	if err != nil {
		if sup != nil {
			sup.release()
		}
		if cg != nil {
			cg.remove()
		}
		return nil, err
	}
	pr.cg, pr.plan, pr.placeholders = cg, p, made
	ok = true
	return pr, nil
}

// EndSupervision stops the seccomp supervisor, once the command has ended,
// and returns what it saw. Without a supervisor it returns nothing.
func (pr *Process) EndSupervision() SupervisionResult {
	if pr.sup == nil {
		return SupervisionResult{}
	}
	res := pr.sup.finish()
	pr.sup = nil
	return res
}

// Wait waits for the command to end, then ends every process it left in
// its PID namespace and control groups, and removes the groups.
func (pr *Process) Wait() (syscall.WaitStatus, syscall.Rusage, error) {
	var r exitResult
	if pr.done != nil {
		r = <-pr.done
	} else {
		r = wait(pr.Pid)
	}
	pr.stopInit()
	pr.proxy.close()
	removePlaceholders(pr.placeholders)
	pr.placeholders = nil
	if pr.release != nil {
		close(pr.release)
		pr.release = nil
	}
	if pr.cg != nil {
		pr.cg.kill()
		pr.usage = pr.cg.usage()
		pr.cg.remove()
		pr.cg = nil
	}
	return r.status, r.rusage, r.err
}

// stopInit kills the PID namespace's init, which kills every process in the
// namespace, and reaps it: Wait returns once they are all gone. It must not
// run on the restricted launcher thread: Landlock's signal scope forbids
// signalling init, which was started before the restrictions. (The thread's
// exit would also kill init through its parent-death signal, but without
// waiting for it.)
func (pr *Process) stopInit() {
	if pr.lifeline != nil {
		pr.lifeline.Close()
		pr.lifeline = nil
	}
	if pr.initPid <= 0 {
		return
	}
	pid := pr.initPid
	pr.initPid = 0
	// With nothing else in the namespace, reaping init can happen off the
	// call's path (~0.1 ms here, a wake-up of each side); but not when it
	// is in the call's cgroups, which cannot be removed before it is gone.
	alone := pr.cg == nil && initAlone(pid)
	unix.Kill(pid, unix.SIGKILL)
	if alone {
		go wait(pid)
		return
	}
	wait(pid)
}

// initAlone reports whether init is the last process in its namespace once
// the command has been reaped: every process left there is then init's
// child (orphans are re-parented to it) or a descendant of one. When the
// kernel does not list children (no CONFIG_PROC_CHILDREN), it says no.
func initAlone(pid int) bool {
	c, err := children(pid)
	return err == nil && len(c) == 0
}

// children lists the pids of pid's children (of its main thread: the
// stage's and init's only forking thread).
func children(pid int) ([]string, error) {
	p := strconv.Itoa(pid)
	b, err := os.ReadFile("/proc/" + p + "/task/" + p + "/children")
	return strings.Fields(string(b)), err
}

// Signal sends sig to the command's process group (it leads a new session).
// Under a stage that is its namespace's init, the command is the stage's
// child, found by its pid in sbx's namespace; SIGKILL goes to the stage,
// whose death ends the whole namespace, and so does any signal sent before
// the command exists (the stage takes its default action).
func (pr *Process) Signal(sig syscall.Signal) error {
	pid := pr.Pid
	if pr.stageInit && sig != syscall.SIGKILL {
		if c := firstChild(pr.Pid); c > 0 {
			pid = c
		}
	}
	return syscall.Kill(-pid, sig)
}

// firstChild returns the first child of pid, 0 if it has none.
func firstChild(pid int) int {
	c, _ := children(pid)
	if len(c) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(c[0])
	return n
}

func procAttr(spec Spec, extra ...uintptr) *syscall.ProcAttr {
	return &syscall.ProcAttr{
		Dir:   spec.Dir,
		Env:   spec.Env,
		Files: append([]uintptr{spec.Stdin.Fd(), spec.Stdout.Fd(), spec.Stderr.Fd()}, extra...),
		Sys: &syscall.SysProcAttr{
			Setsid: true,
			// TIOCSCTTY on fd 0 (Ctty): the pty slave becomes the
			// session's terminal and the command its foreground group.
			Setctty:   spec.Terminal,
			Pdeathsig: syscall.SIGKILL,
		},
	}
}

// startThread restricts a fresh locked OS thread and forks the command from
// it, so the command inherits exactly that thread's Landlock domain, seccomp
// filter, no_new_privs and namespaces without a second Go start.
//
// IMPORTANT: the goroutine never unlocks its thread: the runtime would hand a
// restricted thread to other goroutines. It returns while locked, which makes
// the runtime end the thread. It also outlives the command, because
// PR_SET_PDEATHSIG fires when the forking thread exits.
//
// pre, when not nil, is a prestarted launcher thread (see Prestart) to run
// on instead of a new one.
func startThread(p *Plan, spec Spec, sup *supervisor, cg *callCgroup, pre *prestarted) (*Process, error) {
	type started struct {
		pid, initPid int
		lifeline     *os.File
		lis          listener
		proxy        *proxyServer
		err          error
	}
	startc := make(chan started, 1)
	// release is read here, not through pr in the launch: Wait sets
	// pr.release to nil once it closed it, and a launch that read the
	// field after that would wait on a nil channel, its locked thread
	// leaked for good (found by a long-lived server, under -race).
	release := make(chan struct{})
	pr := &Process{release: release}
	launch := func(pre nsDone) {
		st := started{lis: listener{fd: -1}}
		if cg != nil {
			if err := cg.joinV1(); err != nil {
				st.err = err
				startc <- st
				return
			}
			// Once it has forked, the thread leaves the groups again; on an
			// error return it dies, which leaves them too.
		}
		if p.Launch == LaunchThread {
			err := enterNamespaces(p, pre.flags)
			if err == nil && pre.flags&unix.CLONE_NEWNS == 0 {
				err = privateMounts(p)
			}
			st.initPid, st.lifeline = pre.initPid, pre.lifeline
			answers := pre.answers
			if err == nil && p.NewPIDNS && st.initPid == 0 {
				// Before the restrictions: init is exec'd from a memfd.
				st.initPid, st.lifeline, answers, err = startInit(cg)
			}
			if err == nil {
				err = setupNamespaces(p, pre.loopback, func() error { return mountProcByInit(st.lifeline, answers) })
			}
			if answers != nil {
				answers.Close()
			}
			if err == nil && p.Proxy {
				// In the call's network namespace, before Landlock's and
				// seccomp's network rules.
				st.proxy, spec.Env, err = startProxyHere(p, spec.Env)
			}
			if err == nil {
				err = dropCapabilities(p.Capabilities)
			}
			if err == nil {
				st.lis, err = restrictThread(p)
			}
			if err != nil {
				st.err = err
				startc <- st
				return
			}
		}
		if sup != nil {
			// Supervise before the fork: should a call between fork and
			// exec ever be one the filter notifies, an unanswered
			// notification would hang the vfork child and this thread.
			// (The runtime starts the supervisor's threads from its
			// template thread, never from this restricted one.)
			sup.attach(st.lis)
			st.lis = listener{fd: -1}
		}
		attr := procAttr(spec)
		if st.initPid > 0 {
			// Go's child would see getppid() == 0 across the PID namespace,
			// take its parent for dead and kill itself. Init's parent-death
			// signal covers the command: init's death kills the namespace.
			attr.Sys.Pdeathsig = 0
		}
		cg.setCgroupFD(attr.Sys)
		pid, err := syscall.ForkExec(spec.Path, spec.Argv, attr)
		if err != nil {
			st.err = fmt.Errorf("%w: %s: %w", ErrStart, spec.Argv[0], err)
			startc <- st
			return
		}
		st.pid = pid
		if cg != nil {
			cg.leaveV1()
		}
		startc <- st
		<-release
	}
	if pre != nil {
		pre.jobs <- launch
	} else {
		go func() {
			runtime.LockOSThread()
			launch(nsDone{})
		}()
	}
	s := <-startc
	pr.initPid, pr.lifeline, pr.proxy = s.initPid, s.lifeline, s.proxy
	if s.err != nil {
		pr.proxy.close()
		if s.lis.fd >= 0 {
			unix.Close(s.lis.fd)
		}
		pr.stopInit()
		return nil, s.err
	}
	if sup != nil {
		pr.sup = sup
	} else if s.lis.fd >= 0 {
		unix.Close(s.lis.fd)
	}
	pr.Pid = s.pid
	return pr, nil
}

func wait(pid int) exitResult {
	var r exitResult
	for {
		_, err := syscall.Wait4(pid, &r.status, 0, &r.rusage)
		if err != syscall.EINTR {
			r.err = err
			return r
		}
	}
}

// startInit starts the PID namespace's init (see initCode): the first child
// of a thread that unshared CLONE_NEWPID becomes PID 1 there. Its stdin is
// the read end of a pipe whose write end (close-on-exec, so never the
// command's) is returned as the lifeline: closing it, or sbx's death, ends
// init and the namespace; a byte written to it asks init to mount the
// call's procfs, and init answers on its stdout, whose read end is
// answers. Its stderr is /dev/null, so it never holds the command's pipes
// open.
func startInit(cg *callCgroup) (pid int, lifeline, answers *os.File, err error) {
	path, err := initExecutable()
	if err != nil {
		return 0, nil, nil, err
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("pid namespace init: %w", err)
	}
	defer null.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return 0, nil, nil, fmt.Errorf("pid namespace init: %w", err)
	}
	defer r.Close()
	ar, aw, err := os.Pipe()
	if err != nil {
		w.Close()
		return 0, nil, nil, fmt.Errorf("pid namespace init: %w", err)
	}
	defer aw.Close()
	sys := &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	cg.setCgroupFD(sys)
	pid, err = syscall.ForkExec(path, []string{"sbx-init"}, &syscall.ProcAttr{
		Dir: "/", Env: []string{}, Files: []uintptr{r.Fd(), aw.Fd(), null.Fd()}, Sys: sys,
	})
	if err != nil {
		w.Close()
		ar.Close()
		return 0, nil, nil, fmt.Errorf("pid namespace init: %w", err)
	}
	return pid, w, ar, nil
}

// mountProcByInit asks init to mount a procfs on /proc (see initCode) and
// waits for its answer: the mount's return value, 0 or -errno.
func mountProcByInit(lifeline, answers *os.File) error {
	if lifeline == nil || answers == nil {
		return errors.New("mount proc: no PID namespace init")
	}
	if _, err := lifeline.Write([]byte{1}); err != nil {
		return fmt.Errorf("mount proc: ask init: %w", err)
	}
	var b [8]byte
	if _, err := io.ReadFull(answers, b[:]); err != nil {
		return fmt.Errorf("mount proc: init's answer: %w", err)
	}
	if r := int64(binary.LittleEndian.Uint64(b[:])); r != 0 {
		return fmt.Errorf("mount proc: %w", syscall.Errno(-r))
	}
	return nil
}

// enterNamespaces moves the launcher thread into the new namespaces it is
// not in yet (done: those a prestarted thread unshared). Network, mount
// and (for its children) PID namespaces can be unshared by one thread of a
// multi-threaded process (a user namespace cannot: that uses the stage).
func enterNamespaces(p *Plan, done int) error {
	var flags int
	if p.NewPIDNS {
		flags |= unix.CLONE_NEWPID
	}
	if p.NewNetNS {
		flags |= unix.CLONE_NEWNET
	}
	if p.needsMountNS() {
		flags |= unix.CLONE_NEWNS
	}
	if p.NewUTSNS {
		flags |= unix.CLONE_NEWUTS
	}
	if p.NewIPCNS {
		flags |= unix.CLONE_NEWIPC
	}
	flags &^= done
	if flags == 0 {
		return nil
	}
	if err := unix.Unshare(flags); err != nil {
		return fmt.Errorf("unshare: %w", err)
	}
	return nil
}

// privateMounts keeps the mounts of a new mount namespace from
// propagating back to the host: the first step in it, before any mount.
func privateMounts(p *Plan) error {
	if !p.needsMountNS() {
		return nil
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("mount --make-rslave /: %w", err)
	}
	return nil
}

// setupNamespaces brings loopback up in a new network namespace (unless
// loopback says it is already) and makes the call's mounts, in this order
// (privateMounts has run): every mount outside the writable roots
// read-only, the carve-outs read-only, the call's own procfs (mountProc
// mounts it: init does, for a thread launch), then the guard's masks. It
// runs in the thread or stage that is already inside those namespaces.
func setupNamespaces(p *Plan, loopback bool, mountProc func() error) error {
	if p.NewNetNS && !loopback {
		if err := loopbackUp(); err != nil {
			return err
		}
	}
	if !p.needsMountNS() {
		return nil
	}
	if p.ReadOnlyRoot {
		if err := readOnlyRoot(p.Policy.WriteRoots); err != nil {
			return err
		}
	}
	for _, path := range p.ReadOnlyMounts {
		if err := bindReadOnly(path); err != nil {
			return err
		}
	}
	for _, path := range p.Placeholders {
		// One that makePlaceholders could not make (the caller may not
		// write its parent) is absent: the command, with the caller's
		// uid and no capability, cannot make it either.
		err := bindReadOnly(path)
		if err != nil && !errors.Is(err, unix.ENOENT) {
			return err
		}
	}
	if p.PrivateProc {
		if err := mountProc(); err != nil {
			return err
		}
		if err := protectProc(); err != nil {
			return err
		}
	}
	for _, path := range p.MaskedMounts {
		if err := mask(path); err != nil {
			return err
		}
	}
	return nil
}

// procReadOnly are the parts of a procfs that change the whole machine,
// not the call's processes: bind-mounted read-only over the call's procfs,
// as bubblewrap does, so that even a command that kept a capability (or a
// kernel without Landlock) cannot write sysctls or trigger SysRq.
var procReadOnly = []string{"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"}

func protectProc() error {
	for _, path := range procReadOnly {
		err := bindReadOnly(path)
		if errors.Is(err, unix.ENOENT) {
			continue // the kernel has no such entry (no CONFIG_PROC_SYSCTL, no IRQs shown)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// mountProcHere mounts a procfs on /proc from the calling process, which
// is inside the call's PID namespace (the stage, its PID 1).
func mountProcHere() error {
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount proc: %w", err)
	}
	return nil
}

// mask hides path: a directory under an empty read-only tmpfs, anything
// else under a read-only bind of /dev/null.
func mask(path string) error {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fmt.Errorf("mask %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		if err := unix.Mount("sbx-mask", path, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=0,mode=0500"); err != nil {
			return fmt.Errorf("mask %s: mount tmpfs: %w", path, err)
		}
		return nil
	}
	if err := unix.Mount("/dev/null", path, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("mask %s: bind /dev/null: %w", path, err)
	}
	if err := unix.Mount("", path, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mask %s: remount read-only: %w", path, err)
	}
	return nil
}

// readOnlyRoot confines writes to the writable roots with mounts, for
// kernels without Landlock: each root is bind-mounted onto itself (a mount
// of its own, writable), then every mount outside the roots is remounted
// read-only. Mounts at or below a root keep their flags. A mount point the
// caller cannot reach (EACCES, ENOENT) is left: the command cannot reach it
// either. Any other failure fails the launch rather than run less confined.
// The flags come from mountinfo, not statfs, so a hung network or FUSE
// mount is never asked.
func readOnlyRoot(writeRoots []string) error {
	for _, w := range writeRoots {
		if err := unix.Mount(w, w, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind mount writable root %s: %w", w, err)
		}
	}
	mounts, err := mountPoints()
	if err != nil {
		return err
	}
	for _, m := range mounts {
		if profiles.CoveredBy(m.path, writeRoots) {
			continue
		}
		err := remount(m.path, m.locked)
		if errors.Is(err, unix.EACCES) || errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// mountPoint is a mount point and the flags a remount of its top mount
// must keep.
type mountPoint struct {
	path   string
	locked uintptr
}

// mountOptionFlags are the per-mount options a remount must repeat: inside
// a user namespace they are locked, and a remount without them fails.
var mountOptionFlags = map[string]uintptr{
	"nosuid": unix.MS_NOSUID, "nodev": unix.MS_NODEV, "noexec": unix.MS_NOEXEC,
	"noatime": unix.MS_NOATIME, "nodiratime": unix.MS_NODIRATIME, "relatime": unix.MS_RELATIME,
}

// mountPoints lists the mount points of the calling thread's mount
// namespace, from /proc/thread-self/mountinfo: the fifth field (with the
// kernel's octal escapes of space, tab, newline and backslash undone) and
// the sixth, the per-mount options. Where mounts stack, the last line is
// the top one, whose flags count.
func mountPoints() ([]mountPoint, error) {
	b, err := os.ReadFile("/proc/thread-self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read-only root: %w", err)
	}
	return parseMountinfo(string(b))
}

func parseMountinfo(b string) ([]mountPoint, error) {
	var out []mountPoint
	for _, line := range strings.Split(b, "\n") {
		f := strings.Fields(line)
		if len(f) < 6 {
			continue
		}
		p, err := unescapeMountinfo(f[4])
		if err != nil {
			return nil, fmt.Errorf("read-only root: mountinfo %q: %w", line, err)
		}
		m := mountPoint{path: p}
		for _, o := range strings.Split(f[5], ",") {
			m.locked |= mountOptionFlags[o]
		}
		if i := slices.IndexFunc(out, func(x mountPoint) bool { return x.path == p }); i >= 0 {
			out[i] = m
		} else {
			out = append(out, m)
		}
	}
	return out, nil
}

func unescapeMountinfo(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+4 > len(s) {
			return "", fmt.Errorf("truncated escape %q", s[i:])
		}
		n, err := strconv.ParseUint(s[i+1:i+4], 8, 8)
		if err != nil {
			return "", fmt.Errorf("escape %q: %w", s[i:i+4], err)
		}
		b.WriteByte(byte(n))
		i += 3
	}
	return b.String(), nil
}

func bindReadOnly(path string) error {
	if err := unix.Mount(path, path, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind mount %s: %w", path, err)
	}
	return remountReadOnly(path)
}

// remountReadOnly makes the mount at path read-only.
func remountReadOnly(path string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return fmt.Errorf("statfs %s: %w", path, err)
	}
	var locked uintptr
	for _, f := range []struct{ st, ms uintptr }{
		{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if uintptr(st.Flags)&f.st != 0 {
			locked |= f.ms
		}
	}
	return remount(path, locked)
}

// remount makes the mount at path read-only, keeping its locked flags: a
// remount inside a user namespace must repeat the flags the original mount
// was locked with (nosuid, nodev, noexec, atime), or it fails.
func remount(path string, locked uintptr) error {
	if err := unix.Mount("", path, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|locked, ""); err != nil {
		return fmt.Errorf("remount %s read-only: %w", path, err)
	}
	return nil
}

func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("loopback: socket: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback: SIOCGIFFLAGS: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback: SIOCSIFFLAGS: %w", err)
	}
	return nil
}

// restrictThread applies no_new_privs, Landlock and seccomp to the calling
// thread, in that order: seccomp last so the filter need not allow the
// Landlock syscalls. For a supervised plan it returns the filter's listener.
func restrictThread(p *Plan) (listener, error) {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return listener{fd: -1}, fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if p.Landlock != nil {
		if err := p.Landlock.apply(); err != nil {
			return listener{fd: -1}, err
		}
	}
	return loadFilter(p)
}

// markInheritedCloexec marks every fd above stderr close-on-exec, so fds sbx
// inherited from its caller (which Landlock does not re-check) never reach
// the command. Go opens its own fds with O_CLOEXEC already.
func markInheritedCloexec() error {
	err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("close_range: %w", err)
	}
	// Kernels before 5.11: walk /proc/self/fd.
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("list open fds: %w", err)
	}
	for _, e := range entries {
		var fd int
		if _, err := fmt.Sscan(e.Name(), &fd); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
	return nil
}

// stagePayload is what the parent sends the stage on fd 3.
type stagePayload struct {
	// StatusFD is the stage's fd for the command's wait status when the
	// stage is PID 1 of a new PID namespace (0: exec the command instead).
	StatusFD int
	Plan     *stagePlan
	Path     string
	Argv     []string
	Dir      string
	Env      []string
	// ListenerSocket is the fd of the unix socket the stage sends its
	// seccomp listener on (SCM_RIGHTS), 0 when the plan is unsupervised.
	ListenerSocket int `json:",omitempty"`
	// Terminal: fds 0-2 are a pty slave that becomes the command's
	// controlling terminal (see Spec.Terminal).
	Terminal bool `json:",omitempty"`
	// ProxySocket is the fd of the socket the stage sends the proxy's
	// listening sockets on (sendProxy), before the seccomp listener; 0
	// without network by domain.
	ProxySocket int `json:",omitempty"`
}

// stagePlan is the part of a Plan the stage applies, all the payload
// carries: decoding a whole Plan (the policy, every downgrade's text) cost
// a stage ~0.7 ms before its first step, mostly building JSON decoders for
// types it never uses.
type stagePlan struct {
	NewPIDNS       bool          `json:",omitempty"`
	NewNetNS       bool          `json:",omitempty"`
	NewUTSNS       bool          `json:",omitempty"`
	NewIPCNS       bool          `json:",omitempty"`
	PrivateProc    bool          `json:",omitempty"`
	Capabilities   []int         `json:",omitempty"`
	Placeholders   []string      `json:",omitempty"`
	ReadOnlyRoot   bool          `json:",omitempty"`
	ReadOnlyMounts []string      `json:",omitempty"`
	MaskedMounts   []string      `json:",omitempty"`
	WriteRoots     []string      `json:",omitempty"`
	Landlock       *LandlockPlan `json:",omitempty"`
	Supervise      Supervise
	SeccompProg    BPFProgram
	SeccompPlain   BPFProgram `json:",omitempty"`
	Rlimits        []Rlimit   `json:",omitempty"`
}

func newStagePlan(p *Plan) *stagePlan {
	return &stagePlan{NewPIDNS: p.NewPIDNS, NewNetNS: p.NewNetNS, NewUTSNS: p.NewUTSNS, NewIPCNS: p.NewIPCNS,
		PrivateProc: p.PrivateProc, Capabilities: p.Capabilities, Placeholders: p.Placeholders, ReadOnlyRoot: p.ReadOnlyRoot,
		ReadOnlyMounts: p.ReadOnlyMounts, MaskedMounts: p.MaskedMounts, WriteRoots: p.Policy.WriteRoots,
		Landlock: p.Landlock, Supervise: p.Supervise, SeccompProg: p.SeccompProg, SeccompPlain: p.SeccompPlainProg,
		Rlimits: p.Rlimits}
}

// plan is the Plan the stage's steps take: sp's fields, nothing else.
func (sp *stagePlan) plan() *Plan {
	return &Plan{NewPIDNS: sp.NewPIDNS, NewNetNS: sp.NewNetNS, NewUTSNS: sp.NewUTSNS, NewIPCNS: sp.NewIPCNS,
		PrivateProc: sp.PrivateProc, Capabilities: sp.Capabilities, Placeholders: sp.Placeholders, ReadOnlyRoot: sp.ReadOnlyRoot,
		ReadOnlyMounts: sp.ReadOnlyMounts, MaskedMounts: sp.MaskedMounts, Policy: policy.Policy{WriteRoots: sp.WriteRoots},
		Landlock: sp.Landlock, Supervise: sp.Supervise, SeccompProg: sp.SeccompProg, SeccompPlainProg: sp.SeccompPlain,
		Rlimits: sp.Rlimits}
}

// startStage re-executes sbx as a hidden stage inside new user, PID and
// (as planned) network namespaces, and sends it the plan: see spawnStage
// and stageProc.run.
func startStage(p *Plan, spec Spec, sup *supervisor, cg *callCgroup) (*Process, error) {
	st, err := spawnStage(p.NewNetNS, p.NewPIDNS, [3]*os.File{spec.Stdin, spec.Stdout, spec.Stderr}, cg)
	if err != nil {
		return nil, err
	}
	return st.run(p, spec, sup)
}

// stageProc is a started stage waiting for its plan on its fd 3.
type stageProc struct {
	pid          int
	netns, pidns bool
	stdio        [3]*os.File
	plan         *os.File // fd 3's write end: the plan, then the stage's lifeline
	status       *os.File // the command's wait status (pidns), or nil
	listenerSock int      // where the stage's fd 4 sends the seccomp listener
	// reaped is closed once the stage is reaped: until then the thread
	// that forked it must not end, or its parent-death signal fires.
	reaped chan struct{}
}

// The stage's fds past stdio (see stagePayload).
const (
	stagePlanFD     = 3
	stageListenerFD = 4
	stageStatusFD   = 5
)

// stageCloneFlags are the namespaces a stage may be cloned into (the plan
// says which it was); the mount namespace it makes itself.
const stageCloneFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC

// spawnStage re-executes sbx as a hidden stage, with stdio as its fds 0-2,
// in new user and PID (pidns) and network (netns) namespaces. The parent,
// unrestricted, writes the uid/gid maps. The stage then waits for its plan
// (stageProc.run); a mount namespace, when the plan needs one, it makes
// itself.
func spawnStage(netns, pidns bool, stdio [3]*os.File, cg *callCgroup) (*stageProc, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("stage pipe: %w", err)
	}
	defer r.Close()
	// The stage names its seccomp listener on a socketpair (sbx takes it
	// with pidfd_getfd): its fd 4, close-on-exec there before the command
	// runs.
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("stage: listener socketpair: %w", err)
	}
	defer unix.Close(pair[1])
	st := &stageProc{netns: netns, pidns: pidns, stdio: stdio, plan: w, listenerSock: pair[0], reaped: make(chan struct{})}
	files := []uintptr{stdio[0].Fd(), stdio[1].Fd(), stdio[2].Fd(), r.Fd(), uintptr(pair[1])}
	// A stage that is PID 1 reports the command's raw wait status on a pipe:
	// as init it cannot die of the command's signal itself.
	if pidns {
		sr, sw, err := os.Pipe()
		if err != nil {
			st.close()
			return nil, fmt.Errorf("stage status pipe: %w", err)
		}
		defer sw.Close()
		st.status = sr
		files = append(files, sw.Fd())
	}
	flags := uintptr(unix.CLONE_NEWUSER | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC)
	if netns {
		flags |= unix.CLONE_NEWNET
	}
	if pidns {
		flags |= unix.CLONE_NEWPID
	}
	uid, gid := os.Getuid(), os.Getgid()
	sys := &syscall.SysProcAttr{
		Setsid: true, Pdeathsig: syscall.SIGKILL, Cloneflags: flags,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		// The stage keeps the caller's uid inside the namespace (so files
		// keep their owner and git its safe.directory view), so exec would
		// drop the capabilities it needs for loopback and mounts; carry
		// just those across as ambient capabilities, and CAP_SETPCAP to
		// empty the bounding set and lock the securebits. The stage drops
		// them all before the command's exec (dropCapabilities).
		AmbientCaps: []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP},
	}
	cg.setCgroupFD(sys)
	exe, err := os.Executable()
	if err != nil {
		st.close()
		return nil, fmt.Errorf("stage: locate sbx: %w", err)
	}
	st.pid, err = syscall.ForkExec(exe, []string{"sbx", StageCommand}, &syscall.ProcAttr{Dir: "/", Env: []string{}, Files: files, Sys: sys})
	if err != nil {
		st.close()
		return nil, fmt.Errorf("%w: stage: clone into new user namespace: %w", ErrUserNS, err)
	}
	return st, nil
}

// run sends the stage its plan and returns the running call.
func (st *stageProc) run(p *Plan, spec Spec, sup *supervisor) (*Process, error) {
	defer st.close()
	pl := stagePayload{Plan: newStagePlan(p), Path: spec.Path, Argv: spec.Argv, Dir: spec.Dir, Env: spec.Env, Terminal: spec.Terminal}
	if sup != nil {
		pl.ListenerSocket = stageListenerFD
	}
	if p.Proxy {
		pl.ProxySocket = stageListenerFD
	}
	if st.pidns {
		pl.StatusFD = stageStatusFD
	}
	payload, err := json.Marshal(pl)
	if err != nil {
		st.kill()
		return nil, fmt.Errorf("stage payload: %w", err)
	}
	pr := &Process{Pid: st.pid, done: make(chan exitResult, 1), stageInit: st.pidns}
	if st.pidns {
		// Keep the plan pipe open as the stage's lifeline (see StageMain).
		dup, err := unix.FcntlInt(st.plan.Fd(), unix.F_DUPFD_CLOEXEC, 3)
		if err != nil {
			st.kill()
			return nil, fmt.Errorf("stage: lifeline: %w", err)
		}
		pr.lifeline = os.NewFile(uintptr(dup), "stage-lifeline")
	}
	pid, status, reaped, argv0 := st.pid, st.status, st.reaped, spec.Argv[0]
	st.status = nil
	go func() {
		res := wait(pid)
		close(reaped)
		if status != nil {
			stageStatus(status, &res, argv0)
			status.Close()
		}
		pr.done <- res
	}()
	if _, err := st.plan.Write(payload); err != nil {
		return nil, fmt.Errorf("stage: send plan: %w", err)
	}
	if p.Proxy {
		if err := pr.takeProxy(p, st); err != nil {
			return nil, err
		}
	}
	if sup != nil {
		sup.receive(st.listenerSock, st.pid)
		st.listenerSock = -1
		pr.sup = sup
	}
	return pr, nil
}

// stageExecFailed on the status pipe says the stage could not execute the
// command, stageNoMounts that it could not make its mounts (before anything
// ran); the errno follows. Neither is a wait status: those fit in 16 bits.
const (
	stageExecFailed = 0xFFFFFFFF
	stageNoMounts   = 0xFFFFFFFE
)

// stageFailure is the stage's side of stageStatus for a failure: marker
// (stageExecFailed, stageNoMounts), then errno.
func stageFailure(status *os.File, marker uint32, errno syscall.Errno) {
	var b [8]byte
	binary.LittleEndian.PutUint32(b[:4], marker)
	binary.LittleEndian.PutUint32(b[4:], uint32(errno))
	status.Write(b[:])
}

// stageStatus reads what a stage that is PID 1 reports on its status pipe:
// the command's raw wait status, or stageExecFailed and the errno of the
// exec, which becomes res.err as a thread launch's ForkExec error would
// (wrapping ErrStart, so the exit status is 126 or 127 and the result has
// the errno).
func stageStatus(status *os.File, res *exitResult, argv0 string) {
	var b [8]byte
	if n, _ := io.ReadFull(status, b[:4]); n != 4 {
		return
	}
	v := binary.LittleEndian.Uint32(b[:4])
	if v != stageExecFailed && v != stageNoMounts {
		res.status = syscall.WaitStatus(v)
		return
	}
	if n, _ := io.ReadFull(status, b[4:]); n != 4 {
		return
	}
	errno := syscall.Errno(binary.LittleEndian.Uint32(b[4:]))
	if v == stageNoMounts {
		res.err = fmt.Errorf("%w: the stage's mount namespace refuses mounts (a sandbox around sbx?): mount --make-rslave /: %w", ErrUserNS, errno)
		return
	}
	res.err = fmt.Errorf("%w: %s: %w", ErrStart, argv0, errno)
}

// kill ends a stage that will not run a command, and reaps it in the
// background.
func (st *stageProc) kill() {
	unix.Kill(st.pid, unix.SIGKILL)
	st.close()
	go func() {
		wait(st.pid)
		close(st.reaped)
	}()
}

// close releases the parent's ends of the stage's pipes.
func (st *stageProc) close() {
	for _, f := range []*os.File{st.plan, st.status} {
		if f != nil {
			f.Close()
		}
	}
	st.plan, st.status = nil, nil
	if st.listenerSock >= 0 {
		unix.Close(st.listenerSock)
		st.listenerSock = -1
	}
}

// StageCommand is the hidden subcommand that runs StageMain.
const StageCommand = "__stage"

// StageMain is the stage side of startStage. It returns only on failure,
// with the exit status to use (125 for sandbox setup, 126/127 for exec).
func StageMain() int {
	if len(os.Args) > 2 && os.Args[2] == limitedExecArg {
		return limitedExec(os.Args[3:])
	}
	// Main thread is locked by the sbx binary's init; the restrictions
	// below apply to it and to the program it execs.
	f := os.NewFile(stagePlanFD, "stage-plan")
	var pl stagePayload
	err := json.NewDecoder(f).Decode(&pl)
	if err != nil || pl.StatusFD == 0 {
		f.Close()
	} else {
		// The plan pipe is also the stage's lifeline: sbx keeps its end open
		// while the call runs, and its death (even of SIGKILL) closes it.
		go func() {
			io.Copy(io.Discard, f)
			os.Exit(137)
		}()
	}
	if err != nil || pl.Plan == nil {
		fmt.Fprintf(os.Stderr, "sbx stage: read plan: %v\n", err)
		return 125
	}
	plan := pl.Plan.plan()
	// The PID and network namespaces came with the stage's clone; a mount
	// namespace it makes itself, so that a stage can be spawned before
	// the plan says whether one is needed (see Prestart).
	err = enterNamespaces(plan, stageCloneFlags)
	if err == nil {
		err = privateMounts(plan)
		if errors.Is(err, unix.EPERM) && pl.StatusFD > 0 {
			// The namespaces were made, but no mount can be: a sandbox
			// around sbx refuses mount (sbx in sbx on a kernel without
			// Landlock, where the uid map write went through). Nothing
			// has run: sbx falls back to a launch without namespaces.
			stageFailure(os.NewFile(uintptr(pl.StatusFD), "stage-status"), stageNoMounts, unix.EPERM)
			return 125
		}
	}
	if err == nil {
		err = setupNamespaces(plan, false, mountProcHere)
	}
	if err == nil && pl.ProxySocket > 0 {
		var addr string
		if addr, err = sendProxy(pl.ProxySocket); err == nil {
			pl.Env = withProxyEnv(pl.Env, addr)
		}
	}
	if err == nil {
		err = dropCapabilities(plan.Capabilities)
	}
	if err == nil {
		var lis listener
		lis, err = restrictThread(plan)
		if err == nil && pl.ListenerSocket > 0 {
			// Before exec, so the parent is supervising by the time the
			// command makes its first supervised call (which would wait for
			// it anyway). Neither fd reaches the command.
			err = sendListener(pl.ListenerSocket, lis)
			unix.Close(pl.ListenerSocket)
		}
		if lis.fd >= 0 {
			unix.Close(lis.fd)
		}
	}
	if err == nil {
		err = markInheritedCloexec()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "sbx stage: %v\n", err)
		return 125
	}
	if err := unix.Chdir(pl.Dir); err != nil {
		fmt.Fprintf(os.Stderr, "sbx: chdir %s: %v\n", pl.Dir, err)
		return 125
	}
	if pl.StatusFD > 0 {
		return stageInit(pl)
	}
	if err := setRlimits(plan.Rlimits); err != nil {
		fmt.Fprintf(os.Stderr, "sbx stage: %v\n", err)
		return 125
	}
	err = unix.Exec(pl.Path, pl.Argv, pl.Env)
	fmt.Fprintf(os.Stderr, "sbx: %s: %v\n", pl.Argv[0], err)
	return ExecFailureStatus(err)
}

// stageInit runs the command as a child of the stage, which is PID 1 of the
// call's PID namespace: it reaps orphans and reports the command's wait
// status on StatusFD. sbx signals the command directly (Process.Signal), so
// the stage subscribes to none: that would cost its start a round trip to
// the runtime's signal thread per signal. When it returns, the kernel kills
// whatever is left in the namespace, and if sbx dies first, the stage's
// parent-death signal does.
func stageInit(pl stagePayload) int {
	status := os.NewFile(uintptr(pl.StatusFD), "stage-status")
	// The fork runs on this (restricted, locked) main thread, so the command
	// inherits its restrictions.
	path, argv, err := limitedArgv(pl)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sbx stage: %v\n", err)
		return 125
	}
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{Env: pl.Env,
		Files: []uintptr{0, 1, 2}, Sys: &syscall.SysProcAttr{Setsid: true, Setctty: pl.Terminal}})
	if err != nil {
		// sbx reports it, as it reports a thread launch's: the errno
		// after the marker (see stageStatus).
		var errno syscall.Errno
		if !errors.As(err, &errno) {
			errno = syscall.EINVAL
		}
		stageFailure(status, stageExecFailed, errno)
		return ExecFailureStatus(err)
	}
	for {
		var ws syscall.WaitStatus
		wpid, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "sbx stage: wait: %v\n", err)
			return 125
		}
		if wpid == pid {
			var b [4]byte
			binary.LittleEndian.PutUint32(b[:], uint32(ws))
			status.Write(b[:])
			return 0
		}
	}
}

// ExecFailureStatus maps an exec error to the shell convention: 127 when the
// command does not exist, 126 when it cannot be executed, and 125 (sbx
// refused the call) for E2BIG: arguments and environment too large for the
// kernel are bad input, not a file that is not executable.
func ExecFailureStatus(err error) int {
	switch {
	case errors.Is(err, unix.ENOENT):
		return 127
	case errors.Is(err, unix.E2BIG):
		return 125
	}
	return 126
}
