//go:build linux

package linux

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	supervise "github.com/sbx-sandbox/sbx/internal/enforce/linux/supervisor"
	"github.com/sbx-sandbox/sbx/internal/landlock"
)

// This file is what Probe learns of the running kernel and user (System).

// System is what the running kernel and user offer; Probe fills it.
type System struct {
	LandlockABI int
	// Privileged: sbx may create namespaces and mount without a user namespace.
	Privileged bool
	// UserNS: unprivileged user namespaces can be created. Not read
	// (false, no reason) when Privileged: such a launch needs none (see
	// probeFiles; doctor reads it for itself).
	UserNS bool
	// UserNSReason says why UserNS is false.
	UserNSReason string
	// UserNotif: seccomp user notification (Linux 5.0), for the supervisor.
	UserNotif bool
	// UserNotifReason says why UserNotif is false.
	UserNotifReason string
	// InitUserNS: sbx runs in the machine's initial user namespace (not
	// in a container's).
	InitUserNS bool
	// ProcFullyVisible: no mount hides part of the host's /proc (see
	// procFullyVisible), so a user namespace may mount a new procfs. Not
	// read (false) for root in the initial user namespace, which mounts
	// one regardless: reading mountinfo is ~50 µs of kernel time here,
	// ~0.1-0.2 ms at an `sbx run`'s cold start.
	ProcFullyVisible bool
	// ServerUserNS: sbx is the unprivileged sbx serve inside the user
	// namespace it made at start-up (EnterServerUserNS). Privileged is
	// then true, but only there: no capability can be kept for a command
	// (--cap-add), and the plans say the call runs in a user namespace.
	ServerUserNS bool
	// Creds are the command's credentials for file permissions (sbx's
	// own); nil skips the writable-root-access check (rootaccess.go).
	Creds *supervise.Creds
}

// Probe inspects the running kernel and user. It makes no namespaces: the
// user-namespace answer comes from sysctls, and a launch that still fails to
// create one falls back and reports it.
//
// What it reads from files (sysctls, seccomp's actions, the uid map, the
// mounts below /proc) is kept for probeTTL: a server probes once per call,
// and those reads were ~0.1 ms of each; they change rarely, and a launch
// that meets a change (a user namespace refused) falls back and reports
// it all the same. The capability and Landlock answers are asked each time.
func Probe() System {
	privileged := hasCapSysAdmin()
	probed.Lock()
	if time.Since(probed.at) > probeTTL || probed.privileged != privileged {
		probed.sys = probeFiles(privileged)
		probed.at, probed.privileged = time.Now(), privileged
	}
	s := probed.sys
	probed.Unlock()
	s.LandlockABI, s.Privileged = landlock.RunningABI(), privileged
	s.ServerUserNS = inServerUserNS
	if !s.ServerUserNS {
		// Inside the unprivileged server's namespace uid 0 is the
		// caller's own uid: its command has the caller's permissions.
		s.Creds = probeCreds()
	}
	return s
}

// probeTTL is how long Probe keeps what it read from files.
const probeTTL = time.Second

var probed struct {
	sync.Mutex
	at         time.Time
	privileged bool // what probeFiles was asked for
	sys        System
}

// probeFiles is the part of Probe read from files.
// A privileged process launches without a user namespace, so the sysctls
// that allow one are read only for one that is not (~0.1 ms of `sbx run`'s
// path as root: three files of /proc/sys, two missing).
func probeFiles(privileged bool) System {
	var s System
	if !privileged {
		s.UserNS, s.UserNSReason = userNSAllowed()
	}
	s.UserNotif, s.UserNotifReason = userNotifAvailable()
	s.InitUserNS = inInitUserNS()
	if !(s.InitUserNS && privileged) {
		s.ProcFullyVisible = procFullyVisible()
	}
	return s
}

// TryUserNS makes a user namespace the way a stage launch does (the uid
// and gid maps written by sbx) around the init program, which exits at
// once: the only conclusive test, since a container's seccomp profile, an
// LSM, or an outer sandbox can each forbid what the sysctls allow. It costs
// a fork, so only explain and doctor ask it; a call finds out at its
// launch (ErrUserNS) and falls back.
func TryUserNS() error {
	path, err := initExecutable()
	if err != nil {
		return err
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		return err
	}
	defer null.Close()
	uid, gid := os.Getuid(), os.Getgid()
	pid, err := syscall.ForkExec(path, []string{"sbx-userns-probe"}, &syscall.ProcAttr{Dir: "/", Env: []string{},
		Files: []uintptr{null.Fd(), null.Fd(), null.Fd()},
		Sys: &syscall.SysProcAttr{Cloneflags: stageCloneFlags,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}}})
	if err != nil {
		return fmt.Errorf("creating a user namespace failed: %w", err)
	}
	wait(pid)
	return nil
}

// WithoutUserNS is sys as it is when creating a user namespace failed
// (err, from TryUserNS or a launch): the plan then falls back to Landlock
// and seccomp without namespaces, and says so in every downgrade.
func (sys System) WithoutUserNS(err error) System {
	sys.UserNS = false
	sys.UserNSReason = err.Error()
	return sys
}

// inInitUserNS reports whether the calling process is in the initial user
// namespace, whose uid map is the identity over every uid. Read once per
// process (Prestart and Probe both ask): a Go process is multithreaded, so
// the kernel refuses it unshare(CLONE_NEWUSER), and sbx makes user
// namespaces only for the children it clones.
var inInitUserNS = sync.OnceValue(func() bool {
	b, err := os.ReadFile("/proc/self/uid_map")
	return err == nil && strings.Join(strings.Fields(string(b)), " ") == "0 0 4294967295"
})

// procFullyVisible reports whether nothing is mounted below /proc but on
// the empty directories procfs keeps for such mounts (binfmt_misc): the
// condition (mount_too_revealing in the kernel) for a user namespace to
// mount a new procfs.
func procFullyVisible() bool {
	mounts, err := mountPoints(threadMountinfo)
	if err != nil {
		return false
	}
	for _, m := range mounts {
		if strings.HasPrefix(m.path, "/proc/") && m.path != "/proc/sys/fs/binfmt_misc" {
			return false
		}
	}
	return true
}

// userNotifAvailable asks the kernel whether seccomp offers user
// notification (SECCOMP_GET_ACTION_AVAIL, one system call where reading
// /proc/sys/kernel/seccomp/actions_avail cost ~30 µs). A kernel older than
// the question (4.14) answers EINVAL and has none either. Any other error
// (an outer filter refusing seccomp(2)) says yes: loading the filter then
// finds out, and a failure there is reported the same way.
func userNotifAvailable() (bool, string) {
	action := uint32(unix.SECCOMP_RET_USER_NOTIF)
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&action)))
	if errno == unix.EOPNOTSUPP || errno == unix.EINVAL {
		return false, "the kernel has no seccomp user notification (Linux 5.0)"
	}
	return true, ""
}

func hasCapSysAdmin() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[0].Effective&(1<<unix.CAP_SYS_ADMIN) != 0
}

func userNSAllowed() (bool, string) {
	for _, c := range []struct{ file, bad string }{
		{"/proc/sys/user/max_user_namespaces", "0"},
		{"/proc/sys/kernel/unprivileged_userns_clone", "0"},
		{"/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1"},
	} {
		b, err := os.ReadFile(c.file)
		if err != nil {
			continue
		}
		if strings.TrimSpace(string(b)) == c.bad {
			return false, fmt.Sprintf("%s is %s", c.file, c.bad)
		}
	}
	return true, ""
}
