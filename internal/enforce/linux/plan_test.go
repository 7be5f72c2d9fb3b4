//go:build linux

package linux

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/enforce/linux/seccomp"
	"github.com/sbx-sandbox/sbx/internal/landlock"
	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/report"
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
	plan, err := Compile(pol, System{LandlockABI: 7, Privileged: true}, Options{})
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
	has := func(ds []report.Downgrade) bool {
		return slices.ContainsFunc(ds, func(d report.Downgrade) bool { return d.Feature == "landlock-resolve-unix" })
	}
	for _, abi := range []int{0, 7, 9} {
		for _, notif := range []bool{false, true} {
			plan, err := Compile(pol, System{LandlockABI: abi, Privileged: true, UserNotif: notif}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := has(plan.Downgrades), abi < 9 && !notif; got != want {
				t.Errorf("ABI %d, user notification %t: landlock-resolve-unix degraded %t, want %t", abi, notif, got, want)
			}
			if got, want := has(plan.UnsupervisedDowngrades()), abi < 9; got != want {
				t.Errorf("ABI %d, user notification %t: unsupervised, landlock-resolve-unix degraded %t, want %t", abi, notif, got, want)
			}
			plan.requireSupervisorFor([]report.Feature{report.FeatureLandlockResolveUnix})
			if got, want := plan.Supervise == SuperviseRequired, abi < 9 && notif; got != want {
				t.Errorf("ABI %d, user notification %t: supervisor required %t, want %t", abi, notif, got, want)
			}
			plan.withoutSupervisor()
			if got, want := has(plan.Downgrades), abi < 9; got != want {
				t.Errorf("ABI %d, user notification %t: without the supervisor, landlock-resolve-unix degraded %t, want %t", abi, notif, got, want)
			}
		}
	}
}

// TestPlanProxy: network by domain gets the proxy where the call has a
// network namespace of its own (root, or a user namespace), and is the
// network-domains downgrade without one: the command then runs with no
// network (seccomp keeps it to unix sockets), never with the host's.
func TestPlanProxy(t *testing.T) {
	add := profiles.New(&profiles.Network{Enabled: true, AllowedDomains: []string{"pypi.org"}}, nil, nil)
	pol, err := policy.Build(policy.Request{Mode: profiles.ReadOnly, Cwd: t.TempDir(), Additional: add})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		sys   System
		proxy bool
	}{
		{"root", System{LandlockABI: 7, Privileged: true}, true},
		{"user namespace", System{LandlockABI: 7, UserNS: true}, true},
		{"neither", System{LandlockABI: 7, UserNSReason: "max_user_namespaces is 0"}, false},
	} {
		plan, err := Compile(pol, tt.sys, Options{})
		if err != nil {
			t.Fatal(err)
		}
		degraded := slices.ContainsFunc(plan.Downgrades, func(d report.Downgrade) bool { return d.Feature == "network-domains" })
		if plan.Proxy != tt.proxy || degraded == tt.proxy || plan.NewNetNS != tt.proxy || plan.Enforcement().NetworkDomains != tt.proxy {
			t.Errorf("%s: proxy %v, netns %v, downgraded %v; want proxy %v", tt.name, plan.Proxy, plan.NewNetNS, degraded, tt.proxy)
		}
		if !tt.proxy && plan.Sockets != seccomp.SocketsUnixOnly {
			t.Errorf("%s: sockets %v, want unix only", tt.name, plan.Sockets)
		}
		if err := report.CheckRequired([]report.Feature{report.FeatureNetworkDomains}, plan.Downgrades); (err != nil) == tt.proxy {
			t.Errorf("%s: --require network-domains: %v", tt.name, err)
		}
	}
}

// TestProbeKeepsFileFacts: what Probe reads from files is kept for
// probeTTL and read again after it; the capability and Landlock answers
// are never kept.
func TestProbeKeepsFileFacts(t *testing.T) {
	t.Cleanup(func() {
		probed.Lock()
		probed.at = time.Time{}
		probed.Unlock()
	})
	priv := hasCapSysAdmin()
	fresh := probeFiles(priv)
	probed.Lock()
	probed.sys = System{UserNSReason: "kept (test)", LandlockABI: -1, Privileged: !priv}
	probed.at, probed.privileged = time.Now(), priv
	probed.Unlock()
	s := Probe()
	if s.UserNSReason != "kept (test)" {
		t.Errorf("within the TTL Probe read the files again: UserNSReason %q", s.UserNSReason)
	}
	// Facts read for the other privilege are read again: a privileged
	// probe leaves the user-namespace sysctls unread.
	probed.Lock()
	probed.privileged = !priv
	probed.Unlock()
	if s := Probe(); s.UserNSReason == "kept (test)" {
		t.Errorf("Probe kept facts read for privileged=%t", !priv)
	}
	if s.LandlockABI != landlock.RunningABI() || s.Privileged != hasCapSysAdmin() {
		t.Errorf("Probe kept LandlockABI %d, Privileged %t", s.LandlockABI, s.Privileged)
	}
	probed.Lock()
	probed.at = time.Now().Add(-2 * probeTTL)
	probed.Unlock()
	if s := Probe(); s.UserNSReason != fresh.UserNSReason || s.UserNS != fresh.UserNS || s.ProcFullyVisible != fresh.ProcFullyVisible {
		t.Errorf("after the TTL: %+v, want the files' %+v", s, fresh)
	}
}

// asUnprivileged is sys as an unprivileged process probes it: the
// user-namespace sysctls, which Probe leaves unread for a privileged one,
// read.
func asUnprivileged(sys System) System {
	sys.Privileged = false
	sys.UserNS, sys.UserNSReason = userNSAllowed()
	return sys
}

// TestUserNotifAvailable: the seccomp(2) question agrees with the list of
// actions in /proc, which it replaced.
func TestUserNotifAvailable(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/kernel/seccomp/actions_avail")
	if err != nil {
		t.Skipf("no seccomp actions list to compare with: %v", err)
	}
	want := slices.Contains(strings.Fields(string(b)), "user_notif")
	if got, reason := userNotifAvailable(); got != want {
		t.Errorf("userNotifAvailable() = %t (%s), actions_avail says %t (%q)", got, reason, want, b)
	}
}
