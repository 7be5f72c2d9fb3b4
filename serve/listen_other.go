//go:build !linux

package serve

import (
	"context"
	"errors"
	"net"
)

// ErrNoListen: the socket server needs SO_PEERCRED, which this OS lacks;
// sbx serve on stdio works everywhere.
var ErrNoListen = errors.New("sbx serve --listen needs Linux (SO_PEERCRED peer checks)")

// Listen is not available here (ErrNoListen).
func Listen(path string) (*net.UnixListener, error) { return nil, ErrNoListen }

// ServeListener is not available here (ErrNoListen).
func (s *Server) ServeListener(ctx context.Context, l *net.UnixListener) error { return ErrNoListen }
