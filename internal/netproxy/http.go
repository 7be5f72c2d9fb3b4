package netproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Limits of a request the proxy reads (its line and headers).
const (
	maxRequestLine = 8 << 10
	maxHeaderBytes = 64 << 10
)

// hopHeaders are removed when forwarding (RFC 9110 7.6.1), with the
// proxy's own. Transfer-Encoding is not among them: the body is relayed as
// the client framed it.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Upgrade"}

// request is an HTTP/1.x request line and its header fields, in order.
type request struct {
	method, target, proto string
	header                []headerField
}

type headerField struct{ name, value string }

// readRequest reads a request line and headers (no body). It is
// io.EOF when the client closed before sending anything.
func readRequest(br *bufio.Reader) (*request, error) {
	total := 0
	line, err := readLine(br, maxRequestLine)
	if err != nil {
		return nil, err
	}
	parts := strings.Split(line, " ")
	if len(parts) != 3 || !strings.HasPrefix(parts[2], "HTTP/1.") || parts[0] == "" || parts[1] == "" {
		return nil, fmt.Errorf("malformed request line %q", line)
	}
	r := &request{method: parts[0], target: parts[1], proto: parts[2]}
	for {
		l, err := readLine(br, maxHeaderBytes-total)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		total += len(l) + 2
		if l == "" {
			return r, nil
		}
		name, value, ok := strings.Cut(l, ":")
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			// Including obsolete line folding, which RFC 9112 lets a
			// proxy refuse.
			return nil, fmt.Errorf("malformed header line %q", l)
		}
		r.header = append(r.header, headerField{name, strings.TrimSpace(value)})
	}
}

// readLine reads a CRLF- (or LF-) terminated line of at most limit bytes.
func readLine(br *bufio.Reader, limit int) (string, error) {
	var b []byte
	for {
		chunk, err := br.ReadSlice('\n')
		b = append(b, chunk...)
		if len(b) > limit {
			return "", errors.New("request too large")
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if len(b) == 0 {
				return "", err
			}
			return "", io.ErrUnexpectedEOF
		}
		return strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r"), nil
	}
}

func (r *request) get(name string) []string {
	var out []string
	for _, h := range r.header {
		if strings.EqualFold(h.name, name) {
			out = append(out, h.value)
		}
	}
	return out
}

func (s *Server) serveHTTP(c *conn, br *bufio.Reader) {
	req, err := readRequest(br)
	if err != nil {
		if !errors.Is(err, io.EOF) {
			writeText(c, 400, "sbx proxy: malformed request\n")
		}
		return
	}
	if req.method == "CONNECT" {
		s.serveConnect(c, br, req)
		return
	}
	s.forward(c, br, req)
}

// serveConnect answers CONNECT host:port and then relays bytes.
func (s *Server) serveConnect(c *conn, br *bufio.Reader, req *request) {
	host, port, err := splitAuthority(req.target, 0)
	if err != nil {
		writeText(c, 400, fmt.Sprintf("sbx proxy: CONNECT %q: %v\n", req.target, err))
		return
	}
	up, err := s.dial(context.Background(), host, port)
	if err != nil {
		writeDialError(c, host, port, err)
		return
	}
	c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		s.untrack(up)
		return
	}
	s.relay(c, up, pendingBytes(br), false)
}

// forward sends one absolute-form request upstream, rewritten to origin
// form with "Connection: close", and relays the rest both ways: the body
// as the client framed it, the answer as the server sent it. The client's
// connection ends with the answer, so every request on it is checked:
// nothing a client sends after its first request reaches that server
// under another name.
func (s *Server) forward(c *conn, br *bufio.Reader, req *request) {
	rest, ok := strings.CutPrefix(req.target, "http://")
	if !ok {
		// An origin-form request ("GET /") was meant for a server, and
		// https:// absolute form is what CONNECT is for.
		writeText(c, 400, "sbx proxy: only CONNECT and absolute http:// requests are proxied\n")
		return
	}
	authority, path := rest, "/"
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		authority, path = rest[:i], rest[i:]
		if path[0] == '?' {
			path = "/" + path
		}
	}
	if strings.Contains(authority, "@") {
		writeText(c, 400, "sbx proxy: user information in a proxied URL is not forwarded\n")
		return
	}
	host, port, err := splitAuthority(authority, 80)
	if err != nil {
		writeText(c, 400, fmt.Sprintf("sbx proxy: %q: %v\n", authority, err))
		return
	}
	up, err := s.dial(context.Background(), host, port)
	if err != nil {
		writeDialError(c, host, port, err)
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s\r\n", req.method, path, req.proto)
	drop := map[string]bool{}
	for _, h := range hopHeaders {
		drop[strings.ToLower(h)] = true
	}
	for _, v := range req.get("Connection") {
		for _, name := range strings.Split(v, ",") {
			drop[strings.ToLower(strings.TrimSpace(name))] = true
		}
	}
	hasHost := false
	for _, h := range req.header {
		if drop[strings.ToLower(h.name)] {
			continue
		}
		hasHost = hasHost || strings.EqualFold(h.name, "Host")
		fmt.Fprintf(&b, "%s: %s\r\n", h.name, h.value)
	}
	if !hasHost {
		fmt.Fprintf(&b, "Host: %s\r\n", authority)
	}
	b.WriteString("Connection: close\r\n\r\n")
	c.SetDeadline(time.Time{})
	s.relay(c, up, append([]byte(b.String()), pendingBytes(br)...), true)
}

// splitAuthority splits host[:port] (an IPv6 host in brackets); without a
// port, def (0: required).
func splitAuthority(hostport string, def int) (string, int, error) {
	host, portStr, err := splitHostPort(hostport)
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

// splitHostPort splits "host:port" or "[v6]:port".
func splitHostPort(s string) (string, string, error) {
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]")
		if end < 0 || !strings.HasPrefix(s[end+1:], ":") {
			return "", "", errors.New("missing port")
		}
		return s[1:end], s[end+2:], nil
	}
	i := strings.LastIndex(s, ":")
	if i < 0 || strings.Contains(s[:i], ":") {
		return "", "", errors.New("missing port")
	}
	return s[:i], s[i+1:], nil
}

// joinHostPort is host:port, an IPv6 host in brackets.
func joinHostPort(host string, port int) string {
	if a, err := netip.ParseAddr(host); err == nil && a.Is6() {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}

func writeDialError(c *conn, host string, port int, err error) {
	var re *RefusedError
	if errors.As(err, &re) {
		writeRefusal(c, re)
		return
	}
	writeText(c, 502, fmt.Sprintf("sbx proxy: %s: %v\n", joinHostPort(host, port), err))
}

// writeRefusal answers 403 with a text naming the host and the reason.
func writeRefusal(c *conn, re *RefusedError) {
	d := re.Denial
	msg := fmt.Sprintf("sbx proxy: connect to %s refused: %s", joinHostPort(d.Domain, d.Port), d.Reason)
	if d.Address != "" {
		msg += " (" + d.Address + ")"
	}
	writeText(c, 403, msg+"\n")
}

var statusText = map[int]string{400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}

func writeText(c *conn, code int, body string) {
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		code, statusText[code], len(body), body)
}
