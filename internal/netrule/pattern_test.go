package netrule

import (
	"strings"
	"testing"
)

func TestParsePattern(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{in: "pypi.org", want: "pypi.org"},
		{in: "PyPI.Org.", want: "pypi.org"},
		{in: "*.pythonhosted.org", want: "*.pythonhosted.org"},
		{in: "registry.npmjs.org:8443", want: "registry.npmjs.org:8443"},
		{in: "*.x.org:22", want: "*.x.org:22"},
		{in: "xn--bcher-kva.example", want: "xn--bcher-kva.example"},
		{in: "_acme.example.com", want: "_acme.example.com"},
		{in: "203.0.113.7", want: "203.0.113.7"},
		{in: "203.0.113.7:8080", want: "203.0.113.7:8080"},
		{in: "2001:DB8::1", want: "2001:db8::1"},
		{in: "[2001:db8::1]:443", want: "[2001:db8::1]:443"},
		{in: "[2001:db8::1]", want: "2001:db8::1"},
		{in: "::ffff:127.0.0.1", want: "127.0.0.1"},
		{in: "", err: "empty pattern"},
		{in: "*", err: "wildcard"},
		{in: "*.", err: "empty host"},
		{in: "a.*.org", err: "wildcard"},
		{in: "*pypi.org", err: "wildcard"},
		{in: "*.203.0.113.7", err: "all digits"},
		{in: "bücher.example", err: "non-ASCII host name: write it in punycode"},
		{in: "a..org", err: "empty label"},
		{in: "-a.org", err: "starts or ends"},
		{in: "a b.org", err: "not allowed"},
		{in: "2130706433", err: "all digits"},
		{in: "1.2.3", err: "all digits"},
		{in: "pypi.org:", err: "empty port"},
		{in: "pypi.org:0", err: "port"},
		{in: "pypi.org:65536", err: "port"},
		{in: "pypi.org:080", err: "port"},
		{in: "pypi.org:http", err: "port"},
		{in: "[pypi.org]:443", err: "brackets"},
		{in: "[::1", err: "missing ]"},
		{in: "fe80::1%eth0", err: "zone"},
		{in: strings.Repeat("a", 64) + ".org", err: "longer than 63"},
	}
	for _, tt := range tests {
		got, err := ParsePattern(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParsePattern(%q) = %v, %v; want error containing %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got.String() != tt.want {
			t.Errorf("ParsePattern(%q) = %q, %v; want %q", tt.in, got.String(), err, tt.want)
			continue
		}
		// The canonical spelling reads back to the same pattern.
		if again, err := ParsePattern(got.String()); err != nil || again != got {
			t.Errorf("round trip of %q: %v, %v", tt.in, again, err)
		}
	}
}

func TestPatternMatches(t *testing.T) {
	tests := []struct {
		pattern, host string
		port          int
		want          bool
	}{
		{"pypi.org", "pypi.org", 443, true},
		{"pypi.org", "pypi.org", 80, true},
		{"pypi.org", "pypi.org", 8080, false},
		{"pypi.org", "www.pypi.org", 443, false},
		{"pypi.org", "notpypi.org", 443, false},
		{"*.pythonhosted.org", "files.pythonhosted.org", 443, true},
		{"*.pythonhosted.org", "a.b.pythonhosted.org", 443, true},
		{"*.pythonhosted.org", "pythonhosted.org", 443, false}, // never the apex
		{"*.pythonhosted.org", "evilpythonhosted.org", 443, false},
		{"*.pythonhosted.org", "files.pythonhosted.org", 22, false},
		{"git.example:22", "git.example", 22, true},
		{"git.example:22", "git.example", 443, false},
		{"203.0.113.7", "203.0.113.7", 443, true},
		{"203.0.113.7", "203.0.113.8", 443, false},
	}
	for _, tt := range tests {
		p, err := ParsePattern(tt.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Matches(tt.host, tt.port); got != tt.want {
			t.Errorf("%q.Matches(%q, %d) = %v, want %v", tt.pattern, tt.host, tt.port, got, tt.want)
		}
	}
}

func TestPatternWithin(t *testing.T) {
	tests := []struct {
		p, q string
		want bool
	}{
		{"a.x.org", "a.x.org", true},
		{"a.x.org", "*.x.org", true},
		{"*.a.x.org", "*.x.org", true},
		{"*.x.org", "*.x.org", true},
		{"x.org", "*.x.org", false}, // the apex is not a subdomain
		{"*.x.org", "a.x.org", false},
		{"*.x.org", "x.org", false},
		{"a.x.org:443", "a.x.org", true},
		{"a.x.org:8443", "a.x.org", false},
		{"a.x.org", "a.x.org:443", false}, // default is 80 and 443
		{"a.x.org:22", "*.x.org:22", true},
		{"203.0.113.7", "203.0.113.7", true},
		{"203.0.113.7", "*.x.org", false},
	}
	for _, tt := range tests {
		p, _ := ParsePattern(tt.p)
		q, _ := ParsePattern(tt.q)
		if got := p.Within(q); got != tt.want {
			t.Errorf("%q.Within(%q) = %v, want %v", tt.p, tt.q, got, tt.want)
		}
	}
}
