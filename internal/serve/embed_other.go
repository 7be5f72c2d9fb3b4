//go:build !linux

package serve

import "os"

// Accept is not available here (ErrNoListen).
func (l *Listener) Accept(logf func(format string, args ...any)) (*os.File, error) {
	return nil, ErrNoListen
}
