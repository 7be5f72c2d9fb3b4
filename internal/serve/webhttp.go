package serve

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The browser panel's HTTP/1.1 is read by hand: package net/http would
// link package net, and sbx stays a static binary. It takes the little a
// page needs and refuses the rest: one request per connection, no
// chunked bodies, no repeated headers, bounded sizes.
const (
	maxRequestLine = 4 << 10
	maxHeaderBytes = 16 << 10
	maxHeaders     = 64
	maxBody        = 16 << 10
)

// httpRequest is one request as read. Header names are lower case; each
// appears once.
type httpRequest struct {
	method, path, query string
	header              map[string]string
	body                []byte
}

// httpError is a request refused with a status.
type httpError struct {
	status int
	kind   string
	msg    string
}

func (e *httpError) Error() string { return fmt.Sprintf("%d %s: %s", e.status, e.kind, e.msg) }

func badRequest(format string, args ...any) *httpError {
	return &httpError{status: 400, kind: "bad_request", msg: fmt.Sprintf(format, args...)}
}

// readLine reads one CRLF-terminated line of at most max bytes (without
// the CRLF); *budget is what the head may still take.
func readLine(r *bufio.Reader, max int, budget *int) (string, *httpError) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > max || len(line) > *budget {
			return "", &httpError{status: 431, kind: "too_large", msg: "request head too large"}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if err == io.EOF && len(line) == 0 {
				return "", &httpError{status: 0, kind: "eof"}
			}
			return "", badRequest("request head: %v", err)
		}
		break
	}
	*budget -= len(line)
	if !bytes.HasSuffix(line, []byte("\r\n")) {
		return "", badRequest("a line of the request head does not end in CRLF")
	}
	return string(line[:len(line)-2]), nil
}

// readRequest reads one request: the request line, the headers and a body
// of Content-Length bytes.
func readRequest(r *bufio.Reader) (*httpRequest, *httpError) {
	budget := maxHeaderBytes
	line, e := readLine(r, maxRequestLine, &budget)
	if e != nil {
		return nil, e
	}
	parts := strings.Split(line, " ")
	if len(parts) != 3 {
		return nil, badRequest("request line %q: want METHOD TARGET HTTP/1.1", line)
	}
	req := &httpRequest{method: parts[0], header: map[string]string{}}
	if parts[2] != "HTTP/1.1" && parts[2] != "HTTP/1.0" {
		return nil, &httpError{status: 505, kind: "bad_version", msg: "want HTTP/1.1"}
	}
	target := parts[1]
	if !strings.HasPrefix(target, "/") {
		return nil, badRequest("request target %q: want a path", target)
	}
	req.path, req.query, _ = strings.Cut(target, "?")
	for n := 0; ; n++ {
		line, e := readLine(r, maxHeaderBytes, &budget)
		if e != nil {
			if e.kind == "eof" {
				return nil, badRequest("request head: unexpected end")
			}
			return nil, e
		}
		if line == "" {
			break
		}
		if n == maxHeaders {
			return nil, &httpError{status: 431, kind: "too_large", msg: fmt.Sprintf("more than %d headers", maxHeaders)}
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || !isToken(name) {
			return nil, badRequest("header line %q: want NAME: VALUE", line)
		}
		name = strings.ToLower(name)
		if _, dup := req.header[name]; dup {
			return nil, badRequest("header %s: given twice", name)
		}
		value = strings.Trim(value, " \t")
		if strings.ContainsAny(value, "\x00\r\n") {
			return nil, badRequest("header %s: control characters", name)
		}
		req.header[name] = value
	}
	if _, ok := req.header["transfer-encoding"]; ok {
		return nil, &httpError{status: 501, kind: "not_implemented", msg: "transfer-encoding: give a Content-Length"}
	}
	if cl, ok := req.header["content-length"]; ok {
		n, err := strconv.Atoi(cl)
		if err != nil || n < 0 || strings.TrimLeft(cl, "0123456789") != "" {
			return nil, badRequest("content-length %q: not a length", cl)
		}
		if n > maxBody {
			return nil, &httpError{status: 413, kind: "too_large", msg: fmt.Sprintf("body of %d bytes: at most %d", n, maxBody)}
		}
		req.body = make([]byte, n)
		if _, err := io.ReadFull(r, req.body); err != nil {
			return nil, badRequest("body: %v", err)
		}
	}
	return req, nil
}

// isToken: an HTTP field name (RFC 9110 token).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

var statusText = map[int]string{200: "OK", 400: "Bad Request", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
	409: "Conflict", 413: "Content Too Large", 415: "Unsupported Media Type", 421: "Misdirected Request",
	431: "Request Header Fields Too Large", 500: "Internal Server Error", 501: "Not Implemented", 505: "HTTP Version Not Supported"}

// writeHead writes a response's status line and headers; length < 0
// leaves Content-Length out (the event stream, ended by the close).
func writeHead(w io.Writer, status int, contentType string, length int, extra ...string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", status, statusText[status])
	fmt.Fprintf(&b, "Content-Type: %s\r\n", contentType)
	if length >= 0 {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", length)
	}
	b.WriteString("Connection: close\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n" +
		"Referrer-Policy: no-referrer\r\nX-Frame-Options: DENY\r\n")
	for _, h := range extra {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func writeResponse(w io.Writer, status int, contentType string, body []byte, extra ...string) error {
	if err := writeHead(w, status, contentType, len(body), extra...); err != nil {
		return err
	}
	_, err := w.Write(body)
	return err
}
