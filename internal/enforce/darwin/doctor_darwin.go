//go:build darwin

package darwin

import (
	"github.com/sbx-sandbox/sbx/internal/report"

	"fmt"
	"os"
	"os/exec"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/profiles"
)

// Doctor probes what this Mac can enforce. It runs /usr/bin/true once under
// a read-only profile: only a real run shows that sandbox-exec accepts the
// profile sbx generates.
//
// IMPORTANT: unverified on Apple hardware.
func Doctor() []report.Check {
	var out []report.Check
	ver, err := unix.Sysctl("kern.osproductversion")
	if err != nil {
		ver = "unknown (" + err.Error() + ")"
	}
	out = append(out, report.Check{Feature: report.FeatureMacOS, Available: true, Detail: "macOS " + ver})
	out = append(out, executable(report.FeatureSandboxExec, SandboxExec, "refuse to run: every mode but danger-full-access needs it"))
	out = append(out, profileCheck())
	out = append(out, executable(report.FeatureDenialReports, logPath, "denials are not reported; reported as degraded \"denial-reports\""))
	out = append(out, report.Check{Feature: report.FeatureParentDeathKill, Detail: "macOS has no parent-death signal",
		Fallback: "the command outlives a killed sbx (still under its profile); reported as degraded"})
	return out
}

func executable(feature report.Feature, path, fallback string) report.Check {
	c := report.Check{Feature: feature, Fallback: fallback}
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		c.Detail = err.Error()
	case fi.Mode()&0o111 == 0:
		c.Detail = path + " is not executable"
	default:
		c.Available, c.Detail = true, path
	}
	return c
}

// profileCheck compiles the read-only policy and runs /usr/bin/true under it.
func profileCheck() report.Check {
	c := report.Check{Feature: report.FeatureSeatbeltProfile, Fallback: "refuse to run: the generated profile does not work here"}
	pol := policy.Policy{Mode: profiles.ReadOnly, ReadRoots: []string{"/"}, Devices: policy.DefaultDevices}
	plan, err := Compile(pol, DefaultOptions())
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	path, argv := plan.Command("/usr/bin/true", []string{"true"})
	cmd := &exec.Cmd{Path: path, Args: argv}
	if outb, err := cmd.CombinedOutput(); err != nil {
		c.Detail = fmt.Sprintf("read-only profile: %v: %s", err, outb)
		return c
	}
	c.Available, c.Detail = true, "read-only profile runs /usr/bin/true"
	return c
}
