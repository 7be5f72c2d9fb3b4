package serve

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// peerUID is the uid that owns the other end of a loopback TCP connection
// whose end here is local and whose peer is remote: the kernel's socket
// table (/proc/net/tcp, tcp6) lists the peer's socket, local and remote
// swapped, with its owner's uid (as this process's user namespace sees it).
// The panel counts its connections per uid by it.
func peerUID(local, remote netip.AddrPort) (uint32, error) {
	want := map[string]bool{}
	for _, a := range []netip.AddrPort{remote, netip.AddrPortFrom(netip.AddrFrom16(remote.Addr().As16()), remote.Port())} {
		for _, b := range []netip.AddrPort{local, netip.AddrPortFrom(netip.AddrFrom16(local.Addr().As16()), local.Port())} {
			if a.Addr().Is4() == b.Addr().Is4() {
				want[procNetAddr(a)+" "+procNetAddr(b)] = true
			}
		}
	}
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(file)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid ...
			fields := strings.Fields(sc.Text())
			if len(fields) < 8 || !want[fields[1]+" "+fields[2]] {
				continue
			}
			uid, err := strconv.ParseUint(fields[7], 10, 32)
			f.Close()
			if err != nil {
				return 0, fmt.Errorf("%s: uid %q: %w", file, fields[7], err)
			}
			return uint32(uid), nil
		}
		f.Close()
	}
	return 0, fmt.Errorf("no socket %s -> %s in /proc/net/tcp", remote, local)
}

// procNetAddr is ap as /proc/net/tcp prints it: the address as 32-bit
// words in host byte order, in hex, and the port in hex.
func procNetAddr(ap netip.AddrPort) string {
	var b strings.Builder
	raw := ap.Addr().AsSlice()
	for i := 0; i < len(raw); i += 4 {
		fmt.Fprintf(&b, "%08X", binary.NativeEndian.Uint32(raw[i:i+4]))
	}
	fmt.Fprintf(&b, ":%04X", ap.Port())
	return b.String()
}
