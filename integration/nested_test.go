//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"testing"
)

// TestNestedSbx: sbx run inside sbx run (an agent that itself runs
// sandboxed) starts, as root and unprivileged: the inner sbx holds no
// capability and cannot write a user namespace's uid map under the outer
// Landlock domain, so it falls back to Landlock and seccomp without
// namespaces and reports each layer it lost; what it enforces never
// widens past the outer sandbox, and what the outer allows, the inner
// still allows.
func TestNestedSbx(t *testing.T) {
	ws := workspace(t)
	outside := outsideDir(t)
	// The inner binary must be reachable and executable inside the outer
	// sandbox: sbxBin already is (the unprivileged pass runs it too).
	inner := func(args ...string) []string {
		return append([]string{sbxBin, "run", "--mode", "workspace-write", "--cwd", ws, "--report", filepath.Join(ws, "inner.json"), "--"}, args...)
	}
	out, rep := run(t, ws, wsWrite, inner(probeBin, "create", filepath.Join(ws, "inside"))...)
	if out.code != 0 {
		t.Fatalf("nested sbx: exit %d\nstdout: %s\nstderr: %s", out.code, out.stdout, out.stderr)
	}
	if r := parseProbe(t, out); !r.OK {
		t.Errorf("the inner command could not write inside both sandboxes' roots: %s", r)
	}
	in := readReport(t, filepath.Join(ws, "inner.json"))
	if in.Enforcement.UserNamespace || in.Enforcement.PIDNamespace {
		t.Logf("the inner sbx made namespaces after all: user %t pid %t", in.Enforcement.UserNamespace, in.Enforcement.PIDNamespace)
	} else if reason := in.degraded("pidns"); reason == "" {
		t.Errorf("the inner sbx has no PID namespace and no pidns downgrade: %v", in.degradedFeatures())
	}
	if rep == nil || rep.ExitCode != 0 {
		t.Errorf("outer report: %+v", rep)
	}

	// The inner call asks for the network and a root outside the outer's:
	// neither widens past the outer sandbox.
	target := filepath.Join(outside, "escaped")
	out, _ = run(t, ws, wsWrite, append([]string{sbxBin, "run", "--mode", "workspace-write", "--network", "--writable-root", outside, "--cwd", ws, "--"}, probeBin, "create", target)...)
	if r := parseProbe(t, out); r.OK {
		t.Errorf("the inner sbx widened past the outer sandbox: %s", r)
	}
	if _, err := os.Stat(target); err == nil {
		t.Errorf("%s exists", target)
	}
	out, _ = run(t, ws, wsWrite, append([]string{sbxBin, "run", "--mode", "danger-full-access", "--cwd", ws, "--"}, probeBin, "create", target)...)
	if r := parseProbe(t, out); r.OK {
		t.Errorf("danger-full-access inside the outer sandbox widened past it: %s", r)
	}
}
