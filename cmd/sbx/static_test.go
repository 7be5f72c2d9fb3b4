//go:build linux

package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestNoCgo keeps sbx a static binary on Linux: a package that links cgo
// (net, os/user) makes `go build` produce a dynamically linked sbx, and
// every call then pays the dynamic loader before main (about 0.6 ms here,
// see bench/README.md).
func TestNoCgo(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/sbx-sandbox/sbx/cmd/sbx").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	for _, pkg := range []string{"runtime/cgo", "net", "os/user"} {
		if slices.Contains(deps, pkg) {
			t.Errorf("sbx imports %s (through some dependency): it links cgo and sbx is no longer static", pkg)
		}
	}
}
