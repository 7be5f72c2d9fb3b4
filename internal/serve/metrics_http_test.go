//go:build linux

package serve

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/escalate"
)

// TestMetricsEndpointChecks: a TCP endpoint binds loopback only, and
// answers only GET /metrics with its Host and its token.
func TestMetricsEndpointChecks(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:9000", "localhost:9000", ":9000"} {
		if _, err := ListenMetrics(NewMetrics(), addr, t.Logf); err == nil {
			t.Errorf("ListenMetrics(%q) bound a non-loopback address", addr)
		}
	}
	e, err := ListenMetrics(NewMetrics(), "127.0.0.1:0", t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- e.Serve(ctx) }()
	defer func() { cancel(); <-done }()
	get := func(head string) string {
		c, err := net.Dial("tcp", e.Authority())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprint(c, head+"\r\n")
		b, _ := io.ReadAll(c)
		status, _, _ := strings.Cut(string(b), "\r\n")
		return status
	}
	auth := "Authorization: Bearer " + e.Token() + "\r\n"
	for _, tc := range []struct{ head, want string }{
		{"GET /metrics HTTP/1.1\r\nHost: " + e.Authority() + "\r\n" + auth, "HTTP/1.1 200 OK"},
		{"GET /metrics HTTP/1.1\r\nHost: " + e.Authority() + "\r\n", "HTTP/1.1 403 Forbidden"},
		{"GET /metrics HTTP/1.1\r\nHost: " + e.Authority() + "\r\nAuthorization: Bearer x\r\n", "HTTP/1.1 403 Forbidden"},
		{"GET /metrics HTTP/1.1\r\nHost: evil.example:80\r\n" + auth, "HTTP/1.1 421 Misdirected Request"},
		{"POST /metrics HTTP/1.1\r\nHost: " + e.Authority() + "\r\n" + auth, "HTTP/1.1 405 Method Not Allowed"},
		{"GET / HTTP/1.1\r\nHost: " + e.Authority() + "\r\n" + auth, "HTTP/1.1 404 Not Found"},
	} {
		if got := get(tc.head); got != tc.want {
			t.Errorf("%q: %s, want %s", tc.head, got, tc.want)
		}
	}
}

// claims is a Claimer for the tests: it claims when yes, and answers o.
type claims struct {
	yes bool
	o   escalate.Outcome
}

func (c claims) Claim(Question) bool { return c.yes }
func (c claims) Approve(context.Context, Question) (escalate.Outcome, error) {
	return c.o, nil
}

// TestMetricsAnsweredBy: an approval is counted under the answerer of the
// waterfall that claimed it, "none" when none did.
func TestMetricsAnsweredBy(t *testing.T) {
	m := NewMetrics()
	w := Waterfall{claims{false, escalate.Rejected}, Always{claims{true, escalate.AllowedOnce}}}
	a, by := m.answeredBy(w)
	if o, _ := a.Approve(context.Background(), Question{}); o != escalate.AllowedOnce || by() != "approver" {
		t.Errorf("answered %s by %s, want allowed-once by approver", o, by())
	}
	a, by = m.answeredBy(Waterfall{claims{false, escalate.Rejected}})
	if o, _ := a.Approve(context.Background(), Question{}); o != escalate.Unavailable || by() != "none" {
		t.Errorf("answered %s by %s, want unavailable by none", o, by())
	}
}
