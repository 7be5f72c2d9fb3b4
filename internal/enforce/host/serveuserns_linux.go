package host

import (
	"os"

	"github.com/sbx-sandbox/sbx/internal/enforce/linux"
)

// ServerUserNSChild is an unprivileged sbx serve re-executed inside the
// user namespace it serves from (see linux.SpawnServerUserNS).
type ServerUserNSChild = linux.ServerUserNSChild

// ServerUserNSWanted reports whether sbx serve should make its user
// namespace: it is not privileged (root launches from the launcher thread
// as it is), it is not inside that namespace already, and the sysctls
// allow one (a clone that still fails is reported by SpawnServerUserNS).
func ServerUserNSWanted() (bool, string) {
	sys := linux.Probe()
	switch {
	case sys.ServerUserNS:
		return false, "inside the server's user namespace already"
	case sys.Privileged:
		return false, "privileged: calls launch from the launcher thread without one"
	case !sys.UserNS:
		return false, "no user namespaces (" + sys.UserNSReason + ")"
	}
	return true, ""
}

// SpawnServerUserNS re-executes sbx with argv inside a new user namespace
// (linux.SpawnServerUserNS).
func SpawnServerUserNS(argv []string, files []int, readyFD int) (*ServerUserNSChild, error) {
	return linux.SpawnServerUserNS(argv, files, readyFD)
}

// EnterServerUserNS is the re-executed server's first step
// (linux.EnterServerUserNS).
func EnterServerUserNS(ctl *os.File) error { return linux.EnterServerUserNS(ctl) }

// ServeDirect launches the inner server's danger-full-access calls outside
// its user namespace (linux.ServeDirect), until ctl ends.
func ServeDirect(ctl *os.File) { linux.ServeDirect(ctl) }

// EndDirect kills the direct calls ServeDirect launched that still run.
func EndDirect() { linux.EndDirect() }
