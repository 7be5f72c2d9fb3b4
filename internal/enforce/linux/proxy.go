//go:build linux

package linux

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/netproxy"
	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// Network by domain (Plan.Proxy). The proxy's listening sockets are made
// inside the call's network namespace, by whoever is in it before the
// command starts: the launcher thread, after its unshare (thread launch),
// or the stage, which sends them to sbx over its listener socketpair with
// SCM_RIGHTS before any restriction is applied (stage launch; sbx cannot
// setns into a namespace its user namespace child owns without
// CAP_SYS_ADMIN of its own). sbx serves them from its own goroutines, in
// its own namespace, which is where the proxy dials out: no helper
// process, nothing left behind when the call ends. The sockets listen
// before the command's exec, so a client that connects at once waits in
// the backlog, never finds the port closed.

// proxyListeners are the proxy's listening sockets (close-on-exec: the
// command never holds them) and the address the environment names.
type proxyListeners struct {
	fds  []int
	addr string // 127.0.0.1:PORT
}

// listenProxy makes the proxy's listening sockets in the calling thread's
// network namespace: 127.0.0.1 on an ephemeral port, and ::1 on the same
// port where the namespace has IPv6 (clients that resolve "localhost"
// themselves may try it first). Loopback must be up.
func listenProxy() (proxyListeners, error) {
	fd, err := listenLoopback(unix.AF_INET, 0)
	if err != nil {
		return proxyListeners{}, fmt.Errorf("proxy: listen on 127.0.0.1: %w", err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		unix.Close(fd)
		return proxyListeners{}, fmt.Errorf("proxy: getsockname: %w", err)
	}
	port := sa.(*unix.SockaddrInet4).Port
	l := proxyListeners{fds: []int{fd}, addr: "127.0.0.1:" + strconv.Itoa(port)}
	// Without IPv6 (disabled, or not built) ::1 is not there: the
	// variables name 127.0.0.1 only, so nothing is lost.
	if fd6, err := listenLoopback(unix.AF_INET6, port); err == nil {
		l.fds = append(l.fds, fd6)
	}
	return l, nil
}

func listenLoopback(family, port int) (int, error) {
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("socket: %w", err)
	}
	var sa unix.Sockaddr = &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}, Port: port}
	if family == unix.AF_INET6 {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 1); err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("IPV6_V6ONLY: %w", err)
		}
		sa = &unix.SockaddrInet6{Addr: [16]byte{15: 1}, Port: port}
	}
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("bind: %w", err)
	}
	if err := unix.Listen(fd, unix.SOMAXCONN); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("listen: %w", err)
	}
	return fd, nil
}

func (l proxyListeners) close() {
	for _, fd := range l.fds {
		unix.Close(fd)
	}
}

// withProxyEnv returns env with the proxy's variables (netproxy.EnvVars)
// for addr, each replacing any entry of the same name: the command's own
// HTTPS_PROXY would point at an address its namespace cannot reach.
func withProxyEnv(env []string, addr string) []string {
	set := netproxy.EnvVars(addr, addr)
	names := map[string]bool{}
	for _, kv := range set {
		name, _, _ := strings.Cut(kv, "=")
		names[name] = true
	}
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		if name, _, _ := strings.Cut(kv, "="); !names[name] {
			out = append(out, kv)
		}
	}
	return append(out, set...)
}

// The stage's message with the proxy's sockets, on its listener
// socketpair, before the seccomp listener's (supervise.SendListener): 'P' and the
// sockets as SCM_RIGHTS, or 'E' and the error's text.
const (
	proxyMsgSockets = 'P'
	proxyMsgError   = 'E'
)

// sendProxy is the stage's side: it makes the sockets (loopback is up)
// and sends them to sbx, keeping none. It returns the address for the
// command's environment.
func sendProxy(sock int) (string, error) {
	l, err := listenProxy()
	if err != nil {
		unix.Write(sock, []byte(string(rune(proxyMsgError))+err.Error()))
		return "", err
	}
	defer l.close()
	if err := unix.Sendmsg(sock, []byte{proxyMsgSockets}, unix.UnixRights(l.fds...), nil, 0); err != nil {
		return "", fmt.Errorf("proxy: send the sockets: %w", err)
	}
	return l.addr, nil
}

// errNoProxyMessage: the stage ended before it sent the proxy's sockets;
// its own status says why.
var errNoProxyMessage = errors.New("proxy: the stage sent no sockets")

// receiveProxy is sbx's side of sendProxy.
func receiveProxy(sock int) ([]int, error) {
	buf := make([]byte, 512)
	oob := make([]byte, unix.CmsgSpace(2*4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(sock, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("proxy: receive the sockets: %w", err)
		}
		if n == 0 {
			return nil, errNoProxyMessage
		}
		var fds []int
		if oobn > 0 {
			msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
			if err != nil {
				return nil, fmt.Errorf("proxy: receive the sockets: %w", err)
			}
			for _, m := range msgs {
				got, err := unix.ParseUnixRights(&m)
				if err == nil {
					fds = append(fds, got...)
				}
			}
		}
		if buf[0] != proxyMsgSockets || len(fds) == 0 {
			for _, fd := range fds {
				unix.Close(fd)
			}
			return nil, fmt.Errorf("proxy: the stage could not listen: %s", buf[1:n])
		}
		return fds, nil
	}
}

// proxyServer serves one call's proxy and collects its denials.
type proxyServer struct {
	srv     *netproxy.Server
	denials netproxy.Collector
}

// serveProxy starts serving the listening sockets fds (taking them) under
// the plan's Domains, typed values parsed where the request entered sbx:
// nothing is parsed here.
func serveProxy(p *Plan, fds []int) (*proxyServer, error) {
	ps := &proxyServer{}
	ps.srv = netproxy.New(proxyPolicy(p.Policy.Domains), netproxy.Options{OnDenial: ps.denials.Add})
	var ls []*netproxy.Listener
	for i, fd := range fds {
		l, err := netproxy.FileListener(fd)
		if err != nil {
			for _, l := range ls {
				l.Close()
			}
			for _, fd := range fds[i+1:] {
				unix.Close(fd)
			}
			return nil, fmt.Errorf("proxy: %w", err)
		}
		ls = append(ls, l)
	}
	for _, l := range ls {
		go ps.srv.Serve(l)
	}
	return ps, nil
}

// proxyPolicy is what the proxy lets through: the policy's Domains as
// they are.
func proxyPolicy(d *policy.Domains) netproxy.Policy {
	return netproxy.Policy{Allowed: d.Allowed, Denied: d.Denied, AllowAll: d.AllowAll,
		AllowPrivateAddresses: d.AllowPrivateAddresses, Resolve: d.Resolve}
}

// close ends the listeners and every connection; nil is a no-op.
func (ps *proxyServer) close() {
	if ps != nil {
		ps.srv.Close()
	}
}

// Denials are the proxy's refusals, one per host, port and reason, with a
// count.
func (ps *proxyServer) Denials() []report.Denial {
	if ps == nil {
		return nil
	}
	var out []report.Denial
	for _, d := range ps.denials.Denials() {
		e := report.Denial{Operation: d.Operation, Domain: d.Domain, Port: d.Port, Source: d.Source,
			Confidence: d.Confidence, Count: d.Count, Reason: d.Reason}
		if d.Address != "" {
			family := "inet"
			if strings.Contains(d.Address, ":") {
				family = "inet6"
			}
			e.Address = &report.Address{Family: family, Address: d.Address, Port: d.Port}
		}
		out = append(out, e)
	}
	return out
}

// startProxyHere makes the proxy's sockets in the calling thread's network
// namespace (the launcher thread's, loopback up) and serves them; it
// returns env with the proxy's variables.
func startProxyHere(p *Plan, env []string) (*proxyServer, []string, error) {
	l, err := listenProxy()
	if err != nil {
		return nil, env, err
	}
	ps, err := serveProxy(p, l.fds)
	if err != nil {
		return nil, env, err
	}
	return ps, withProxyEnv(env, l.addr), nil
}

// ProxyDenials are the refusals of the call's proxy (network by domain),
// complete once Wait has returned; nil without a proxy.
func (pr *Process) ProxyDenials() []report.Denial { return pr.proxy.Denials() }

// takeProxy receives the stage's proxy sockets (sendProxy) and serves
// them. A stage that ended first is no error here: Wait reports why it
// ended (a fallback without namespaces among the reasons). Any other
// failure ends the stage before its command runs.
func (pr *Process) takeProxy(p *Plan, st *stageProc) error {
	fds, err := receiveProxy(st.listenerSock)
	if err == nil {
		pr.proxy, err = serveProxy(p, fds)
	}
	if err == nil || errors.Is(err, errNoProxyMessage) {
		return nil
	}
	unix.Kill(st.pid, unix.SIGKILL)
	if pr.lifeline != nil {
		pr.lifeline.Close()
	}
	return err
}
