package serve

import "os"

// Accept returns the next connection whose peer sbx serve's socket
// admits (the server's uid or root, and never a sandboxed call:
// allowedPeer), for a server on l that speaks another protocol (sbx mcp's
// streamable HTTP). A refused peer is closed at once, and logf says why.
func (l *Listener) Accept(logf func(format string, args ...any)) (*os.File, error) {
	for {
		c, cred, err := l.accept()
		if err != nil {
			return nil, err
		}
		if err := allowedPeer(cred); err != nil {
			logf("refused a connection: %v", err)
			c.Close()
			continue
		}
		return c, nil
	}
}
