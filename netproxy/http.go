package netproxy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// idleTimeout bounds the wait for the next request on a kept-alive
// plain-HTTP connection.
const idleTimeout = 2 * time.Minute

// hopHeaders are removed when forwarding (RFC 9110 7.6.1), with the
// proxy's own.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

func (s *Server) serveHTTP(c net.Conn, br *bufio.Reader) {
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				writeText(c, http.StatusBadRequest, "sbx proxy: malformed request\n")
			}
			return
		}
		if req.Method == http.MethodConnect {
			s.serveConnect(c, br, req)
			return
		}
		if !s.forward(c, req) {
			return
		}
		c.SetDeadline(time.Now().Add(idleTimeout))
	}
}

// serveConnect answers CONNECT host:port and then relays bytes.
func (s *Server) serveConnect(c net.Conn, br *bufio.Reader, req *http.Request) {
	host, port, err := splitAuthority(req.Host, 0)
	if err != nil {
		writeText(c, http.StatusBadRequest, fmt.Sprintf("sbx proxy: CONNECT %q: %v\n", req.Host, err))
		return
	}
	up, err := s.dial(req.Context(), host, port)
	if err != nil {
		writeDialError(c, host, port, err)
		return
	}
	c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		up.Close()
		return
	}
	relay(c, up, pendingBytes(br))
}

// forward sends one absolute-form request upstream and its answer back; it
// reports whether the client connection may carry another request.
func (s *Server) forward(c net.Conn, req *http.Request) bool {
	if req.URL.Scheme != "http" || req.URL.Host == "" {
		// An origin-form request ("GET /") was meant for a server, and
		// https:// absolute form is what CONNECT is for.
		writeText(c, http.StatusBadRequest, "sbx proxy: only CONNECT and absolute http:// requests are proxied\n")
		return false
	}
	host, port, err := splitAuthority(req.URL.Host, 80)
	if err != nil {
		writeText(c, http.StatusBadRequest, fmt.Sprintf("sbx proxy: %q: %v\n", req.URL.Host, err))
		return false
	}
	// Check by name first: a refusal answers 403 without touching the
	// transport. The transport's dial checks again, with the addresses.
	if _, ref := s.pol.Check(host, port); ref != nil {
		s.report(ref)
		writeRefusal(c, ref)
		return false
	}
	out := req.Clone(req.Context())
	out.RequestURI = ""
	out.Host = req.Host
	removeHop(out.Header)
	resp, err := s.transport.RoundTrip(out)
	if err != nil {
		writeDialError(c, host, port, err)
		return false
	}
	defer resp.Body.Close()
	removeHop(resp.Header)
	keep := !req.Close && !resp.Close
	if !keep {
		resp.Close = true
	}
	if err := resp.Write(c); err != nil {
		return false
	}
	return keep
}

func removeHop(h http.Header) {
	for _, f := range h["Connection"] {
		for _, name := range strings.Split(f, ",") {
			h.Del(strings.TrimSpace(name))
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// splitAuthority splits host[:port]; without a port, def (0: required).
func splitAuthority(hostport string, def int) (string, int, error) {
	host, portStr, err := net.SplitHostPort(hostport)
	if err != nil {
		if def == 0 {
			return "", 0, errors.New("want host:port")
		}
		host, portStr = strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]"), strconv.Itoa(def)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("bad port %q", portStr)
	}
	return host, port, nil
}

func writeDialError(c net.Conn, host string, port int, err error) {
	var re *RefusedError
	if errors.As(err, &re) {
		writeRefusal(c, re)
		return
	}
	writeText(c, http.StatusBadGateway, fmt.Sprintf("sbx proxy: %s: %v\n", net.JoinHostPort(host, strconv.Itoa(port)), err))
}

// writeRefusal answers 403 with a text naming the host and the reason.
func writeRefusal(c net.Conn, re *RefusedError) {
	d := re.Denial
	msg := fmt.Sprintf("sbx proxy: connect to %s refused: %s", net.JoinHostPort(d.Domain, strconv.Itoa(d.Port)), d.Reason)
	if d.Address != "" {
		msg += " (" + d.Address + ")"
	}
	writeText(c, http.StatusForbidden, msg+"\n")
}

func writeText(c net.Conn, code int, body string) {
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		code, http.StatusText(code), len(body), body)
}
