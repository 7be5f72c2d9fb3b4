//go:build linux

package linux

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// enterNamespaces moves the launcher thread into the new namespaces it is
// not in yet (done: those a prestarted thread unshared). Network, mount
// and (for its children) PID namespaces can be unshared by one thread of a
// multi-threaded process (a user namespace cannot: that uses the stage).
func enterNamespaces(s *StageSpec, done int) error {
	var flags int
	if s.NewPIDNS {
		flags |= unix.CLONE_NEWPID
	}
	if s.NewNetNS {
		flags |= unix.CLONE_NEWNET
	}
	if s.needsMountNS() {
		flags |= unix.CLONE_NEWNS
	}
	if s.NewUTSNS {
		flags |= unix.CLONE_NEWUTS
	}
	if s.NewIPCNS {
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
func privateMounts(s *StageSpec) error {
	if !s.needsMountNS() {
		return nil
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("mount --make-rslave /: %w", err)
	}
	return nil
}

// mountHooks are the mount steps that depend on how the call is launched.
type mountHooks struct {
	// proc mounts the call's procfs on /proc: init does, for a thread
	// launch; the stage itself otherwise.
	proc func() error
	// placeholders, when not nil, returns once the plan's placeholders are
	// made (a thread launch makes its mounts while Start makes them).
	placeholders func() error
	// procMounted: the call's procfs is on /proc already, procReadOnly
	// bound over it (a prestarted launcher thread's init mounted it): the
	// read-only root keeps its flags, and MountProc has nothing to do.
	procMounted bool
}

// setupMounts makes the call's mounts, the plan's MountOps in their order
// (privateMounts has run). It runs in the thread or stage that is already
// inside the call's mount namespace.
func setupMounts(s *StageSpec, h mountHooks) error {
	for _, op := range s.MountOps() {
		if err := runMountOp(op, h); err != nil {
			return err
		}
	}
	return nil
}

// runMountOp carries out one mount step.
func runMountOp(op MountOp, h mountHooks) error {
	switch op.Kind {
	case MountReadOnlyRoot:
		keep, mountinfo := []string(nil), threadMountinfo
		if h.procMounted {
			keep, mountinfo = []string{"/proc"}, initMountinfo
		}
		return readOnlyRoot(op.Roots, keep, mountinfo)
	case MountCarveOut:
		return bindReadOnly(op.Path)
	case MountPlaceholder:
		if h.placeholders != nil {
			if err := h.placeholders(); err != nil {
				return err
			}
		}
		// One that makePlaceholders could not make (the caller may not
		// write its parent) is absent: the command, with the caller's
		// uid and no capability, cannot make it either.
		if err := bindReadOnly(op.Path); err != nil && !errors.Is(err, unix.ENOENT) {
			return err
		}
		return nil
	case MountProc:
		if h.procMounted {
			return nil
		}
		if err := h.proc(); err != nil {
			return err
		}
		return protectProc()
	case MountMask:
		return mask(op.Path)
	}
	return fmt.Errorf("mount step %s: unknown kind", op)
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
