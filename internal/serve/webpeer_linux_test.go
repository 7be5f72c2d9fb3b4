package serve

import (
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sbx-sandbox/sbx/internal/netproxy"
)

// TestWebPeerUID: the owner of the other end of a loopback connection, as
// the kernel's socket table says, over IPv4 and IPv6.
func TestWebPeerUID(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		l, err := netproxy.Listen(netip.MustParseAddrPort(addr))
		if err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		defer l.Close()
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		sc, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer sc.Close()
		if got, want := webClient(sc), "uid "+itoa(os.Getuid()); got != want {
			t.Errorf("%s: %q, want %q", addr, got, want)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestWebPerClientCap: one client (a uid) that holds its
// maxWebConnsPerClient connections open gets no more, and logged; the
// others keep theirs: as root, a client of another uid (curl as nobody)
// is still served. Fails on the code before (one client took all 64).
func TestWebPerClientCap(t *testing.T) {
	p := newPanelServer(t, false)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range maxWebConnsPerClient {
		c, err := net.Dial("tcp", p.panel.Authority())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	// One more is closed unread: a read ends at once.
	c, err := net.Dial("tcp", p.panel.Authority())
	if err != nil {
		t.Fatal(err)
	}
	conns = append(conns, c)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err != io.EOF && !isReset(err) {
		t.Errorf("the connection past the client's bound: %v, want it closed", err)
	}
	want := "web: refused a connection of uid " + itoa(os.Getuid()) + ": 16 of its are open"
	if !p.logs.has(want) {
		t.Errorf("not logged: %q in %q", want, p.logs.lines)
	}
	if os.Geteuid() != 0 {
		return
	}
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Log("no curl: another uid's connection not tried")
		return
	}
	cmd := exec.Command(curl, "-sS", "-o", "/dev/null", "-w", "%{http_code}", "http://"+p.panel.Authority()+"/")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.Output()
	if err != nil || string(out) != "200" {
		t.Errorf("another uid's request while uid 0 is at its bound: %q %v", out, err)
	}
	// And this client, once it lets one go, is served again.
	conns[0].Close()
	if !p.servedWithin(5 * time.Second) {
		t.Fatal("the client was not served again after closing a connection")
	}
}

func isReset(err error) bool { return err != nil && strings.Contains(err.Error(), "reset") }
