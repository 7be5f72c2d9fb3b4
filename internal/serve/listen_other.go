//go:build !linux

package serve

import (
	"context"
	"errors"
	"os"
)

// ErrNoListen: the socket server needs SO_PEERCRED, which this OS lacks;
// sbx serve on stdio works everywhere.
var ErrNoListen = errors.New("sbx serve --listen needs Linux (SO_PEERCRED peer checks)")

// Listener is a listening unix socket (Linux only).
type Listener struct{}

// Close does nothing here.
func (l *Listener) Close() error { return nil }

// Listen is not available here (ErrNoListen).
func Listen(path string) (*Listener, error) { return nil, ErrNoListen }

// ServeListener is not available here (ErrNoListen).
func (s *Server) ServeListener(ctx context.Context, l *Listener) error { return ErrNoListen }

// ErrNoACP: the ACP connection's peer check needs SO_PEERCRED, which this
// OS lacks.
var ErrNoACP = errors.New("sbx serve --acp-socket and --acp-fd need Linux (SO_PEERCRED peer checks)")

// DialACP is not available here (ErrNoACP).
func DialACP(path string) (*os.File, error) { return nil, ErrNoACP }

// ACPFile is not available here (ErrNoACP).
func ACPFile(fd int) (*os.File, error) { return nil, ErrNoACP }
