package main

import (
	"errors"
	"net"
	"net/http"
	"os"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sbx-sandbox/sbx/mcp"
	"github.com/sbx-sandbox/sbx/serve"
)

// serveHTTP serves the MCP streamable HTTP transport on the unix socket
// at path, made as sbx serve's (mode 0600, an existing path refused), and
// admitting the peers sbx serve admits: the server's uid and root, never
// a sandboxed call.
//
// IMPORTANT: the socket's directory is not read-only in the calls (the
// sbx serve children serve stdio and do not know it), as sbx serve
// --listen makes its own: a call that may write there could replace the
// socket for later clients (docs/security.md).
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
