package serve

import (
	"bufio"
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/sbx-sandbox/sbx/internal/netproxy"
)

// metricsTimeout bounds one scrape: the request's head must come, and the
// answer go out, within it.
var metricsTimeout = 5 * time.Second

// maxMetricsConns bounds the scrapes served at once; one more is closed
// unread. A unix endpoint's refused peers (sandboxed calls) take none of
// these slots but one of lingering's, shared with the server's socket, so
// that a call that connects in a loop cannot hold the operator's scrapes
// off.
//
// IMPORTANT: on TCP a peer is known only by its token, after its request:
// a local process (a call with the host's network included) that holds
// maxMetricsConns connections open delays scrapes by metricsTimeout at a
// time, as long as it keeps doing so.
const maxMetricsConns = 8

// MetricsContentType is the Prometheus text format's media type.
const MetricsContentType = "text/plain; version=0.0.4; charset=utf-8"

// MetricsEndpoint serves GET /metrics (sbx serve --metrics ADDR): on a
// unix socket, made as --listen's is (mode 0600) and whose peers are
// checked as the server's own socket's are (the server's uid or root,
// never a sandboxed call); or on a loopback TCP port, where every scrape
// must carry the endpoint's token (Authorization: Bearer TOKEN) and the
// bound authority as its Host, as the browser panel's API does.
type MetricsEndpoint struct {
	m     *Metrics
	unix  *Listener          // one of unix and tcp is set
	tcp   *netproxy.Listener //
	auth  string             // tcp: the bound "127.0.0.1:PORT"
	token string             // tcp: hex of 32 random bytes
	logf  func(format string, args ...any)
}

// ListenMetrics binds the endpoint of m at addr: a path (it has a slash)
// is a unix socket, anything else must be 127.0.0.1:PORT or [::1]:PORT.
func ListenMetrics(m *Metrics, addr string, logf func(format string, args ...any)) (*MetricsEndpoint, error) {
	e := &MetricsEndpoint{m: m, logf: logf}
	if strings.Contains(addr, "/") {
		l, err := Listen(addr)
		if err != nil {
			return nil, err
		}
		e.unix = l
		return e, nil
	}
	ap, err := ParseLoopback(addr, "the metrics bind")
	if err != nil {
		return nil, fmt.Errorf("%w, or a unix socket (a path, with a slash)", err)
	}
	token, err := NewToken()
	if err != nil {
		return nil, err
	}
	l, err := netproxy.Listen(ap)
	if err != nil {
		return nil, err
	}
	e.tcp, e.auth, e.token = l, l.Addr().String(), token
	return e, nil
}

// Token is the bearer token a TCP endpoint's scrapes carry ("" on a unix
// socket, whose peers the kernel names).
func (e *MetricsEndpoint) Token() string { return e.token }

// Authority is a TCP endpoint's bound host:port ("" on a unix socket).
func (e *MetricsEndpoint) Authority() string { return e.auth }

// Close stops the endpoint (and removes its socket).
func (e *MetricsEndpoint) Close() error {
	if e.unix != nil {
		return e.unix.Close()
	}
	return e.tcp.Close()
}

// metricsConn is an accepted connection of either kind.
type metricsConn interface {
	io.ReadWriteCloser
	SetDeadline(t time.Time) error
}

// Serve answers scrapes until ctx ends.
func (e *MetricsEndpoint) Serve(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { e.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, maxMetricsConns)
	for {
		var c metricsConn
		var refused error
		var err error
		if e.unix != nil {
			c, refused, err = e.acceptUnix()
		} else {
			c, err = e.tcp.Accept()
		}
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, os.ErrClosed) {
				return nil
			}
			return fmt.Errorf("metrics: accept: %w", err)
		}
		c.SetDeadline(time.Now().Add(metricsTimeout))
		pool := slots
		if refused != nil {
			e.logf("metrics: refused a connection: %v", refused)
			pool = refusedSlots()
		}
		select {
		case pool <- struct{}{}:
		default:
			if refused == nil {
				e.logf("metrics: refused a connection: %d scrapes are being served", maxMetricsConns)
			}
			c.Close()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-pool }()
			defer c.Close()
			if refused != nil {
				// The request is read first (bounded by the deadline), so
				// that the peer reads the reason, not EPIPE on its write.
				readRequest(bufio.NewReaderSize(c, maxRequestLine))
				writeResponse(c, 403, "text/plain; charset=utf-8", []byte("connection refused: "+refused.Error()+"\n"))
				return
			}
			e.serveConn(c)
		}()
	}
}

// serveConn answers one request.
func (e *MetricsEndpoint) serveConn(c metricsConn) {
	req, he := readRequest(bufio.NewReaderSize(c, maxRequestLine))
	if he == nil {
		he = e.check(req)
	}
	if he != nil {
		if he.status != 0 {
			e.logf("metrics: refused a request: %v", he)
			writeResponse(c, he.status, "text/plain; charset=utf-8", []byte(he.kind+": "+he.msg+"\n"))
		}
		return
	}
	var body bytes.Buffer
	e.m.WriteText(&body)
	writeResponse(c, 200, MetricsContentType, body.Bytes())
}

// check is a scrape's checks: GET /metrics, and on TCP the bound
// authority as Host (DNS rebinding) and the token.
func (e *MetricsEndpoint) check(req *httpRequest) *httpError {
	if req.path != "/metrics" {
		return &httpError{status: 404, kind: "not_found", msg: req.path}
	}
	if req.method != "GET" {
		return &httpError{status: 405, kind: "method_not_allowed", msg: req.method + " " + req.path}
	}
	if e.tcp == nil {
		return nil
	}
	if req.header["host"] != e.auth {
		return &httpError{status: 421, kind: "wrong_host", msg: fmt.Sprintf("Host %q is not %s", req.header["host"], e.auth)}
	}
	got, ok := strings.CutPrefix(req.header["authorization"], "Bearer ")
	if !ok {
		return &httpError{status: 403, kind: "no_token", msg: "Authorization: Bearer TOKEN is missing (the token is in the state directory's metrics-token)"}
	}
	if subtle.ConstantTimeCompare([]byte(got), []byte(e.token)) != 1 {
		return &httpError{status: 403, kind: "wrong_token", msg: "not this server's metrics token"}
	}
	return nil
}
