//go:build linux

package linux

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/report"
)

// An unprivileged sbx serve makes one user namespace when it starts and
// serves from inside it (SpawnServerUserNS, EnterServerUserNS): there it
// holds the capabilities a thread launch needs, so each call is launched
// from a locked launcher thread as root's are, without a stage and its Go
// start per call. The namespace maps only the caller's uid and gid, to
// themselves: files keep their owner, and its capabilities reach nothing
// of the host's that the caller could not already reach (a capability in
// a user namespace covers only what that namespace owns: the call
// namespaces the server makes inside it).

// serverUserNSCaps are what the launcher thread uses inside the server's
// user namespace: CAP_SYS_ADMIN to unshare the call's namespaces and make
// its mounts (and init's procfs), CAP_NET_ADMIN for loopback in the call's
// network namespace, CAP_SETPCAP to empty the bounding set and lock the
// securebits (dropCapabilities). Nothing else: root's thread launch uses
// no other (a kill of init is the same uid's; cgroups and files are reached
// as the caller, since a capability of this namespace does not cover files
// of uids it does not map).
var serverUserNSCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP}

// inServerUserNS: EnterServerUserNS succeeded; Probe reports it.
var inServerUserNS bool

// ServerUserNSChild is a server re-executed inside its user namespace.
type ServerUserNSChild struct {
	Pid int
	// Ctl is sbx's end of the child's control socket: first one line, "ok"
	// once the child entered its namespace (EnterServerUserNS), or the
	// error that kept it from serving there; then the child's direct
	// launches (ServeDirect).
	Ctl *os.File
}

// SpawnServerUserNS re-executes sbx with argv inside a new user namespace
// that maps the caller's uid and gid to themselves, with the capabilities
// of serverUserNSCaps carried across the exec as ambient ones (as a
// stage's). files become the child's fds 0, 1, 2, ... (-1: closed);
// readyFD is where it gets its end of the control socket. The child gets
// SIGKILL when the calling thread ends (it must be locked to it), and keeps
// sbx's session, process group and environment.
//
// It needs x86-64 (the thread launch's PID namespace init) and user
// namespaces; a failure to make the namespace wraps ErrUserNS.
func SpawnServerUserNS(argv []string, files []int, readyFD int) (*ServerUserNSChild, error) {
	if runtime.GOARCH != "amd64" {
		return nil, &report.UnsupportedFeatureError{Feature: report.FeatureServerUserNS, Reason: "the thread launch's PID namespace init is x86-64 code"}
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("server user namespace: locate sbx: %w", err)
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("server user namespace: control socket: %w", err)
	}
	r := os.NewFile(uintptr(pair[0]), "server-ctl")
	defer unix.Close(pair[1])
	fds := make([]uintptr, max(len(files), readyFD+1))
	for i := range fds {
		fds[i] = ^uintptr(0) // closed in the child
		if i < len(files) && files[i] >= 0 {
			fds[i] = uintptr(files[i])
		}
	}
	fds[readyFD] = uintptr(pair[1])
	uid, gid := os.Getuid(), os.Getgid()
	sys := &syscall.SysProcAttr{
		Cloneflags: unix.CLONE_NEWUSER, Pdeathsig: syscall.SIGKILL,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		AmbientCaps: serverUserNSCaps,
	}
	pid, err := syscall.ForkExec(exe, argv, &syscall.ProcAttr{Env: os.Environ(), Files: fds, Sys: sys})
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("%w: server: clone into new user namespace: %w", ErrUserNS, err)
	}
	return &ServerUserNSChild{Pid: pid, Ctl: r}, nil
}

// EnterServerUserNS is the child side of SpawnServerUserNS, before it
// serves, ctl its control socket (kept for the direct launches, see
// directCtl): it checks that it holds serverUserNSCaps, then clears the ambient
// set of every thread, so that no program the server runs otherwise (an
// approver, a danger-full-access command, sbx itself) keeps a capability
// across its exec. Only the launcher thread raises them again, for init,
// the one program it execs that needs them (raiseLaunchAmbient); the
// command's exec follows dropCapabilities. Once it returns nil, Probe
// reports ServerUserNS.
//
// It fails (and the caller serves as an unprivileged server does, one
// stage per call) when a capability is missing or the ambient sets cannot
// be cleared on every thread (a binary built with cgo: ENOTSUP).
func EnterServerUserNS(ctl *os.File) error {
	// Never a command's, nor an approver's (os/exec passes on every fd
	// not marked).
	unix.CloseOnExec(int(ctl.Fd()))
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	for _, c := range serverUserNSCaps {
		if data[0].Effective&(1<<c) == 0 || data[0].Inheritable&(1<<c) == 0 {
			return fmt.Errorf("server user namespace: %s not held", CapabilityName(int(c)))
		}
	}
	if err := probeThreadLaunch(); err != nil {
		return fmt.Errorf("server user namespace: a launcher thread cannot make a call's namespaces in it: %w", err)
	}
	if _, _, errno := syscall.AllThreadsSyscall(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0); errno != 0 {
		return fmt.Errorf("server user namespace: clear ambient capabilities on every thread: %w", errno)
	}
	// The inheritable set too (every thread has the same sets, as the
	// exec left them): no program's exec can gain one from a file.
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if _, _, errno := syscall.AllThreadsSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); errno != 0 {
		return fmt.Errorf("server user namespace: clear inheritable capabilities on every thread: %w", errno)
	}
	inServerUserNS, directCtl = true, ctl
	return nil
}

// probeThreadLaunch does on a throwaway locked thread what a thread launch
// does first: unshare the call's namespaces and make its mounts private.
// The namespace can be had where that cannot (sbx serve inside sbx run on
// a kernel without Landlock: the outer seccomp filter refuses mount), and
// the server must then serve as before, one stage per call, which falls
// back without namespaces, rather than fail every call.
func probeThreadLaunch() error {
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: the thread leaves sbx's namespaces and is ended
		// when this goroutine returns.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_NEWNET | unix.CLONE_NEWPID | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC); err != nil {
			errc <- fmt.Errorf("unshare: %w", err)
			return
		}
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
			errc <- fmt.Errorf("mount --make-rslave /: %w", err)
			return
		}
		errc <- nil
	}()
	return <-errc
}

// raiseLaunchAmbient raises serverUserNSCaps in the inheritable and ambient sets of the
// calling thread, inside the server's user namespace (else it does
// nothing): PID namespace init, exec'd from it, needs CAP_SYS_ADMIN to
// mount the call's procfs. The caller is a locked launcher thread that the
// runtime ends, never hands back (startThread, Prestart); its command's
// exec comes after dropCapabilities, which clears them again.
func raiseLaunchAmbient() error {
	if !inServerUserNS {
		return nil
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	for _, c := range serverUserNSCaps {
		data[0].Inheritable |= 1 << c
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	for _, c := range serverUserNSCaps {
		if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_RAISE, c, 0, 0); err != nil {
			return fmt.Errorf("raise ambient capability %s: %w", CapabilityName(int(c)), err)
		}
	}
	return nil
}

// stageInUserNS turns a thread launch planned inside the server's user
// namespace into the stage launch of an unprivileged sbx run: a user
// namespace of the call's own (nested in the server's), whose PID 1 is the
// stage. The rest of the plan is the same for both: Compile's user
// namespace and privileged cases differ only in the launch.
func (p *Plan) stageInUserNS() {
	p.Launch, p.NewUserNS, p.NewPIDNS = LaunchStage, true, true
	p.Downgrades = slices.DeleteFunc(p.Downgrades, func(d report.Downgrade) bool { return d.Feature == report.FeaturePIDNS })
}

// serverDumpable makes sbx not dumpable before a thread launch (see Start),
// except inside the server's user namespace: there the /proc files of a
// process that is not dumpable belong to the host's root, which the
// namespace does not map, and the uid map of a stage (a call with limits,
// stageInUserNS) could no longer be written. The server needs no such
// protection there: every thread of it keeps serverUserNSCaps permitted,
// and the kernel lets a process read another's environ, mem or fds only
// if it holds every capability the other has permitted (or
// CAP_SYS_PTRACE), which no command does; nor does a command see the
// server in its own PID namespace's procfs.
func serverDumpable(p *Plan) error {
	if p.ServerUserNS {
		return nil
	}
	return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}
