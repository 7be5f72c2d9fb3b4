//go:build linux

package linux

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"sbx/enforce"
	"sbx/policy"
)

// Launch modes, as reported in enforcement.launch.
const (
	LaunchThread = "thread"
	LaunchStage  = "stage"
	LaunchDirect = "direct"
)

// System is what the running kernel and user offer; Probe fills it.
type System struct {
	LandlockABI int
	// Privileged: sbx may create namespaces and mount without a user namespace.
	Privileged bool
	// UserNS: unprivileged user namespaces can be created.
	UserNS bool
	// UserNSReason says why UserNS is false.
	UserNSReason string
}

// Probe inspects the running kernel and user. It makes no namespaces: the
// user-namespace answer comes from sysctls, and a launch that still fails to
// create one falls back and reports it.
func Probe() System {
	s := System{LandlockABI: LandlockABI(), Privileged: hasCapSysAdmin()}
	s.UserNS, s.UserNSReason = userNSAllowed()
	return s
}

func hasCapSysAdmin() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[0].Effective&(1<<unix.CAP_SYS_ADMIN) != 0
}

func userNSAllowed() (bool, string) {
	for _, c := range []struct{ file, bad string }{
		{"/proc/sys/user/max_user_namespaces", "0"},
		{"/proc/sys/kernel/unprivileged_userns_clone", "0"},
		{"/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1"},
	} {
		b, err := os.ReadFile(c.file)
		if err != nil {
			continue
		}
		if strings.TrimSpace(string(b)) == c.bad {
			return false, fmt.Sprintf("%s is %s", c.file, c.bad)
		}
	}
	return true, ""
}

// Plan is a Policy compiled for this kernel: the exact rules, namespaces and
// launch mode one call gets.
type Plan struct {
	Policy   policy.Policy
	Launch   string
	Landlock *LandlockPlan `json:",omitempty"`
	Seccomp  []SeccompRule `json:"-"`
	Sockets  SocketPolicy
	// NewNetNS: a private network namespace with only loopback up.
	NewNetNS bool
	// NewUserNS: the namespaces are created inside a new user namespace
	// (unprivileged caller); this needs the stage launch.
	NewUserNS bool
	// ReadOnlyMounts are existing carve-outs bind-mounted read-only in a
	// private mount namespace.
	ReadOnlyMounts []string
	// MaskedMounts are existing paths the guard forbids reading, hidden under
	// an empty read-only tmpfs (directories) or /dev/null (files).
	MaskedMounts []string
	Downgrades   []enforce.Downgrade
	SeccompProg  []unix.SockFilter
}

// Compile turns pol into a Plan for sys. It fails only on an internal error;
// whatever the kernel lacks becomes a Downgrade.
func Compile(pol policy.Policy, sys System) (*Plan, error) {
	p := &Plan{Policy: pol, Launch: LaunchThread}
	if pol.Unrestricted {
		p.Launch = LaunchDirect
		return p, nil
	}
	p.ReadOnlyMounts = existing(pol.ReadOnly)
	for _, ro := range pol.ReadOnly {
		if !slices.Contains(p.ReadOnlyMounts, ro) {
			// IMPORTANT: Landlock cannot subtract a subpath from a granted tree,
			// and a bind mount needs the path to exist, so a carve-out that does
			// not exist yet (a missing .git) is not protected against creation.
			p.Downgrades = append(p.Downgrades, enforce.Downgrade{Feature: "carve-out-create",
				Reason: ro + " does not exist; creating it is not prevented"})
		}
	}
	p.MaskedMounts = existing(pol.Masked)
	needNS := pol.Network == policy.NetworkIsolated || p.needsMountNS()
	switch {
	case !needNS:
	case sys.Privileged:
	case sys.UserNS:
		p.NewUserNS = true
		p.Launch = LaunchStage
	default:
		needNS = false
		if len(p.ReadOnlyMounts) > 0 {
			p.Downgrades = append(p.Downgrades, enforce.Downgrade{Feature: "mountns",
				Reason: "no user namespaces (" + sys.UserNSReason + "): read-only carve-outs " + strings.Join(p.ReadOnlyMounts, ", ") + " are writable"})
			p.ReadOnlyMounts = nil
		}
		if len(p.MaskedMounts) > 0 {
			p.Downgrades = append(p.Downgrades, enforce.Downgrade{Feature: "mask",
				Reason: "no user namespaces (" + sys.UserNSReason + "): guard deny-read paths " + strings.Join(p.MaskedMounts, ", ") + " stay readable"})
			p.MaskedMounts = nil
		}
		if pol.Network == policy.NetworkIsolated {
			p.Downgrades = append(p.Downgrades, enforce.Downgrade{Feature: "netns",
				Reason: "no user namespaces (" + sys.UserNSReason + "): network isolated by seccomp (AF_UNIX only) and Landlock TCP rules instead"})
		}
	}
	p.NewNetNS = needNS && pol.Network == policy.NetworkIsolated
	switch {
	case pol.Network == policy.NetworkFull:
		p.Sockets = SocketsAny
	case p.NewNetNS:
		p.Sockets = SocketsLoopbackNetns
	default:
		p.Sockets = SocketsUnixOnly
	}
	p.Seccomp = SeccompRules(p.Sockets)
	prog, err := CompileSeccomp(p.Seccomp)
	if err != nil {
		return nil, err
	}
	p.SeccompProg = prog
	p.compileLandlock(sys.LandlockABI)
	return p, nil
}

func (p *Plan) compileLandlock(abi int) {
	if abi == 0 {
		p.Downgrades = append(p.Downgrades, enforce.Downgrade{Feature: "landlock",
			Reason: "Landlock is not available on this kernel: file-system writes are not restricted"})
		return
	}
	pol := p.Policy
	lp := &LandlockPlan{ABI: abi, HandledFS: handledFS(abi)}
	for _, r := range pol.ReadRoots {
		lp.Rules = append(lp.Rules, LandlockRule{Path: r, Access: llRead})
	}
	for _, d := range append(append([]string(nil), pol.Devices...), ttyPaths()...) {
		lp.Rules = append(lp.Rules, LandlockRule{Path: d, Access: llDevice})
	}
	for _, w := range pol.WriteRoots {
		lp.Rules = append(lp.Rules, LandlockRule{Path: w, Access: llRead | llWrite})
	}
	if abi < 2 {
		p.Downgrades = append(p.Downgrades, enforce.Downgrade{Feature: "landlock-refer",
			Reason: "Landlock ABI 1: renaming or linking files across directories is always denied"})
	}
	if abi < 3 {
		p.Downgrades = append(p.Downgrades, enforce.Downgrade{Feature: "landlock-truncate",
			Reason: fmt.Sprintf("Landlock ABI %d: truncating files outside the writable roots is not restricted", abi)})
	}
	if pol.Network == policy.NetworkIsolated && !p.NewNetNS {
		// Without a private namespace, TCP bind/connect is denied by Landlock
		// as well as by the seccomp socket filter.
		if abi >= 4 {
			lp.HandledNet = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
		}
	}
	if abi >= 6 {
		lp.Scoped = unix.LANDLOCK_SCOPE_SIGNAL
		if pol.Network == policy.NetworkIsolated {
			lp.Scoped |= unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
		}
	} else {
		p.Downgrades = append(p.Downgrades, enforce.Downgrade{Feature: "landlock-scope",
			Reason: fmt.Sprintf("Landlock ABI %d: signals to and abstract unix sockets of processes outside the sandbox are not scoped", abi)})
	}
	p.Landlock = lp
}

// Enforcement describes the plan as applied, for the report.
func (p *Plan) Enforcement() enforce.Enforcement {
	e := enforce.Enforcement{Platform: "linux", Launch: p.Launch, NoNewPrivs: true, NewSession: true,
		ParentDeathKill: true, ClosedFDs: true}
	if p.Launch == LaunchDirect {
		return e
	}
	e.NetworkNamespace = p.NewNetNS
	e.MountNamespace = p.needsMountNS()
	e.MaskedPaths = p.MaskedMounts
	e.UserNamespace = p.NewUserNS
	e.ReadOnlyMounts = p.ReadOnlyMounts
	e.Seccomp = &enforce.SeccompInfo{Sockets: p.Sockets.String(), Rules: len(p.Seccomp)}
	if lp := p.Landlock; lp != nil {
		li := &enforce.LandlockInfo{ABI: lp.ABI, FS: true, NetTCP: lp.HandledNet != 0, Rules: len(lp.Rules)}
		if lp.Scoped&unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET != 0 {
			li.Scopes = append(li.Scopes, "abstract_unix_socket")
		}
		if lp.Scoped&unix.LANDLOCK_SCOPE_SIGNAL != 0 {
			li.Scopes = append(li.Scopes, "signal")
		}
		if lp.HandledFS&unix.LANDLOCK_ACCESS_FS_REFER != 0 {
			li.Features = append(li.Features, "refer")
		}
		if lp.HandledFS&unix.LANDLOCK_ACCESS_FS_TRUNCATE != 0 {
			li.Features = append(li.Features, "truncate")
		}
		if lp.HandledFS&unix.LANDLOCK_ACCESS_FS_IOCTL_DEV != 0 {
			li.Features = append(li.Features, "ioctl_dev")
		}
		e.Landlock = li
	}
	return e
}

// String renders the plan as stable text for `sbx explain` and golden tests.
func (p *Plan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "mode: %s\nlaunch: %s\n", p.Policy.Mode, p.Launch)
	if p.Launch == LaunchDirect {
		b.WriteString("no restrictions (danger-full-access)\n")
		return b.String()
	}
	fmt.Fprintf(&b, "namespaces: user=%t net=%t mount=%t\n", p.NewUserNS, p.NewNetNS, p.needsMountNS())
	for _, m := range p.ReadOnlyMounts {
		fmt.Fprintf(&b, "mount: ro-bind %s\n", m)
	}
	for _, m := range p.MaskedMounts {
		fmt.Fprintf(&b, "mount: mask %s\n", m)
	}
	if lp := p.Landlock; lp != nil {
		fmt.Fprintf(&b, "landlock: abi=%d handled_fs=%s\n", lp.ABI, accessString(lp.HandledFS))
		if lp.HandledNet != 0 {
			b.WriteString("landlock: handled_net=bind_tcp,connect_tcp (no port allowed)\n")
		}
		for _, r := range lp.Rules {
			fmt.Fprintf(&b, "landlock: allow %s %s\n", r.Path, accessString(r.Access&lp.HandledFS))
		}
	}
	fmt.Fprintf(&b, "seccomp: sockets=%s\n", p.Sockets)
	for _, r := range p.Seccomp {
		fmt.Fprintf(&b, "seccomp: %s\n", r)
	}
	for _, d := range p.Downgrades {
		fmt.Fprintf(&b, "degraded: %s: %s\n", d.Feature, d.Reason)
	}
	return b.String()
}

// needsMountNS reports whether the plan changes mounts, which needs a
// private mount namespace.
func (p *Plan) needsMountNS() bool { return len(p.ReadOnlyMounts) > 0 || len(p.MaskedMounts) > 0 }

func existing(paths []string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}
