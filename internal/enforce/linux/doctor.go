//go:build linux

package linux

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/landlock"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// Doctor probes what this kernel, user and container can enforce. Unlike
// Probe it really creates a user and a network namespace, once.
func Doctor() []report.Check {
	sys := Probe()
	// Probe leaves it unread for a privileged process; doctor says it for
	// every user.
	sys.UserNS, sys.UserNSReason = userNSAllowed()
	var out []report.Check
	ll := report.Check{Feature: report.FeatureLandlock, Available: sys.LandlockABI > 0, Detail: fmt.Sprintf("ABI %d", sys.LandlockABI),
		Fallback: "every mount but the writable roots read-only in a mount namespace (root or user namespaces), else writes unrestricted; reported as degraded \"landlock\""}
	if sys.LandlockABI == 0 {
		ll.Detail = "not available (kernel < 5.13, or landlock missing from lsm=)"
	}
	out = append(out, ll)
	out = append(out, landlockChecks(sys.LandlockABI)...)
	out = append(out, seccompCheck())
	out = append(out, report.Check{Feature: report.FeatureDenialReports, Available: sys.UserNotif,
		Detail:   strings.TrimSpace("seccomp user notification (Linux 5.0): the supervisor reports what the policy forbids " + sys.UserNotifReason),
		Fallback: "denials are not reported; reported as degraded \"denial-reports\""})
	priv := report.Check{Feature: report.FeaturePrivileged, Available: sys.Privileged,
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

// landlockChecks are doctor's lines for what each ABI after the first adds,
// from the table of Landlock ABIs: available on a kernel of ABI abi or
// newer.
func landlockChecks(abi int) []report.Check {
	var out []report.Check
	for _, a := range landlock.ABIs {
		if a.Check == "" {
			continue
		}
		out = append(out, report.Check{Feature: report.Feature(a.Feature), Available: abi >= a.Version,
			Detail: fmt.Sprintf("needs ABI %d: %s", a.Version, a.Check), Fallback: "reported as degraded"})
	}
	return out
}

func seccompCheck() report.Check {
	c := report.Check{Feature: report.FeatureSeccomp, Fallback: "refuse to run: seccomp is required for every mode but danger-full-access"}
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
	c := report.Check{Feature: report.FeatureUserNS, Fallback: "network isolated by seccomp (AF_UNIX only) and Landlock TCP; .git carve-outs not enforced; reported as degraded"}
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
	c := report.Check{Feature: report.FeatureCgroups, Fallback: "memory and pids limits through rlimits in the stage (unprivileged); a cpu limit is not enforced"}
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
