//go:build linux

package integration

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// feature is something the kernel or its configuration may lack.
type feature struct {
	// minKernel is the first kernel version that has the feature; on a
	// kernel at least that new, a missing feature fails the test.
	minKernel [2]int
	// check returns nil when the feature works. absent non-empty is
	// evidence that the kernel was deliberately configured without it (a
	// sysctl, a boot parameter), which is a reason to skip whatever the
	// kernel version; any other failure is err.
	check func() (absent string, err error)
}

var features = map[string]feature{
	"landlock":          {minKernel: [2]int{5, 13}, check: checkLandlock(1)},
	"landlock-refer":    {minKernel: [2]int{5, 19}, check: checkLandlock(2)},
	"landlock-truncate": {minKernel: [2]int{6, 2}, check: checkLandlock(3)},
	"landlock-net":      {minKernel: [2]int{6, 7}, check: checkLandlock(4)},
	"landlock-scope":    {minKernel: [2]int{6, 12}, check: checkLandlock(6)},
	// Linux 7.0 (ABI 9): LANDLOCK_ACCESS_FS_RESOLVE_UNIX.
	"landlock-resolve-unix": {minKernel: [2]int{7, 0}, check: checkLandlock(9)},
	"userns":                {minKernel: [2]int{3, 8}, check: func() (string, error) { return checkNamespaces(0) }},
	"netns":                 {minKernel: [2]int{3, 8}, check: func() (string, error) { return checkNamespaces(unix.CLONE_NEWNET) }},
	"mountns":               {minKernel: [2]int{3, 8}, check: func() (string, error) { return checkNamespaces(unix.CLONE_NEWNS) }},
	"pidns":                 {minKernel: [2]int{3, 8}, check: func() (string, error) { return checkNamespaces(unix.CLONE_NEWPID) }},
	// A procfs of a new PID namespace, mounted as sbx mounts it.
	"private-procfs": {minKernel: [2]int{3, 8}, check: checkPrivateProc},
	// The supervisor needs SECCOMP_USER_NOTIF_FLAG_CONTINUE (5.5).
	"user-notif":    {minKernel: [2]int{5, 5}, check: checkUserNotif},
	"ipv6-loopback": {check: checkIPv6Loopback},
	"mptcp":         {minKernel: [2]int{5, 6}, check: checkMPTCP},
	"ia32":          {check: checkIA32},
	// memfd_secret (5.14); ENOSYS where CONFIG_SECRETMEM is off or the
	// kernel was booted without secretmem.enable (its default before 6.5).
	"memfd_secret": {minKernel: [2]int{5, 14}, check: checkMemfdSecret},
	// linkat(fd, "", ..., AT_EMPTY_PATH) by the file's opener without
	// CAP_DAC_READ_SEARCH (6.10; root has it on every kernel).
	"linkat-empty-path": {minKernel: [2]int{6, 10}, check: checkLinkatEmptyPath},
}

type checkResult struct {
	absent string
	err    error
}

var checked sync.Map // feature name -> checkResult

func probeFeature(t *testing.T, name string) checkResult {
	t.Helper()
	f, ok := features[name]
	if !ok {
		t.Fatalf("Require: unknown feature %q", name)
	}
	if r, ok := checked.Load(name); ok {
		return r.(checkResult)
	}
	absent, err := f.check()
	if absent != "" && err == nil {
		err = errors.New(absent)
	}
	r := checkResult{absent: absent, err: err}
	checked.Store(name, r)
	return r
}

// Require is the only place a test may skip. It returns when the feature
// works; it skips, printing why, when the kernel is older than the feature
// or was configured without it; and it fails the test when the kernel is
// new enough to have the feature and nothing explains its absence (a
// broken check must not turn into silent skips). An unknown name fails.
func Require(t *testing.T, name string) {
	t.Helper()
	r := probeFeature(t, name)
	if r.err == nil {
		return
	}
	f := features[name]
	major, minor := kernelVersion(t)
	if f.minKernel != [2]int{} && (major < f.minKernel[0] || major == f.minKernel[0] && minor < f.minKernel[1]) {
		t.Skipf("SKIP: %s needs Linux %d.%d, this is %d.%d: %v", name, f.minKernel[0], f.minKernel[1], major, minor, r.err)
	}
	if r.absent != "" {
		t.Skipf("SKIP: %s is turned off on this system: %s", name, r.absent)
	}
	t.Fatalf("%s: Linux %d.%d should have it, but: %v", name, major, minor, r.err)
}

// has reports whether the feature works. It never skips and never fails:
// for the test's own helpers (an IPv6 server only where IPv6 works).
func has(t *testing.T, name string) bool {
	t.Helper()
	return probeFeature(t, name).err == nil
}

// expect reports whether the feature works, for tests whose expected outcome
// depends on it: enforced where it works, the degradation reported where it
// does not. Like Require it fails the test when the kernel is new enough to
// have the feature and nothing explains its absence, so a broken kernel or
// check cannot turn enforcement tests into degradation tests.
func expect(t *testing.T, name string) bool {
	t.Helper()
	r := probeFeature(t, name)
	if r.err == nil {
		return true
	}
	f := features[name]
	major, minor := kernelVersion(t)
	if r.absent == "" && (f.minKernel == [2]int{} || major > f.minKernel[0] || major == f.minKernel[0] && minor >= f.minKernel[1]) {
		t.Fatalf("%s: Linux %d.%d should have it, but: %v", name, major, minor, r.err)
	}
	return false
}

func kernelVersion(t *testing.T) (int, int) {
	t.Helper()
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	rel := unix.ByteSliceToString(u.Release[:])
	parts := strings.SplitN(rel, ".", 3)
	if len(parts) < 2 {
		t.Fatalf("cannot parse kernel release %q", rel)
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(strings.TrimFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	if err1 != nil || err2 != nil {
		t.Fatalf("cannot parse kernel release %q", rel)
	}
	return major, minor
}

// landlockABI is the running kernel's Landlock ABI version, 0 without it.
func landlockABI() (int, error) {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0, fmt.Errorf("landlock_create_ruleset(VERSION): %w", errno)
	}
	return int(v), nil
}

func checkLandlock(min int) func() (string, error) {
	return func() (string, error) {
		abi, err := landlockABI()
		if b, lerr := os.ReadFile("/sys/kernel/security/lsm"); err != nil && lerr == nil && !strings.Contains(","+string(b)+",", ",landlock,") {
			return fmt.Sprintf("Landlock is not among the enabled LSMs (%s): lsm= or CONFIG_LSM leaves it out", strings.TrimSpace(string(b))), nil
		}
		if err != nil {
			return "", err
		}
		if abi < min {
			return "", fmt.Errorf("Landlock ABI %d < %d", abi, min)
		}
		return "", nil
	}
}

// userNSOff returns the sysctl that turns unprivileged user namespaces off.
func userNSOff() string {
	for _, c := range []struct{ file, off string }{
		{"/proc/sys/user/max_user_namespaces", "0"},
		{"/proc/sys/kernel/unprivileged_userns_clone", "0"},
		{"/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1"},
	} {
		if b, err := os.ReadFile(c.file); err == nil && strings.TrimSpace(string(b)) == c.off {
			return fmt.Sprintf("%s is %s", c.file, c.off)
		}
	}
	return ""
}

// checkNamespaces starts the probe in new namespaces of kind (0: only a
// user namespace) the way sbx would: directly with CAP_SYS_ADMIN (root
// outside a container), inside a new user namespace otherwise (root in a
// container's default capability set lacks it).
func checkNamespaces(kind uintptr) (string, error) {
	_, err := namespaced(kind, os.Getuid(), "read", "/proc/self/uid_map")
	var off *userNSOffError
	if errors.As(err, &off) {
		return off.Error(), nil
	}
	return "", err
}

// namespaced runs the probe in new namespaces of kind, made as
// checkNamespaces says, and returns its output; the sysctls that forbid a
// user namespace are an error naming them. In a new user namespace the
// probe's uid is inside (0: it keeps its capabilities there across exec,
// as sbx's stage has them).
func namespaced(kind uintptr, inside int, probeArgs ...string) ([]byte, error) {
	attr := &syscall.SysProcAttr{Cloneflags: kind}
	if kind == 0 || !privileged() {
		if off := userNSOff(); off != "" {
			return nil, &userNSOffError{off}
		}
		attr.Cloneflags |= unix.CLONE_NEWUSER
		gid := os.Getgid()
		if inside == 0 {
			gid = 0
		}
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: inside, HostID: os.Getuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: os.Getgid(), Size: 1}}
	}
	cmd := exec.Command(probeBin, probeArgs...)
	cmd.SysProcAttr = attr
	b, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("start a process with clone flags %#x: %v %s", attr.Cloneflags, err, b)
	}
	return b, nil
}

// userNSOffError: a sysctl forbids unprivileged user namespaces.
type userNSOffError struct{ sysctl string }

func (e *userNSOffError) Error() string { return "unprivileged user namespaces: " + e.sysctl }

// checkPrivateProc mounts a new procfs in new mount and PID namespaces, as
// sbx does for a call. The kernel refuses it (EPERM) inside a user namespace
// when part of the /proc it would cover is hidden under other mounts (a
// container runtime's masked paths, mount_too_revealing): that is a reason,
// found in /proc's mounts; any other failure is an error.
func checkPrivateProc() (string, error) {
	b, err := namespaced(unix.CLONE_NEWNS|unix.CLONE_NEWPID, 0, "mount-proc")
	var off *userNSOffError
	if errors.As(err, &off) {
		return off.Error(), nil
	}
	if err != nil {
		return "", err
	}
	if strings.Contains(string(b), `"ok":true`) {
		return "", nil
	}
	if hidden := procOvermounts(); strings.Contains(string(b), `"errno":"EPERM","detail":"mount proc /proc"`) && len(hidden) > 0 {
		return fmt.Sprintf("the kernel refuses a new procfs in a user namespace while paths of /proc are hidden under other mounts (%s): %s",
			strings.Join(hidden, " "), strings.TrimSpace(string(b))), nil
	}
	return "", fmt.Errorf("probe mount-proc: %s", b)
}

// procOvermounts are the mount points below /proc (but binfmt_misc's, which
// procfs keeps an empty directory for).
func procOvermounts() []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && strings.HasPrefix(f[4], "/proc/") && f[4] != "/proc/sys/fs/binfmt_misc" {
			out = append(out, f[4])
		}
	}
	return out
}

func checkIPv6Loopback() (string, error) {
	if _, err := os.Stat("/proc/sys/net/ipv6"); err != nil {
		return "IPv6 is disabled (no /proc/sys/net/ipv6: ipv6.disable=1 or CONFIG_IPV6=n)", nil
	}
	if b, err := os.ReadFile("/proc/sys/net/ipv6/conf/lo/disable_ipv6"); err == nil && strings.TrimSpace(string(b)) == "1" {
		return "net.ipv6.conf.lo.disable_ipv6 is 1", nil
	}
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		return "", err
	}
	ln.Close()
	return "", nil
}

func checkMPTCP() (string, error) {
	if _, err := os.Stat("/proc/sys/net/mptcp"); errors.Is(err, os.ErrNotExist) {
		return "the kernel is built without MPTCP (CONFIG_MPTCP is not set: no /proc/sys/net/mptcp)", nil
	}
	if b, err := os.ReadFile("/proc/sys/net/mptcp/enabled"); err == nil && strings.TrimSpace(string(b)) == "0" {
		return "net.mptcp.enabled is 0", nil
	}
	return checkSocket(unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP)()
}

// checkSocket creates a socket outside the sandbox. EPERM and EACCES mean
// the family exists but this user may not use it (AF_PACKET without
// CAP_NET_RAW), which is enough for a test that the sandbox refuses it.
func checkSocket(family, typ, proto int) func() (string, error) {
	return func() (string, error) {
		fd, err := unix.Socket(family, typ|unix.SOCK_CLOEXEC, proto)
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			return "", nil
		}
		if err != nil {
			return "", fmt.Errorf("socket(%d, %d, %d): %w", family, typ, proto, err)
		}
		unix.Close(fd)
		return "", nil
	}
}

// checkUserNotif reads the seccomp actions the kernel offers, as sbx does.
func checkUserNotif() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/seccomp/actions_avail")
	if err != nil {
		return "", err
	}
	for _, a := range strings.Fields(string(b)) {
		if a == "user_notif" {
			return "", nil
		}
	}
	return "", fmt.Errorf("no user_notif in /proc/sys/kernel/seccomp/actions_avail: %q", b)
}

// checkIA32 runs `int $0x80` outside the sandbox: a kernel without IA32
// emulation (CONFIG_IA32_EMULATION=n or ia32_emulation=0) answers SIGSEGV,
// which the probe recovers and prints as its errno (an older probe died of
// it, which is recognised too). Anything else is an error, not a skip.
func checkIA32() (string, error) {
	const lacking = "the kernel has no IA32 syscall emulation (int $0x80 raises SIGSEGV outside the sandbox)"
	cmd := exec.Command(probeBin, "int80")
	b, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGSEGV {
			return lacking, nil
		}
	}
	if err != nil {
		return "", fmt.Errorf("probe int80: %v %s", err, b)
	}
	switch {
	case strings.Contains(string(b), `"errno":"SIGSEGV"`):
		return lacking, nil
	case strings.Contains(string(b), `"ok":true`):
		return "", nil
	}
	return "", fmt.Errorf("probe int80: %s", b)
}

// TestRequireUnknownFeatureFails runs Require("no-such-feature") in a child
// test process (a t.Fatal cannot be observed from the test that calls it).
func TestRequireUnknownFeatureFails(t *testing.T) {
	if os.Getenv("SBX_IT_REQUIRE_UNKNOWN") == "1" {
		Require(t, "no-such-feature")
		return
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^TestRequireUnknownFeatureFails$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SBX_IT_REQUIRE_UNKNOWN=1", "SBX_BIN="+sbxBin, "SBX_PROBE="+probeBin)
	b, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(b), `unknown feature "no-such-feature"`) || strings.Contains(string(b), "SKIP") {
		t.Errorf("Require with an unknown feature did not fail the test: err=%v\n%s", err, b)
	}
}
