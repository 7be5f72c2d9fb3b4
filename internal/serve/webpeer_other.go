//go:build !linux

package serve

import (
	"errors"
	"net/netip"
)

// peerUID is not known here: the panel (Linux only, as its sockets are)
// counts every connection as one client's.
func peerUID(local, remote netip.AddrPort) (uint32, error) {
	return 0, errors.New("the peer's uid is known on Linux only")
}
