//go:build linux

package linux

import (
	"fmt"
	"os"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"sbx/policy"
	"sbx/profiles"
)

// TestPlanTerminal: a call's pty slave replaces the terminals behind sbx's
// own streams in the devices the command may open, so under --pty sbx's
// terminal is not among them.
func TestPlanTerminal(t *testing.T) {
	pol, err := policy.Build(policy.Request{Mode: profiles.ReadOnly, Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	// A real pty slave: Compile leaves out device files that are not there.
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	defer ptmx.Close()
	n, err := unix.IoctlGetUint32(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	pol.Terminal = fmt.Sprintf("/dev/pts/%d", n)
	plan, err := Compile(pol, System{LandlockABI: 7, Privileged: true})
	if err != nil {
		t.Fatal(err)
	}
	want := append(resolveAll(policy.DefaultDevices), pol.Terminal)
	if !slices.Equal(plan.Devices, want) {
		t.Errorf("devices %q, want %q", plan.Devices, want)
	}
	var ruled []string
	for _, r := range plan.Landlock.Rules {
		if r.Access == llDevice {
			ruled = append(ruled, r.Path)
		}
	}
	if !slices.Equal(ruled, want) {
		t.Errorf("device rules %q, want %q", ruled, want)
	}
}
