//go:build linux

package linux

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// compileLandlock adds the Landlock ruleset for abi. Without Landlock
// (abi 0) and with a mount namespace to be had (mountNS), read-only mounts
// confine the writes instead.
func (p *Plan) compileLandlock(abi int, mountNS bool) {
	if abi == 0 {
		switch {
		case mountNS:
			p.degrade(report.FeatureLandlock, "Landlock is not available on this kernel: every mount but the writable roots is read-only in the call's mount namespace instead; device files outside the policy stay writable",
				"Landlock is not available on this kernel: every mount but the writable roots is read-only in the call's mount namespace instead; writes to device files outside the policy are refused only by the seccomp supervisor, best effort")
		default:
			p.degrade(report.FeatureLandlock, "Landlock is not available on this kernel: file-system writes are not restricted",
				"file-system writes are refused only by the seccomp supervisor, best effort: a racing thread can change a path after the check")
		}
		// What later ABIs add is missing too, so --require of any part refuses.
		for _, f := range []report.Feature{report.FeatureLandlockRefer, report.FeatureLandlockTruncate, report.FeatureLandlockScope} {
			p.Downgrades = append(p.Downgrades, report.Downgrade{Feature: f, Reason: "Landlock is not available on this kernel"})
		}
		if p.Policy.Network == policy.NetworkIsolated {
			p.restrictUnixSockets(nil)
		}
		return
	}
	pol := p.Policy
	lp := &LandlockPlan{ABI: abi, HandledFS: handledFS(abi)}
	for _, r := range pol.ReadRoots {
		lp.Rules = append(lp.Rules, LandlockRule{Path: r, Access: llRead})
	}
	for _, d := range p.Devices {
		if !pathOpens(d) {
			// A device file that is not there (no /dev/tty without a
			// terminal in some containers) cannot be opened by the command
			// either: no rule, nothing lost.
			continue
		}
		lp.Rules = append(lp.Rules, LandlockRule{Path: d, Access: llDevice})
	}
	for _, w := range pol.WriteRoots {
		lp.Rules = append(lp.Rules, LandlockRule{Path: w, Access: llRead | llWrite})
	}
	if abi < 2 {
		p.Downgrades = append(p.Downgrades, report.Downgrade{Feature: report.FeatureLandlockRefer,
			Reason: "Landlock ABI 1: renaming or linking files across directories is always denied"})
	}
	if abi < 3 {
		p.degrade(report.FeatureLandlockTruncate, fmt.Sprintf("Landlock ABI %d: truncating files outside the writable roots is not restricted", abi),
			fmt.Sprintf("Landlock ABI %d: truncating files outside the writable roots is refused only by the seccomp supervisor, best effort", abi))
	}
	if pol.Network == policy.NetworkIsolated && !p.NewNetNS {
		// Without a private namespace, TCP bind/connect is denied by Landlock
		// as well as by the seccomp socket filter.
		if abi >= 4 {
			lp.HandledNet = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
		}
	}
	if pol.Network == policy.NetworkIsolated {
		p.restrictUnixSockets(lp)
	}
	if abi >= 6 {
		lp.Scoped = unix.LANDLOCK_SCOPE_SIGNAL
		if pol.Network == policy.NetworkIsolated {
			lp.Scoped |= unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
		}
	} else {
		p.Downgrades = append(p.Downgrades, report.Downgrade{Feature: report.FeatureLandlockScope,
			Reason: fmt.Sprintf("Landlock ABI %d: signals to and abstract unix sockets of processes outside the sandbox are not scoped", abi)})
	}
	p.Landlock = lp
}

// restrictUnixSockets makes pathname unix sockets outside the writable roots
// unreachable with the network off, as the network namespace makes the
// network unreachable: a socket is a way out of the sandbox (a host daemon,
// ssh-agent, the Docker socket) just like a TCP connection. Sockets inside
// the writable roots are the command's own (a test server, a build daemon),
// so the write roots grant RESOLVE_UNIX with the write rights.
//
// With the network on, RESOLVE_UNIX is not handled: every unix socket stays
// reachable, as every address does.
//
// Below ABI 9 (lp nil: no Landlock) the seccomp supervisor keeps them out of
// reach instead, race-free: it carries out every connect and every
// datagram sent to an address itself, on the command's own socket, after
// resolving the path once inside the command's root (unixconnect.go), and
// every sendmsg and sendmmsg, with a destination or not (sendmsg.go). So
// with the supervisor there is no downgrade; without it (none can be had,
// or --no-denial-reports) there is, and --require landlock-resolve-unix
// makes the supervisor required (requireSupervisorFor).
func (p *Plan) restrictUnixSockets(lp *LandlockPlan) {
	if lp == nil || lp.ABI < resolveUnixABI {
		reason := "Landlock is not available on this kernel"
		if lp != nil {
			reason = fmt.Sprintf("Landlock ABI %d (ABI %d needed)", lp.ABI, resolveUnixABI)
		}
		d := report.Downgrade{Feature: report.FeatureLandlockResolveUnix,
			Reason: reason + ": pathname unix sockets outside the writable roots stay reachable with the network off"}
		if p.Supervise == SuperviseOff {
			p.Downgrades = append(p.Downgrades, d)
			return
		}
		// The supervisor carries out every connect, every datagram sent
		// to an address and every sendmsg and sendmmsg itself
		// (unixconnect.go, sendmsg.go), so with it nothing is degraded;
		// only a plan without it has the downgrade.
		p.supervisorFeatures = append(p.supervisorFeatures, d.Feature)
		if lp != nil && lp.ABI >= 6 && !p.NewNetNS {
			// IMPORTANT: except without a private network namespace,
			// where only Landlock's scope confines abstract sockets: a
			// connect or send to an abstract address continues, and a
			// thread can rewrite it to a path after the check.
			p.addSupervised(report.Downgrade{Feature: d.Feature, Reason: reason +
				": the seccomp supervisor refuses connects and sends to pathname unix sockets outside the writable roots, race-free, but one to an abstract address continues (only Landlock's scope confines it without a network namespace), and a thread that rewrites it to a path after the check reaches that path"}, d)
			return
		}
		p.unsupervisedOnly = append(p.unsupervisedOnly, d)
		return
	}
	lp.HandledFS |= unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX
	for i, r := range lp.Rules {
		if r.Access&llWrite == llWrite {
			lp.Rules[i].Access |= unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX
		}
	}
}
