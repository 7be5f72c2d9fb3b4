package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestDomainFlagsRefused: a bad value of a network-by-domain flag, or one
// that would have no effect, exits 125 naming the flag before anything
// runs.
func TestDomainFlagsRefused(t *testing.T) {
	tests := []struct {
		args []string
		flag string
	}{
		{[]string{"--allow-domain", "a..b"}, "--allow-domain"},
		{[]string{"--allow-domain", "*.org:99999"}, "--allow-domain"},
		{[]string{"--allow-domain", "x.org", "--deny-domain", "exa mple.org"}, "--deny-domain"},
		{[]string{"--allow-domain", "x.org", "--resolve", "x.org:443"}, "--resolve"},
		{[]string{"--allow-domain", "x.org", "--resolve", "x.org:0:127.0.0.1"}, "--resolve"},
		{[]string{"--allow-domain", "x.org", "--resolve", "x.org:443:not-an-ip"}, "--resolve"},
		{[]string{"--deny-domain", "x.org"}, "--deny-domain"},
		{[]string{"--network", "--deny-domain", "exa mple.org"}, "--deny-domain"},
		{[]string{"--network", "--deny-domain", "x.org", "--allow-private-addresses"}, "--allow-private-addresses"},
		{[]string{"--network", "--deny-domain", "x.org", "--resolve", "x.org:0:127.0.0.1"}, "--resolve"},
		{[]string{"--network", "--resolve", "x.org:443:127.0.0.1"}, "--resolve"},
		{[]string{"--allow-private-addresses"}, "--allow-private-addresses"},
		{[]string{"--resolve", "x.org:443:127.0.0.1"}, "--resolve"},
		{[]string{"--network", "--allow-domain", "x.org"}, "--allow-domain"},
		{[]string{"--mode", "danger-full-access", "--allow-domain", "x.org"}, "--allow-domain"},
	}
	for _, tt := range tests {
		args := append(append([]string{"run"}, tt.args...), "--", "/bin/true")
		var out, errb bytes.Buffer
		code := Main(args, Stdio{In: strings.NewReader(""), Out: &out, Err: &errb})
		if code != ExitRefused || !strings.Contains(errb.String(), tt.flag+":") {
			t.Errorf("%q: exit %d, stderr %q; want 125 naming %s", args, code, errb.String(), tt.flag)
		}
	}
}
