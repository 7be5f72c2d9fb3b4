package netproxy

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net/netip"
	"syscall"
	"time"

	"github.com/sbx-sandbox/sbx/internal/report"
)

// SOCKS5 (RFC 1928) constants used here.
const (
	socksVersion    = 0x05
	socksNoAuth     = 0x00
	socksNoMethods  = 0xff
	socksCmdConnect = 0x01

	socksAtypIPv4   = 0x01
	socksAtypDomain = 0x03
	socksAtypIPv6   = 0x04

	socksSucceeded         = 0x00
	socksGeneralFailure    = 0x01
	socksNotAllowed        = 0x02 // connection not allowed by ruleset
	socksHostUnreachable   = 0x04
	socksConnRefused       = 0x05
	socksCmdNotSupported   = 0x07
	socksAtypeNotSupported = 0x08
)

// serveSOCKS serves one SOCKS5 CONNECT without authentication. A domain
// name is checked by name, resolved by the proxy and checked by address;
// an IP address (ATYP 1 or 4) is allowed only when an IP-literal pattern
// of Allowed names it, so a client that resolved the name itself (curl's
// socks5:// rather than socks5h://) is refused with the IP it sent.
func (s *Server) serveSOCKS(c *conn, br *bufio.Reader) {
	var hdr [2]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(br, methods); err != nil {
		return
	}
	ok := false
	for _, m := range methods {
		ok = ok || m == socksNoAuth
	}
	if !ok {
		c.Write([]byte{socksVersion, socksNoMethods})
		return
	}
	if _, err := c.Write([]byte{socksVersion, socksNoAuth}); err != nil {
		return
	}
	var req [4]byte
	if _, err := io.ReadFull(br, req[:]); err != nil || req[0] != socksVersion {
		return
	}
	host, err := readSOCKSAddr(br, req[3])
	if err != nil {
		socksReply(c, socksAtypeNotSupported)
		return
	}
	var pb [2]byte
	if _, err := io.ReadFull(br, pb[:]); err != nil {
		return
	}
	port := int(binary.BigEndian.Uint16(pb[:]))
	if req[1] != socksCmdConnect {
		// BIND and UDP ASSOCIATE would open paths the policy does not see.
		s.report(refuse(host, port, report.ProxyReasonUnsupported, ""))
		socksReply(c, socksCmdNotSupported)
		return
	}
	up, err := s.dial(context.Background(), host, port)
	if err != nil {
		socksReply(c, socksCode(err))
		return
	}
	c.SetDeadline(time.Time{})
	if err := socksReply(c, socksSucceeded); err != nil {
		s.untrack(up)
		return
	}
	s.relay(c, up, pendingBytes(br), false)
}

func readSOCKSAddr(br *bufio.Reader, atyp byte) (string, error) {
	switch atyp {
	case socksAtypIPv4, socksAtypIPv6:
		n := 4
		if atyp == socksAtypIPv6 {
			n = 16
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(br, b); err != nil {
			return "", err
		}
		a, _ := netip.AddrFromSlice(b)
		return a.Unmap().String(), nil
	case socksAtypDomain:
		l, err := br.ReadByte()
		if err != nil {
			return "", err
		}
		b := make([]byte, l)
		if _, err := io.ReadFull(br, b); err != nil {
			return "", err
		}
		return string(b), nil
	}
	return "", errors.New("unknown address type")
}

// socksReply writes a reply; the bound address is always 0.0.0.0:0, so
// that the host's own addresses are not shown to the sandbox.
func socksReply(c *conn, code byte) error {
	_, err := c.Write([]byte{socksVersion, code, 0, socksAtypIPv4, 0, 0, 0, 0, 0, 0})
	return err
}

func socksCode(err error) byte {
	var re *RefusedError
	var dns *dnsError
	switch {
	case errors.As(err, &re):
		return socksNotAllowed
	case errors.As(err, &dns):
		return socksHostUnreachable
	case errors.Is(err, syscall.ECONNREFUSED):
		return socksConnRefused
	}
	return socksGeneralFailure
}
