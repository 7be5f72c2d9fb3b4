package host

import "github.com/sbx-sandbox/sbx/internal/enforce/linux"

// CallPeer reports why the peer of the connected unix socket fd belongs to
// a sandboxed sbx call, of this sbx or any other, or "" when it does not;
// an error means sbx could not tell, and the caller refuses the peer (see
// linux.CallPeer).
func CallPeer(fd int) (string, error) { return linux.CallPeer(fd) }
