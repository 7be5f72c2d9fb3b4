//go:build linux

package linux

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPrestartProcAndBounding: the one-call Prestart (sbx run) makes the
// call's procfs and empties its bounding set ahead, as a server's prepared
// thread does: the call that takes it runs in its PID namespace with the
// same /proc and bounding set as a call launched without a prestart. A
// plan that keeps a capability does not take it (its command has the
// capability in its bounding set, in another PID namespace), nor does a
// plan without a procfs of its own.
func TestPrestartProcAndBounding(t *testing.T) {
	ws, plan := prestartPlan(t)
	DiscardPrestart()
	t.Cleanup(func() { DiscardPrestart(); waitInits(t, false) })
	if !plan.PrivateProc {
		t.Skip("SKIP: no procfs of the call's own here (the host's /proc has hidden parts)")
	}
	const script = `readlink /proc/self/ns/pid
grep CapBnd /proc/self/status
awk '$5 ~ /^\/proc/ {m[$5] = $6} END {for (k in m) print k, m[k]}' /proc/self/mountinfo | sort`
	fresh := strings.SplitN(shellOutput(t, plan, ws, script), "\n", 3)
	// That call's init is reaped off its path (stopInit): gone before the
	// prestart, it is not taken for the prestarted thread's.
	waitInits(t, false)
	prestart := func() string {
		t.Helper()
		Prestart(plan.NewNetNS, [3]*os.File{os.Stdin, os.Stdout, os.Stderr})
		waitInits(t, true)
		return nsLinks(t, childInits()[0])[1]
	}
	ready := prestart()
	got := strings.SplitN(shellOutput(t, plan, ws, script), "\n", 3)
	if len(got) != 3 || len(fresh) != 3 {
		t.Fatalf("the calls printed %q and %q", got, fresh)
	}
	if got[0] != ready {
		t.Errorf("the call ran in PID namespace %s, the prestarted thread's is %s", got[0], ready)
	}
	if got[1] != "CapBnd:\t0000000000000000" || fresh[1] != got[1] {
		t.Errorf("bounding set on the prestarted thread %q, without one %q", got[1], fresh[1])
	}
	if got[2] != fresh[2] || !strings.Contains(got[2], "/proc rw,") || !strings.Contains(got[2], "/proc/sys ro,") {
		t.Errorf("the mounts under /proc on the prestarted thread:\n%s\nwithout one:\n%s", got[2], fresh[2])
	}
	waitInits(t, false)

	ready = prestart()
	withCap := *plan
	withCap.Capabilities = []int{unix.CAP_NET_BIND_SERVICE}
	out := strings.Fields(shellOutput(t, &withCap, ws, "readlink /proc/self/ns/pid; grep CapBnd /proc/self/status"))
	if len(out) != 3 || out[0] == ready || out[2] != "0000000000000400" {
		t.Errorf("a plan keeping CAP_NET_BIND_SERVICE printed %q (the prestarted thread's PID namespace is %s)", out, ready)
	}
	waitInits(t, false)

	ready = prestart()
	hostProc := *plan
	hostProc.PrivateProc = false
	if got := strings.TrimSpace(shellOutput(t, &hostProc, ws, "readlink /proc/self/ns/pid")); got == ready {
		t.Errorf("a plan without a procfs of its own ran on the thread prestarted with one (PID namespace %s)", got)
	}
}
