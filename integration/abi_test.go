//go:build linux

package integration

import (
	"runtime"
	"strings"
	"testing"
)

// foreignABIDenial returns the report's denial of a syscall of abi (x32,
// i386) named name, and whether there is one.
func foreignABIDenial(rep *report, name, abi string) (denial, bool) {
	for _, d := range rep.Denials {
		if d.Operation == "syscall" && d.Syscall == name && strings.Contains(d.Reason, "the "+abi+" ABI") {
			return d, true
		}
	}
	return denial{}, false
}

// TestForeignABIReported (issue 27 §5): a syscall of a foreign ABI (here
// x32: getpid with the x32 bit, the same instruction as a native syscall,
// so it is tried on every amd64 kernel) is refused whatever the kernel
// offers, and the report says so. With the supervisor the filter sends it
// there: the command gets ENOSYS and the denial names the syscall and the
// ABI. Without it (--no-denial-reports) the filter kills the command
// (SIGSYS, exit 159) and the report has an inferred denial saying why,
// which the kernel does not detail. On the old code the supervised call
// was killed with no denial at all.
func TestForeignABIReported(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("SKIP: x32 is an amd64 ABI")
	}
	for _, mode := range sandboxedModes {
		t.Run(modeName(mode)+"/supervised", func(t *testing.T) {
			Require(t, "user-notif")
			out, rep := run(t, workspace(t), mode, probeBin, "x32")
			if rep == nil {
				t.Fatalf("no report: exit %d, stderr %s", out.code, out.stderr)
			}
			if out.code != 0 {
				t.Fatalf("exit %d, want 0 (the probe gets ENOSYS)\nstdout: %s\nstderr: %s", out.code, out.stdout, out.stderr)
			}
			want(t, parseProbe(t, out), "ENOSYS")
			d, ok := foreignABIDenial(rep, "getpid", "x32")
			if !ok || d.Source != "seccomp-supervisor" || d.Confidence != "observed" {
				t.Errorf("denials %+v, want an observed denial of the x32 getpid", rep.Denials)
			}
		})
	}
	t.Run("unsupervised", func(t *testing.T) {
		if viaServe {
			skipVia(t, "--no-denial-reports has no exec field")
		}
		out, rep := run(t, workspace(t), append(append([]string{}, wsWrite...), "--no-denial-reports"), probeBin, "x32")
		if out.code != 159 || rep == nil || rep.Signal == nil || *rep.Signal != 31 {
			t.Fatalf("exit %d, report %+v; want 159, signal 31 (SIGSYS)\nstdout: %s", out.code, rep, out.stdout)
		}
		found := false
		for _, d := range rep.Denials {
			if d.Operation == "syscall" && d.Source == "seccomp-filter" && d.Confidence == "inferred" && strings.Contains(d.Reason, "SIGSYS") {
				found = true
			}
		}
		if !found {
			t.Errorf("denials %+v, want an inferred one from the SIGSYS death", rep.Denials)
		}
	})
	t.Run("danger-full-access", func(t *testing.T) {
		// No filter: the kernel answers (ENOSYS without x32 support, the
		// pid with it), and nothing is reported.
		out, rep := run(t, workspace(t), danger, probeBin, "x32")
		if out.code != 0 || rep == nil || len(rep.Denials) != 0 {
			t.Errorf("exit %d, report %+v; want 0 and no denial", out.code, rep)
		}
	})
}
