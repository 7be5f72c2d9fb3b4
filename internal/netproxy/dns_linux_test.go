//go:build linux

package netproxy

import (
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// fakeDNS answers every A query with 192.0.2.7 (behind a CNAME record,
// as resolvers answer) and every AAAA query with NXDOMAIN, on UDP; with
// truncate, it sets TC on UDP and answers over TCP on the same port.
func fakeDNS(t *testing.T, truncate bool) netip.AddrPort {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	port := pc.LocalAddr().(*net.UDPAddr).Port
	answer := func(q []byte) []byte {
		qend := 12
		for q[qend] != 0 {
			qend += int(q[qend]) + 1
		}
		qend += 5
		qtype := binary.BigEndian.Uint16(q[qend-4:])
		r := append([]byte(nil), q[:qend]...)
		r[2], r[3] = 0x81, 0x80
		if qtype != dnsTypeA {
			r[3] |= 3
			return r
		}
		binary.BigEndian.PutUint16(r[6:], 2)
		// CNAME to "x" (owner: the question's name, by pointer), then A.
		r = append(r, 0xc0, 12, 0, 5, 0, 1, 0, 0, 0, 60, 0, 3, 1, 'x', 0)
		r = append(r, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 7)
		return r
	}
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			r := answer(buf[:n])
			if truncate {
				r = append([]byte(nil), buf[:n]...)
				r[2] |= 0x82
			}
			pc.WriteTo(r, from)
		}
	}()
	if truncate {
		l, err := net.Listen("tcp4", pc.LocalAddr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				var lb [2]byte
				c.Read(lb[:])
				q := make([]byte, binary.BigEndian.Uint16(lb[:]))
				c.Read(q)
				r := answer(q)
				c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(r))), r...))
				c.Close()
			}
		}()
	}
	return netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port))
}

func TestQuery(t *testing.T) {
	for _, truncate := range []bool{false, true} {
		ns := fakeDNS(t, truncate)
		got, err := query(context.Background(), ns, "pypi.org", dnsTypeA)
		if err != nil || !reflect.DeepEqual(got, []netip.Addr{netip.MustParseAddr("192.0.2.7")}) {
			t.Errorf("truncate %v: A = %v, %v; want 192.0.2.7", truncate, got, err)
		}
		_, err = query(context.Background(), ns, "pypi.org", dnsTypeAAAA)
		if _, ok := err.(*dnsError); !ok {
			t.Errorf("truncate %v: AAAA error %v; want no such host", truncate, err)
		}
	}
}

func TestHostsAndResolvConf(t *testing.T) {
	dir := t.TempDir()
	hosts := filepath.Join(dir, "hosts")
	os.WriteFile(hosts, []byte("127.0.0.1 localhost\n# 10.0.0.1 commented.test\n192.0.2.1 Pinned.Test pinned2.test # c\n::1 localhost\n"), 0o644)
	if got := lookupHostsFile(hosts, "pinned.test"); !reflect.DeepEqual(got, []netip.Addr{netip.MustParseAddr("192.0.2.1")}) {
		t.Errorf("pinned.test = %v", got)
	}
	if got := lookupHostsFile(hosts, "commented.test"); got != nil {
		t.Errorf("commented.test = %v", got)
	}
	if got := lookupHostsFile(hosts, "localhost"); len(got) != 2 {
		t.Errorf("localhost = %v", got)
	}
	rc := filepath.Join(dir, "resolv.conf")
	os.WriteFile(rc, []byte("search example\nnameserver 10.0.0.53\nnameserver fd00::53\noptions ndots:2\n"), 0o644)
	want := []netip.AddrPort{netip.MustParseAddrPort("10.0.0.53:53"), netip.MustParseAddrPort("[fd00::53]:53")}
	if got := nameservers(rc); !reflect.DeepEqual(got, want) {
		t.Errorf("nameservers = %v, want %v", got, want)
	}
	if got := nameservers(filepath.Join(dir, "none")); len(got) != 2 {
		t.Errorf("no resolv.conf: %v, want the local host's", got)
	}
}

// TestLocalhostNames: localhost names are loopback without /etc/hosts
// saying so, and no nameserver is asked (this one would never answer).
func TestLocalhostNames(t *testing.T) {
	dir := t.TempDir()
	oldHosts, oldRC := hostsFile, resolvConf
	t.Cleanup(func() { hostsFile, resolvConf = oldHosts, oldRC })
	hostsFile, resolvConf = filepath.Join(dir, "no-hosts"), filepath.Join(dir, "resolv.conf")
	os.WriteFile(resolvConf, []byte("nameserver 192.0.2.53\n"), 0o644)
	want := []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}
	for _, host := range []string{"localhost", "app.localhost"} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		got, err := lookupHost(ctx, host)
		cancel()
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %v, %v; want %v", host, got, err, want)
		}
	}
	for _, host := range []string{"localhost.example", "notlocalhost"} {
		if isLocalhost(host) {
			t.Errorf("%s counted as a localhost name", host)
		}
	}
}

// A malformed answer is an error, never a panic or an address.
func TestParseAnswerMalformed(t *testing.T) {
	q, _, _ := buildQuery("a.test", dnsTypeA)
	r := append([]byte(nil), q...)
	r[2] = 0x81
	binary.BigEndian.PutUint16(r[6:], 1)
	for _, tail := range [][]byte{{0xc0}, {0xc0, 12, 0, 1}, {0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 9, 1}, {63}} {
		if got, err := parseAnswer("a.test", append(append([]byte(nil), r...), tail...), dnsTypeA); err == nil {
			t.Errorf("tail %x: %v, want an error", tail, got)
		}
	}
}
