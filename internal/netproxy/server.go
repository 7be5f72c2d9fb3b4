package netproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"
)

// Options are a Server's knobs; the zero value is usable.
type Options struct {
	// OnDenial is called once per refused request, from the connection's
	// goroutine (so concurrently): it must be safe for concurrent use and
	// quick. A Collector's Add deduplicates with a count.
	OnDenial func(Denial)
	// DialTimeout bounds resolution and connect upstream; 0 is 10s.
	DialTimeout time.Duration
	// HandshakeTimeout bounds reading a client's request (the CONNECT line
	// and headers, the SOCKS5 greeting and request); 0 is 30s.
	HandshakeTimeout time.Duration
}

// Server is an HTTP and SOCKS5 proxy serving one Policy. One listener
// serves both protocols: a connection whose first byte is 0x05 (the SOCKS5
// version) is SOCKS5, anything else is read as HTTP (a request line starts
// with a method's letter). Make it with New; Serve any number of
// listeners; Close ends them and every connection.
type Server struct {
	pol Policy
	opt Options

	mu        sync.Mutex
	closed    bool
	listeners map[*Listener]struct{}
	conns     map[*conn]struct{}
	wg        sync.WaitGroup
}

// errTransientAccept is an accept that failed for the connection, not
// the listener (the client reset it while it waited): Serve goes on.
var errTransientAccept = errors.New("connection aborted before accept")

// ErrServerClosed is what Serve returns after Close.
var ErrServerClosed = errors.New("netproxy: server closed")

// New returns a Server for pol. pol is copied; its slices must not change
// afterwards.
func New(pol Policy, opt Options) *Server {
	if opt.DialTimeout == 0 {
		opt.DialTimeout = 10 * time.Second
	}
	if opt.HandshakeTimeout == 0 {
		opt.HandshakeTimeout = 30 * time.Second
	}
	return &Server{pol: pol, opt: opt, listeners: map[*Listener]struct{}{}, conns: map[*conn]struct{}{}}
}

// Serve accepts connections on l until l fails or Close is called; it
// closes l when it returns.
func (s *Server) Serve(l *Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		l.Close()
		return ErrServerClosed
	}
	s.listeners[l] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, l)
		s.mu.Unlock()
		l.Close()
	}()
	for {
		c, err := l.accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return ErrServerClosed
			}
			if errors.Is(err, errTransientAccept) {
				continue
			}
			return fmt.Errorf("accept: %w", err)
		}
		if !s.track(c) {
			c.Close()
			return ErrServerClosed
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.untrack(c)
			s.handle(c)
		}()
	}
}

// Close stops every listener and closes every connection, then waits for
// the connection goroutines to end.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	for l := range s.listeners {
		l.Close()
	}
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

func (s *Server) track(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *Server) untrack(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	c.Close()
}

func (s *Server) handle(c *conn) {
	c.SetDeadline(time.Now().Add(s.opt.HandshakeTimeout))
	br := bufio.NewReader(c)
	first, err := br.Peek(1)
	if err != nil {
		return
	}
	if first[0] == socksVersion {
		s.serveSOCKS(c, br)
		return
	}
	s.serveHTTP(c, br)
}

// dial checks host:port against the policy, resolves it, checks every
// address and dials the first address that is allowed and answers. The
// address dialled is the address checked: the name is never resolved
// again. A refusal is reported through OnDenial and returned as a
// *RefusedError.
func (s *Server) dial(ctx context.Context, host string, port int) (*conn, error) {
	canon, ref := s.pol.Check(host, port)
	if ref != nil {
		s.report(ref)
		return nil, ref
	}
	ctx, cancel := context.WithTimeout(ctx, s.opt.DialTimeout)
	defer cancel()
	addrs, err := s.pol.Addresses(ctx, canon, port)
	if err != nil {
		var re *RefusedError
		if errors.As(err, &re) {
			s.report(re)
		}
		return nil, err
	}
	var last error
	for _, a := range addrs {
		// Tracked, so that Close of the Server reaches upstream
		// connections too; the handler untracks it.
		up, err := dialTCP(ctx, netip.AddrPortFrom(a, uint16(port)))
		if err == nil {
			if !s.track(up) {
				up.Close()
				return nil, ErrServerClosed
			}
			return up, nil
		}
		last = err
	}
	return nil, fmt.Errorf("connect %s:%d: %w", canon, port, last)
}

func (s *Server) report(r *RefusedError) {
	if s.opt.OnDenial != nil {
		s.opt.OnDenial(r.Denial)
	}
}

// relay copies both ways until both directions end, passing a half-close
// on (CloseWrite) so that a client that shuts down its sending side still
// gets the answer, then closes both. An error in either direction closes
// both at once. pending are bytes the client sent that were read while
// parsing its request; they go upstream first. With closeAfterAnswer (a
// forwarded plain-HTTP request, sent with "Connection: close"), the end of
// the answer ends the client's connection too.
func (s *Server) relay(client, upstream *conn, pending []byte, closeAfterAnswer bool) {
	defer s.untrack(upstream)
	defer client.Close()
	if len(pending) > 0 {
		if _, err := upstream.Write(pending); err != nil {
			return
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := copyConn(upstream, client); err != nil {
			client.Close()
			upstream.Close()
			return
		}
		upstream.CloseWrite()
	}()
	if err := copyConn(client, upstream); err != nil || closeAfterAnswer {
		client.Close()
		upstream.Close()
	} else {
		client.CloseWrite()
	}
	<-done
}

// pendingBytes returns what br has read past the request.
func pendingBytes(br *bufio.Reader) []byte {
	n := br.Buffered()
	if n == 0 {
		return nil
	}
	b, _ := br.Peek(n)
	return append([]byte(nil), b...)
}
