//go:build linux

package linux

import (
	"github.com/sbx-sandbox/sbx/internal/report"

	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Doctor probes what this kernel, user and container can enforce. Unlike
// Probe it really creates a user and a network namespace, once.
func Doctor() []report.Check {
	sys := Probe()
	var out []report.Check
	ll := report.Check{Feature: "landlock", Available: sys.LandlockABI > 0, Detail: fmt.Sprintf("ABI %d", sys.LandlockABI),
		Fallback: "every mount but the writable roots read-only in a mount namespace (root or user namespaces), else writes unrestricted; reported as degraded \"landlock\""}
	if sys.LandlockABI == 0 {
		ll.Detail = "not available (kernel < 5.13, or landlock missing from lsm=)"
	}
	out = append(out, ll)
	for _, f := range []struct {
		name   string
		abi    int
		detail string
	}{
		{"landlock-refer", 2, "rename/link across directories inside writable roots"},
		{"landlock-truncate", 3, "truncate restricted to writable roots"},
		{"landlock-net", 4, "TCP bind/connect rules (used when no network namespace can be made)"},
		{"landlock-ioctl-dev", 5, "device ioctls restricted to the terminal and /dev/null"},
		{"landlock-scope", 6, "signals and abstract unix sockets scoped to the sandbox"},
		{"landlock-audit", 7, "denials logged to the audit subsystem"},
		{"landlock-resolve-unix", 9, "with the network off, pathname unix sockets outside writable roots unreachable"},
	} {
		out = append(out, report.Check{Feature: f.name, Available: sys.LandlockABI >= f.abi,
			Detail: fmt.Sprintf("needs ABI %d: %s", f.abi, f.detail), Fallback: "reported as degraded"})
	}
	out = append(out, seccompCheck())
	out = append(out, report.Check{Feature: "denial-reports", Available: sys.UserNotif,
		Detail:   strings.TrimSpace("seccomp user notification (Linux 5.0): the supervisor reports what the policy forbids " + sys.UserNotifReason),
		Fallback: "denials are not reported; reported as degraded \"denial-reports\""})
	priv := report.Check{Feature: "privileged", Available: sys.Privileged,
		Detail:   fmt.Sprintf("euid %d, CAP_SYS_ADMIN %t: namespaces made by the launcher thread", os.Geteuid(), sys.Privileged),
		Fallback: "user namespace + re-executed stage (about 2 ms more per call)"}
	if sys.ServerUserNS {
		priv.Detail = fmt.Sprintf("euid %d, CAP_SYS_ADMIN only in the user namespace sbx serve made at start-up: namespaces made by the launcher thread inside it; no capability can be kept (--cap-add)", os.Geteuid())
	}
	out = append(out, priv)
	out = append(out, rootAccessCheck(sys))
	out = append(out, userNSCheck(sys))
	out = append(out, cgroupCheck())
	return out
}

func seccompCheck() report.Check {
	c := report.Check{Feature: "seccomp", Fallback: "refuse to run: seccomp is required for every mode but danger-full-access"}
	mode, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0)
	switch {
	case err != nil:
		c.Detail = "not available: " + err.Error()
	case mode != 0:
		c.Available, c.Detail = true, "sbx itself already runs under a seccomp filter (nested filters stack)"
	default:
		c.Available, c.Detail = true, "filter mode available"
	}
	return c
}

// userNSCheck makes the namespaces of a stage launch (TryUserNS), which is
// the only conclusive test (sysctls, AppArmor and seccomp of a container, or
// an outer sandbox, can each forbid it).
func userNSCheck(sys System) report.Check {
	c := report.Check{Feature: "userns", Fallback: "network isolated by seccomp (AF_UNIX only) and Landlock TCP; .git carve-outs not enforced; reported as degraded"}
	if !sys.UserNS {
		c.Detail = sys.UserNSReason
		return c
	}
	if err := TryUserNS(); err != nil {
		c.Detail = err.Error()
		return c
	}
	c.Available, c.Detail = true, "unprivileged user, network and mount namespaces work"
	return c
}

func cgroupCheck() report.Check {
	c := report.Check{Feature: "cgroups", Fallback: "memory and pids limits through rlimits in the stage (unprivileged); a cpu limit is not enforced"}
	var found []string
	for _, p := range []string{"/sys/fs/cgroup/cgroup.controllers", "/sys/fs/cgroup/unified/cgroup.controllers"} {
		if b, err := os.ReadFile(p); err == nil {
			found = append(found, fmt.Sprintf("v2 at %s (controllers: %s)", strings.TrimSuffix(p, "/cgroup.controllers"), strings.TrimSpace(string(b))))
		}
	}
	if _, err := os.Stat("/sys/fs/cgroup/memory/memory.limit_in_bytes"); err == nil {
		found = append(found, "v1 memory controller")
	}
	c.Available = len(found) > 0
	c.Detail = strings.Join(found, "; ")
	if !c.Available {
		c.Detail = "no cgroup file system found"
	}
	if (!hasCapSysAdmin() || inServerUserNS) && os.Getenv(cgroupEnv) == "" {
		c.Detail += "; not root and no " + cgroupEnv + ": limits fall back to rlimits"
	}
	return c
}
