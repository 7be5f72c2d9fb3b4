package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/sbx-sandbox/sbx/internal/call"
	"github.com/sbx-sandbox/sbx/internal/journal"
	"github.com/sbx-sandbox/sbx/internal/serve"
)

// metricsTokenFile holds a TCP metrics endpoint's bearer token, in the
// state directory (masked in every call).
const metricsTokenFile = "metrics-token"

// metricsTCP: --metrics names a loopback port, not a socket path.
func metricsTCP(addr string) bool { return addr != "" && !strings.Contains(addr, "/") }

// withMetricsControl keeps the directory of the --metrics socket read-only
// in every call, as --listen's: a command that could write there could
// replace the socket with its own and feed the scraper its numbers.
func withMetricsControl(c call.ControlPaths, addr string) call.ControlPaths {
	if addr == "" || metricsTCP(addr) {
		return c
	}
	for _, p := range controlPaths("", addr, "").ReadOnly {
		c = c.With(p, "the directory of sbx serve's metrics socket", false)
	}
	return c
}

// openLogTimed opens a session's log and, with metrics, times its fsyncs.
func openLogTimed(dir, id string, m *serve.Metrics) (serve.Log, error) {
	w, err := journal.Open(dir, id)
	if err != nil {
		return nil, err
	}
	if m != nil {
		w.OnSync = m.Fsynced
	}
	return w, nil
}

// startMetrics binds --metrics and serves it until ctx ends; a TCP
// endpoint's token goes to metrics-token in private. It returns an exit
// code, 0 when it serves (or nothing was asked), and what stops it (the
// socket removed before the server exits).
func startMetrics(ctx context.Context, m *serve.Metrics, addr, private string, logf func(string, ...any), stdio Stdio) (stop func(), code int) {
	if addr == "" {
		return func() {}, 0
	}
	ep, err := serve.ListenMetrics(m, addr, logf)
	if err == nil && ep.Token() != "" {
		err = serve.WritePrivate(filepath.Join(private, metricsTokenFile), ep.Token()+"\n")
		if err != nil {
			ep.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(stdio.Err, "sbx serve: --metrics: %v\n", err)
		return nil, ExitRefused
	}
	if ep.Token() != "" {
		logf("metrics at http://%s/metrics (its bearer token is in %s)", ep.Authority(), filepath.Join(private, metricsTokenFile))
	}
	go func() {
		if err := ep.Serve(ctx); err != nil {
			logf("%v", err)
		}
	}()
	return func() { ep.Close() }, 0
}
