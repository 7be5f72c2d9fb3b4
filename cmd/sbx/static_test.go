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

// TestLibraryCatchesNoSignals: which signals a process catches is
// process-wide state, the program's (STYLE.md, "Library code owns no
// process state"): only cmd/sbx (and the example programs) import
// os/signal; the library gets a context, a wrapped approver or
// host.SetNotifier. It failed when call caught SIGINT and SIGTERM during
// an approval and enforce/host subscribed the relay and SIGWINCH itself.
func TestLibraryCatchesNoSignals(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "github.com/sbx-sandbox/sbx/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !slices.Contains(f[1:], "os/signal") {
			continue
		}
		if pkg := f[0]; pkg != "github.com/sbx-sandbox/sbx/cmd/sbx" && !strings.HasPrefix(pkg, "github.com/sbx-sandbox/sbx/examples/") {
			t.Errorf("%s imports os/signal: a library must not catch signals", pkg)
		}
	}
}
