package netrule

import (
	"net/netip"
	"strings"
	"testing"
)

// TestParseResolve: curl's --resolve syntax, canonical on the way out, and
// each refusal says what is wrong (the caller adds the field: --resolve,
// resolve[i]).
func TestParseResolve(t *testing.T) {
	r, err := ParseResolve("PyPI.org:443:127.0.0.1,[::1]")
	if err != nil {
		t.Fatal(err)
	}
	if r.Host != "pypi.org" || r.Port != 443 || len(r.Addrs) != 2 || r.Addrs[1] != netip.IPv6Loopback() {
		t.Errorf("ParseResolve = %+v", r)
	}
	for _, bad := range []string{"pypi.org:443", "pypi.org:x:1.2.3.4", "pypi.org:443:nope", "bü.org:443:1.2.3.4"} {
		if _, err := ParseResolve(bad); err == nil {
			t.Errorf("ParseResolve(%q) succeeded", bad)
		}
	}
	tests := []struct {
		in, want, err string
	}{
		{in: "pypi.test:443:127.0.0.1", want: "pypi.test:443:127.0.0.1"},
		{in: "Registry.Test.:8080:10.0.0.1", want: "registry.test:8080:10.0.0.1"},
		{in: "a.test:443:::ffff:127.0.0.1", want: "a.test:443:127.0.0.1"},
		{in: "a.test:443:[2001:DB8::1],127.0.0.1", want: "a.test:443:2001:db8::1,127.0.0.1"},
		{in: "a.test:443", err: "want HOST:PORT:ADDR"},
		{in: "a.test", err: "want HOST:PORT:ADDR"},
		{in: "", err: "want HOST:PORT:ADDR"},
		{in: ":443:127.0.0.1", err: "empty host name"},
		{in: "a.test:0:127.0.0.1", err: "is not a number from 1 to 65535"},
		{in: "a.test:65536:127.0.0.1", err: "is not a number from 1 to 65535"},
		{in: "a.test:http:127.0.0.1", err: "is not a number from 1 to 65535"},
		{in: "a.test:443:not-an-ip", err: `address "not-an-ip"`},
		{in: "a.test:443:", err: `address ""`},
		{in: "a b.test:443:127.0.0.1", err: "not allowed in a host name"},
		{in: "1.2.3:443:127.0.0.1", err: "all digits"},
	}
	for _, tt := range tests {
		got, err := ParseResolve(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), `"`+tt.in+`"`) {
				t.Errorf("ParseResolve(%q) = %v, %v; want an error quoting it, containing %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got.String() != tt.want {
			t.Errorf("ParseResolve(%q) = %q, %v; want %q", tt.in, got.String(), err, tt.want)
			continue
		}
		// The canonical spelling reads back to the same rule, and JSON
		// carries it (a Policy's "resolve").
		var again Resolve
		if b, _ := got.MarshalText(); again.UnmarshalText(b) != nil || again.String() != got.String() {
			t.Errorf("round trip of %q: %v", tt.in, again)
		}
	}
}
