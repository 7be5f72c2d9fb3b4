//go:build !linux

package host

import (
	"errors"
	"os"
)

// ServerUserNSChild is a server re-executed in a user namespace: Linux only.
type ServerUserNSChild struct {
	Pid int
	Ctl *os.File
}

var errNoUserNS = errors.New("user namespaces are Linux's")

// ServerUserNSWanted says no: only Linux has user namespaces.
func ServerUserNSWanted() (bool, string) { return false, errNoUserNS.Error() }

// SpawnServerUserNS fails here (see ServerUserNSWanted).
func SpawnServerUserNS(argv []string, files []int, readyFD int) (*ServerUserNSChild, error) {
	return nil, errNoUserNS
}

// EnterServerUserNS fails here (see ServerUserNSWanted).
func EnterServerUserNS(ctl *os.File) error { return errNoUserNS }

// ServeDirect does nothing here (see ServerUserNSWanted).
func ServeDirect(ctl *os.File) {}

// EndDirect: no direct calls here.
func EndDirect() {}
