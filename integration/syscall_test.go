//go:build linux

package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// sandboxedModes are the modes that restrict; each attack below is tried
// in all of them, with network off and on (the seccomp "always" rules do
// not depend on the network).
var sandboxedModes = [][]string{readOnly, wsWrite, {"--mode", "workspace-write", "--network"}}

func modeName(m []string) string { return strings.TrimPrefix(strings.Join(m[1:], ""), "--") }

// openPTY returns a new pseudo-terminal pair that is nobody's controlling
// terminal; slave.Name() is the slave's path (/dev/pts/N).
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open /dev/ptmx: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("ptsname: %v", err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open pty slave: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// probeTTY runs the probe's tiocsti action through sbx with a fresh pty as
// stdin, so the probe can make it its controlling terminal.
func probeTTY(t *testing.T, mode []string) probeResult {
	t.Helper()
	_, slave := openPTY(t)
	ws := workspace(t)
	args := append(append([]string{"run", "--cwd", ws}, mode...), "--", probeBin, "tiocsti")
	out := sbx(t, opts{args: args, dir: ws, stdinF: slave})
	if out.code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", out.code, out.stdout, out.stderr)
	}
	r := parseProbe(t, out)
	t.Logf("probe tiocsti -> %s", r)
	return r
}

// TestTIOCSTI: pushing input into the terminal is refused by seccomp, for
// the plain request and for TIOCSTI|1<<32 (the kernel truncates the request
// to 32 bits, so a filter comparing 64 bits would let it through).
func TestTIOCSTI(t *testing.T) {
	for _, mode := range sandboxedModes {
		t.Run(modeName(mode), func(t *testing.T) {
			r := probeTTY(t, mode)
			want(t, r, "EPERM")
			if !strings.Contains(r.Detail, "TIOCSCTTY=ok") {
				t.Errorf("the probe could not make the pty its terminal, so EPERM may be the kernel's: %s", r.Detail)
			}
		})
	}
	t.Run("danger-full-access", func(t *testing.T) {
		// Without a filter the same injection works, which is what makes
		// the EPERM above the filter's. Unprivileged callers get EIO when
		// dev.tty.legacy_tiocsti is 0 (Linux 6.2+).
		r := probeTTY(t, danger)
		wantErrno := ""
		if b, err := os.ReadFile("/proc/sys/dev/tty/legacy_tiocsti"); err == nil && strings.TrimSpace(string(b)) == "0" && !isRoot() {
			wantErrno = "EIO"
		}
		want(t, r, wantErrno)
	})
}

// TestPtraceParent: attaching to the parent of the command is EPERM, the
// filter's: in a PID namespace the parent is outside it (getppid() is 0, for
// which the kernel alone would say ESRCH), without one it is sbx.
func TestPtraceParent(t *testing.T) {
	// Without the filter the attach works: same user, no Yama.
	dangerErrno := ""
	if b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope"); err == nil && strings.TrimSpace(string(b)) != "0" && !isRoot() {
		t.Logf("Yama ptrace_scope=%s refuses the attach by itself", strings.TrimSpace(string(b)))
		dangerErrno = "EPERM"
	}
	if viaServe && serveUserNS {
		// The parent of a danger-full-access call is then the outer sbx
		// serve, which makes itself not dumpable (its environment is what
		// the server strips from commands'): the kernel refuses the
		// attach by itself.
		dangerErrno = "EPERM"
	}
	refusedByFilter(t, "ptrace-parent", dangerErrno)
}

// TestSetns: joining a namespace is EPERM, the filter's: root keeps
// CAP_SYS_ADMIN, with which it could join a host process's network
// namespace where Landlock does not scope /proc/PID/ns (before 5.13).
// Unprivileged, the kernel refuses it as well; danger-full-access shows
// the call itself works for root.
func TestSetns(t *testing.T) {
	// Without the sandbox setns needs CAP_SYS_ADMIN (which root in a
	// container's default capability set lacks).
	dangerErrno := "EPERM"
	if privileged() {
		dangerErrno = ""
	}
	refusedByFilter(t, "setns", dangerErrno)
}

// refusedByFilter runs the probe op in each sandboxed mode, where it must
// fail with EPERM, and in danger-full-access, where it must give
// dangerErrno ("" for success): where the two differ, the EPERM is the
// filter's.
func refusedByFilter(t *testing.T, op, dangerErrno string) {
	for _, mode := range sandboxedModes {
		t.Run(modeName(mode), func(t *testing.T) {
			r, _ := probe(t, workspace(t), mode, op)
			want(t, r, "EPERM")
		})
	}
	t.Run("danger-full-access", func(t *testing.T) {
		r, _ := probe(t, workspace(t), danger, op)
		want(t, r, dangerErrno)
	})
}

// TestInt80: an i386 syscall through int $0x80 is a foreign architecture
// to the filter. With the supervisor it is refused with ENOSYS and the
// report names it (getpid, i386 ABI); without one the filter kills the
// process: SIGSYS, so sbx exits 128+31, and the denial is inferred.
func TestInt80(t *testing.T) {
	Require(t, "ia32")
	for _, mode := range sandboxedModes {
		t.Run(modeName(mode), func(t *testing.T) {
			out, rep := run(t, workspace(t), mode, probeBin, "int80")
			if rep != nil && rep.degraded("denial-reports") == "" {
				if out.code != 0 {
					t.Fatalf("exit %d, want 0 (ENOSYS from the supervisor)\nstdout: %s\nstderr: %s", out.code, out.stdout, out.stderr)
				}
				want(t, parseProbe(t, out), "ENOSYS")
				if _, ok := foreignABIDenial(rep, "getpid", "i386"); !ok {
					t.Errorf("denials %+v, want one naming the i386 getpid", rep.Denials)
				}
				return
			}
			if out.code != 159 {
				t.Errorf("exit %d, want 159 (SIGSYS)\nstdout: %s\nstderr: %s", out.code, out.stdout, out.stderr)
			}
			if out.stdout != "" {
				t.Errorf("the i386 syscall returned: %s", out.stdout)
			}
			if rep == nil || rep.ExitCode != 159 || rep.Signal == nil || *rep.Signal != 31 || rep.SignalName != "SIGSYS" {
				t.Errorf("report: %+v, want exit_code 159, signal 31 SIGSYS", rep)
			}
		})
	}
	t.Run("danger-full-access", func(t *testing.T) {
		r, _ := probe(t, workspace(t), danger, "int80")
		want(t, r, "")
	})
}

// TestInheritedFDs: files the caller of sbx leaves open (fds 3..N, passed
// with exec.Cmd.ExtraFiles) do not reach the command: Landlock checks at
// open time, so an inherited fd would bypass it. The probe gets EBADF.
func TestInheritedFDs(t *testing.T) {
	dir := t.TempDir()
	secret := writeFile(t, filepath.Join(dir, "outside.txt"), "original\n")
	f, err := os.OpenFile(secret, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	extra := []*os.File{f, d, pw} // fds 3, 4, 5

	// Baseline: without sbx the probe does write through fd 3.
	base := filepath.Join(dir, "baseline.txt")
	bf, err := os.Create(base)
	if err != nil {
		t.Fatal(err)
	}
	want(t, probeDirect(t, []*os.File{bf}, "fd", "3"), "")
	bf.Close()

	for _, mode := range append(append([][]string{}, sandboxedModes...), danger) {
		for fd := 3; fd < 3+len(extra); fd++ {
			t.Run(fmt.Sprintf("%s/fd%d", modeName(mode), fd), func(t *testing.T) {
				ws := workspace(t)
				rp := filepath.Join(t.TempDir(), "report.json")
				args := append(append([]string{"run", "--cwd", ws, "--report", rp}, mode...), "--", probeBin, "fd", strconv.Itoa(fd))
				out := sbx(t, opts{args: args, dir: ws, extra: extra})
				r := parseProbe(t, out)
				t.Logf("probe fd %d -> %s", fd, r)
				want(t, r, "EBADF")
				if rep := readReport(t, rp); rep == nil || !rep.Enforcement.ClosedFDs {
					t.Errorf("report does not say closed_fds: true")
				}
			})
		}
	}
	wantContent(secret, "original\n")(t)
}

// TestSignalScope: the command cannot signal processes outside the sandbox,
// even the caller's own: they are invisible from its PID namespace (ESRCH).
// Without one (degraded pidns), Landlock ABI 6's signal scope refuses
// (EPERM); below ABI 6 as well (degraded landlock-scope too) nothing does.
func TestSignalScope(t *testing.T) {
	c := caps(t)
	sleep := exec.Command("sleep", "60")
	if err := sleep.Start(); err != nil {
		t.Fatalf("start sleep: %v", err)
	}
	defer func() { sleep.Process.Kill(); sleep.Wait() }()
	pid := strconv.Itoa(sleep.Process.Pid)
	wantErrno := "ESRCH"
	switch {
	case !c.namespaces && c.abi >= 6:
		wantErrno = "EPERM"
	case !c.namespaces:
		wantErrno = ""
	}
	for _, mode := range sandboxedModes {
		t.Run(modeName(mode), func(t *testing.T) {
			r, rep := probe(t, workspace(t), mode, "signal", pid)
			want(t, r, wantErrno)
			if rep.Enforcement.PIDNamespace != c.namespaces {
				t.Errorf("report: pid_namespace = %t, want %t", rep.Enforcement.PIDNamespace, c.namespaces)
			}
			if r.OK && (rep.degraded("pidns") == "" || rep.degraded("landlock-scope") == "" && rep.degraded("landlock") == "") {
				t.Errorf("signalled a process outside, but degraded does not say pidns and landlock-scope: %+v", rep.Degraded)
			}
		})
	}
	t.Run("danger-full-access", func(t *testing.T) {
		r, _ := probe(t, workspace(t), danger, "signal", pid)
		want(t, r, "")
	})
}
