//go:build linux

package linux

import (
	"fmt"
	"os"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/enforce"
	"github.com/sbx-sandbox/sbx/policy"
	"github.com/sbx-sandbox/sbx/profiles"
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

// TestPlanResolveUnixSupervised: below Landlock ABI 9 with the network off,
// landlock-resolve-unix is degraded only without the supervisor (none can
// be had, or it is turned off): with it, every connect, addressed datagram,
// sendmsg and sendmmsg is carried out by the supervisor; requiring it makes
// the supervisor required.
func TestPlanResolveUnixSupervised(t *testing.T) {
	pol, err := policy.Build(policy.Request{Mode: profiles.WorkspaceWrite, Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	has := func(ds []enforce.Downgrade) bool {
		return slices.ContainsFunc(ds, func(d enforce.Downgrade) bool { return d.Feature == "landlock-resolve-unix" })
	}
	for _, abi := range []int{0, 7, 9} {
		for _, notif := range []bool{false, true} {
			plan, err := Compile(pol, System{LandlockABI: abi, Privileged: true, UserNotif: notif})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := has(plan.Downgrades), abi < 9 && !notif; got != want {
				t.Errorf("ABI %d, user notification %t: landlock-resolve-unix degraded %t, want %t", abi, notif, got, want)
			}
			if got, want := has(plan.UnsupervisedDowngrades()), abi < 9; got != want {
				t.Errorf("ABI %d, user notification %t: unsupervised, landlock-resolve-unix degraded %t, want %t", abi, notif, got, want)
			}
			plan.RequireSupervisorFor([]string{"landlock-resolve-unix"})
			if got, want := plan.Supervise == SuperviseRequired, abi < 9 && notif; got != want {
				t.Errorf("ABI %d, user notification %t: supervisor required %t, want %t", abi, notif, got, want)
			}
			plan.WithoutSupervisor()
			if got, want := has(plan.Downgrades), abi < 9; got != want {
				t.Errorf("ABI %d, user notification %t: without the supervisor, landlock-resolve-unix degraded %t, want %t", abi, notif, got, want)
			}
		}
	}
}
