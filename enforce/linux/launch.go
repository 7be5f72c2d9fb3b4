//go:build linux

package linux

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// Spec is the command one call runs.
type Spec struct {
	// Path is the resolved executable; Argv[0] is what the command sees.
	Path string
	Argv []string
	Dir  string
	Env  []string
	// Stdin, Stdout and Stderr become fds 0, 1 and 2; nothing else is inherited.
	Stdin, Stdout, Stderr *os.File
}

// Process is a started command.
type Process struct {
	Pid  int
	done chan exitResult
}

type exitResult struct {
	status syscall.WaitStatus
	rusage syscall.Rusage
	err    error
}

// ErrStart wraps errors of the exec itself (command missing, not executable),
// as opposed to failures to set up the sandbox.
var ErrStart = errors.New("start")

// Start launches spec under p. The restrictions are applied before the
// command's first instruction: on a dedicated, locked launcher thread that
// forks the command (LaunchThread), or in a re-executed sbx stage inside new
// namespaces (LaunchStage), or not at all (LaunchDirect).
func Start(p *Plan, spec Spec) (*Process, error) {
	if err := markInheritedCloexec(); err != nil {
		return nil, err
	}
	switch p.Launch {
	case LaunchStage:
		return startStage(p, spec)
	default:
		return startThread(p, spec)
	}
}

// Wait waits for the command to end.
func (pr *Process) Wait() (syscall.WaitStatus, syscall.Rusage, error) {
	r := <-pr.done
	return r.status, r.rusage, r.err
}

// Signal sends sig to the command's process group (it leads a new session).
func (pr *Process) Signal(sig syscall.Signal) error {
	return syscall.Kill(-pr.Pid, sig)
}

func procAttr(spec Spec, extra ...uintptr) *syscall.ProcAttr {
	return &syscall.ProcAttr{
		Dir:   spec.Dir,
		Env:   spec.Env,
		Files: append([]uintptr{spec.Stdin.Fd(), spec.Stdout.Fd(), spec.Stderr.Fd()}, extra...),
		Sys: &syscall.SysProcAttr{
			Setsid:    true,
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
func startThread(p *Plan, spec Spec) (*Process, error) {
	type started struct {
		pid int
		err error
	}
	startc := make(chan started, 1)
	pr := &Process{done: make(chan exitResult, 1)}
	go func() {
		runtime.LockOSThread()
		if p.Launch == LaunchThread {
			if err := enterNamespaces(p); err != nil {
				startc <- started{err: err}
				return
			}
			if err := setupNamespaces(p); err != nil {
				startc <- started{err: err}
				return
			}
			if err := restrictThread(p); err != nil {
				startc <- started{err: err}
				return
			}
		}
		pid, err := syscall.ForkExec(spec.Path, spec.Argv, procAttr(spec))
		if err != nil {
			startc <- started{err: fmt.Errorf("%w: %s: %w", ErrStart, spec.Argv[0], err)}
			return
		}
		startc <- started{pid: pid}
		pr.done <- wait(pid)
	}()
	s := <-startc
	if s.err != nil {
		return nil, s.err
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

// enterNamespaces moves the launcher thread into new namespaces. Network and
// mount namespaces can be unshared by one thread of a multi-threaded process
// (a user namespace cannot: that case uses the stage).
func enterNamespaces(p *Plan) error {
	var flags int
	if p.NewNetNS {
		flags |= unix.CLONE_NEWNET
	}
	if p.needsMountNS() {
		flags |= unix.CLONE_NEWNS
	}
	if flags == 0 {
		return nil
	}
	if err := unix.Unshare(flags); err != nil {
		return fmt.Errorf("unshare: %w", err)
	}
	return nil
}

// setupNamespaces brings loopback up in a new network namespace and makes
// the carve-outs read-only in a new mount namespace. It runs in the thread
// or stage that is already inside those namespaces.
func setupNamespaces(p *Plan) error {
	if p.NewNetNS {
		if err := loopbackUp(); err != nil {
			return err
		}
	}
	if !p.needsMountNS() {
		return nil
	}
	// Our mounts must not propagate back to the host.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("mount --make-rslave /: %w", err)
	}
	for _, path := range p.ReadOnlyMounts {
		if err := bindReadOnly(path); err != nil {
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

func bindReadOnly(path string) error {
	if err := unix.Mount(path, path, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind mount %s: %w", path, err)
	}
	// A remount inside a user namespace must keep the flags the original
	// mount was locked with (nosuid, nodev, noexec, atime), or it fails.
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return fmt.Errorf("statfs %s: %w", path, err)
	}
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY)
	for _, f := range []struct{ st, ms uintptr }{
		{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if uintptr(st.Flags)&f.st != 0 {
			flags |= f.ms
		}
	}
	if err := unix.Mount("", path, "", flags, ""); err != nil {
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
// Landlock syscalls.
func restrictThread(p *Plan) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if p.Landlock != nil {
		if err := p.Landlock.apply(); err != nil {
			return err
		}
	}
	return LoadSeccomp(p.SeccompProg)
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
	Plan *Plan
	Path string
	Argv []string
	Dir  string
	Env  []string
}

// startStage re-executes sbx as a hidden stage inside a new user namespace
// (plus network and mount namespaces as planned). The parent, unrestricted,
// writes the uid/gid maps; the stage sets up loopback and mounts, restricts
// itself and execs the command, which keeps the stage's pid.
func startStage(p *Plan, spec Spec) (*Process, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("stage pipe: %w", err)
	}
	defer r.Close()
	defer w.Close()
	payload, err := json.Marshal(stagePayload{Plan: p, Path: spec.Path, Argv: spec.Argv, Dir: spec.Dir, Env: spec.Env})
	if err != nil {
		return nil, fmt.Errorf("stage payload: %w", err)
	}
	attr := procAttr(spec, r.Fd())
	attr.Dir = "/"
	attr.Env = []string{}
	flags := uintptr(unix.CLONE_NEWUSER)
	if p.NewNetNS {
		flags |= unix.CLONE_NEWNET
	}
	if p.needsMountNS() {
		flags |= unix.CLONE_NEWNS
	}
	attr.Sys.Cloneflags = flags
	uid, gid := os.Getuid(), os.Getgid()
	attr.Sys.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
	attr.Sys.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	// The stage keeps the caller's uid inside the namespace (so files keep
	// their owner and git its safe.directory view), so exec would drop the
	// capabilities it needs for loopback and mounts; carry just those two
	// across as ambient capabilities. The stage clears them before the
	// command's exec.
	attr.Sys.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("stage: locate sbx: %w", err)
	}
	pid, err := syscall.ForkExec(exe, []string{"sbx", StageCommand}, attr)
	if err != nil {
		return nil, fmt.Errorf("stage: clone into new user namespace: %w", err)
	}
	pr := &Process{Pid: pid, done: make(chan exitResult, 1)}
	go func() { pr.done <- wait(pid) }()
	r.Close()
	if _, err := w.Write(payload); err != nil {
		return nil, fmt.Errorf("stage: send plan: %w", err)
	}
	return pr, nil
}

// StageCommand is the hidden subcommand that runs StageMain.
const StageCommand = "__stage"

// StageMain is the stage side of startStage. It returns only on failure,
// with the exit status to use (125 for sandbox setup, 126/127 for exec).
func StageMain() int {
	// Main thread is locked by the sbx binary's init; the restrictions
	// below apply to it and to the program it execs.
	f := os.NewFile(3, "stage-plan")
	var pl stagePayload
	err := json.NewDecoder(f).Decode(&pl)
	f.Close()
	if err != nil || pl.Plan == nil {
		fmt.Fprintf(os.Stderr, "sbx stage: read plan: %v\n", err)
		return 125
	}
	err = setupNamespaces(pl.Plan)
	if err == nil {
		err = dropStageCaps()
	}
	if err == nil {
		err = restrictThread(pl.Plan)
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
	err = unix.Exec(pl.Path, pl.Argv, pl.Env)
	fmt.Fprintf(os.Stderr, "sbx: %s: %v\n", pl.Argv[0], err)
	return ExecFailureStatus(err)
}

// dropStageCaps clears the ambient and inheritable capabilities the stage
// was given, so the command's exec grants none.
func dropStageCaps() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}

// ExecFailureStatus maps an exec error to the shell convention: 127 when the
// command does not exist, 126 when it cannot be executed.
func ExecFailureStatus(err error) int {
	if errors.Is(err, unix.ENOENT) {
		return 127
	}
	return 126
}
