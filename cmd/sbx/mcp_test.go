package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestMCPListenRefused: sbx mcp --listen takes a socket path or a loopback
// address, nothing that other machines could reach; refused (125) before
// sbx-mcp starts.
func TestMCPListenRefused(t *testing.T) {
	for _, tt := range []struct{ addr, want string }{
		{"0.0.0.0:8080", `--listen: "0.0.0.0:8080": sbx mcp binds loopback only`},
		{"[::]:8080", "sbx mcp binds loopback only"},
		{"192.168.1.2:8080", "sbx mcp binds loopback only"},
		{"localhost:8080", `--listen: "localhost:8080": want 127.0.0.1:PORT or [::1]:PORT, or a unix socket`},
	} {
		var out, errb bytes.Buffer
		code := Main([]string{"mcp", "--ephemeral", "--listen", tt.addr}, Stdio{In: strings.NewReader(""), Out: &out, Err: &errb})
		if code != ExitRefused || !strings.Contains(errb.String(), tt.want) {
			t.Errorf("--listen %s: exit %d, stderr %q; want 125 and %q", tt.addr, code, errb.String(), tt.want)
		}
	}
}
