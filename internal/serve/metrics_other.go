//go:build !linux

package serve

// acceptUnix is not reached here: Listen fails (ErrNoListen), so no
// endpoint has a unix socket.
func (e *MetricsEndpoint) acceptUnix() (c metricsConn, refused error, err error) {
	return nil, nil, ErrNoListen
}

// refusedSlots is not reached here (no unix endpoint refuses a peer).
func refusedSlots() chan struct{} { return nil }
