package serve

// acceptUnix accepts the next connection of a unix endpoint; refused says
// why its peer may not scrape (allowedPeer: a sandboxed call never
// reaches sbx's control plane, and the metrics are part of it: they tell
// what the other sessions' calls were denied).
func (e *MetricsEndpoint) acceptUnix() (c metricsConn, refused error, err error) {
	f, cred, err := e.unix.accept()
	if err != nil {
		return nil, nil, err
	}
	return f, allowedPeer(cred), nil
}

// refusedSlots bounds the refused peers answered at once: lingering, the
// server socket's.
func refusedSlots() chan struct{} { return lingering }
