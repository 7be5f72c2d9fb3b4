package main

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sbx-sandbox/sbx/internal/mcp"
	"github.com/sbx-sandbox/sbx/internal/serve"
)

// serveHTTP serves the MCP streamable HTTP transport on the unix socket
// at path, made as sbx serve's (mode 0600, an existing path refused), and
// admitting the peers sbx serve admits: the server's uid and root, never
// a sandboxed call. The sbx serve children are told of the socket
// (--mcp-listen): its directory is read-only in their calls.
func serveHTTP(m *mcp.Server, path string, logf func(string, ...any)) error {
	l, err := serve.Listen(path)
	if err != nil {
		return err
	}
	defer l.Close()
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return m.SDK() }, nil)
	return (&http.Server{Handler: h}).Serve(&peerListener{l: l, path: path, logf: logf})
}

// peerListener is a net.Listener of the connections serve.Listener admits.
type peerListener struct {
	l    *serve.Listener
	path string
	logf func(string, ...any)
}

func (p *peerListener) Accept() (net.Conn, error) {
	f, err := p.l.Accept(p.logf)
	if err != nil {
		return nil, err
	}
	defer f.Close() // FileConn holds its own descriptor
	c, err := net.FileConn(f)
	if err != nil {
		return nil, errors.Join(err, os.ErrInvalid)
	}
	return c, nil
}

func (p *peerListener) Close() error   { return p.l.Close() }
func (p *peerListener) Addr() net.Addr { return &net.UnixAddr{Name: p.path, Net: "unix"} }

// serveTCP serves the MCP streamable HTTP transport on the loopback
// address addr (127.0.0.1:PORT or [::1]:PORT). On loopback a peer is known
// only by what it sends (a call granted the host's network is a local
// peer like any other), so every request must carry the token made here
// and written to tokenFile (0600, in a directory masked in every call of
// the sessions): "Authorization: Bearer TOKEN", else 401. A request whose
// Origin is present and not a loopback origin is refused 403, as the MCP
// specification asks (a web page the user visits must not drive the
// server through the browser, DNS rebinding included); the SDK refuses a
// Host that is not loopback on its own.
//
// IMPORTANT: the token file is masked only in the calls of this server's
// sessions. A call of another sbx (sbx run, another sbx serve) that runs
// as the same user with the host's network can read it, as any process
// of that user can, and use the endpoint (docs/mcp.md); the unix socket,
// whose peers the kernel names, has no such gap.
func serveTCP(m *mcp.Server, addr, tokenFile string, logf func(string, ...any)) error {
	ap, err := serve.ParseLoopback(addr, "sbx mcp binds")
	if err != nil {
		return fmt.Errorf("%w, or a unix socket (a path, with a slash)", err)
	}
	token, err := serve.NewToken()
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", ap.String())
	if err != nil {
		return err
	}
	defer l.Close()
	if err := serve.WritePrivate(tokenFile, token+"\n"); err != nil {
		return fmt.Errorf("token: %w", err)
	}
	defer os.Remove(tokenFile)
	logf("streamable HTTP at http://%s/ (its bearer token is in %s)", l.Addr(), tokenFile)
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return m.SDK() }, nil)
	return (&http.Server{Handler: &guarded{h: h, token: token, logf: logf}}).Serve(l)
}

// guarded is the loopback endpoint's checks before the SDK's handler: the
// Origin, then the token.
type guarded struct {
	h     http.Handler
	token string
	logf  func(string, ...any)
}

func (g *guarded) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if o := r.Header.Get("Origin"); o != "" && !loopbackOrigin(o) {
		g.logf("refused a request: Origin %q is not a loopback origin", o)
		http.Error(w, "forbidden: Origin "+o+" is not a loopback origin", http.StatusForbidden)
		return
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(g.token)) != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="sbx mcp"`)
		http.Error(w, "unauthorized: Authorization: Bearer TOKEN (the token is in the state directory's mcp-token)", http.StatusUnauthorized)
		return
	}
	g.h.ServeHTTP(w, r)
}

// loopbackOrigin: an http or https origin on localhost, 127.0.0.1 or
// [::1], any port (a local tool's page; what else it may do the token
// decides).
func loopbackOrigin(o string) bool {
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Path != "" || u.User != nil {
		return false
	}
	switch u.Hostname() {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	return false
}
