package serve

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
)

// NewToken is a bearer token for a loopback endpoint (sbx serve --metrics,
// sbx mcp --listen): hex of 32 random bytes. On loopback a peer is known
// only by what it sends, and a call granted the host's network is a local
// peer, so the token is what keeps it out; it goes only where no call can
// read it (WritePrivate, into a masked directory).
func NewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// ParseLoopback parses a loopback endpoint's address: 127.0.0.1:PORT or
// [::1]:PORT (port 0: any), nothing else (what names the whole host would
// be reachable from other machines). who names the endpoint in the error
// ("the panel binds").
func ParseLoopback(addr, who string) (netip.AddrPort, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%q: want 127.0.0.1:PORT or [::1]:PORT", addr)
	}
	if a := ap.Addr(); a != netip.MustParseAddr("127.0.0.1") && a != netip.IPv6Loopback() {
		return netip.AddrPort{}, fmt.Errorf("%q: %s loopback only (127.0.0.1 or [::1])", addr, who)
	}
	return ap, nil
}

// WritePrivate writes s to a new file at path, mode 0600, replacing what
// was there but never writing through a planted link (O_EXCL).
func WritePrivate(path, s string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
