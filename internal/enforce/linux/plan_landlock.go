//go:build linux

package linux

import (
	"fmt"

	"github.com/sbx-sandbox/sbx/internal/landlock"
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
		for _, a := range lacking(0) {
			p.Downgrades = append(p.Downgrades, report.Downgrade{Feature: report.Feature(a.Feature), Reason: "Landlock is not available on this kernel"})
		}
		if p.Policy.Network == policy.NetworkIsolated {
			p.restrictUnixSockets(nil)
		}
		return
	}
	pol := p.Policy
	lp := &landlock.Ruleset{ABI: abi, HandledFS: handledFS(abi)}
	for _, r := range pol.ReadRoots {
		lp.Rules = append(lp.Rules, landlock.Rule{Path: r, Access: llRead})
	}
	for _, d := range p.Devices {
		if !pathOpens(d) {
			// A device file that is not there (no /dev/tty without a
			// terminal in some containers) cannot be opened by the command
			// either: no rule, nothing lost.
			continue
		}
		lp.Rules = append(lp.Rules, landlock.Rule{Path: d, Access: llDevice})
	}
	for _, w := range pol.WriteRoots {
		lp.Rules = append(lp.Rules, landlock.Rule{Path: w, Access: llRead | llWrite})
	}
	// The downgrades follow the ruleset's fields: file-system rights, the
	// network (and unix sockets), then scopes.
	p.downgradeLacking(abi, landlock.FS)
	if pol.Network == policy.NetworkIsolated {
		// Without a private namespace, TCP bind/connect is denied by
		// Landlock as well as by the seccomp socket filter (NoNetNS).
		if !p.NewNetNS {
			lp.HandledNet = landlock.Mask(landlock.Net, abi, landlock.NoNetNS)
		}
		p.restrictUnixSockets(lp)
	}
	p.downgradeLacking(abi, landlock.Scope)
	when := []landlock.When{landlock.Always}
	if pol.Network == policy.NetworkIsolated {
		// With the network on, the command may reach every abstract
		// socket, as it may every address.
		when = append(when, landlock.NetworkOff)
	}
	lp.Scoped = landlock.Mask(landlock.Scope, abi, when...)
	p.Landlock = lp
}

// lacking are the ABI rows newer than abi that every call running on abi is
// downgraded for, in table order. Rows needed only with the network off
// (RESOLVE_UNIX) are restrictUnixSockets': the supervisor can stand in for
// them.
func lacking(abi int) []landlock.ABI {
	var out []landlock.ABI
	for _, a := range landlock.ABIs {
		if a.Version > abi && a.Lacking != "" && a.LackingWhen == landlock.Always {
			out = append(out, a)
		}
	}
	return out
}

// downgradeLacking records the downgrades of a ruleset of ABI abi for the
// newer rows whose rights are of kind k: plain, or narrowed by the
// supervisor where the row says how (degrade).
func (p *Plan) downgradeLacking(abi int, k landlock.Kind) {
	for _, a := range lacking(abi) {
		if a.Rights[0].Kind != k {
			continue
		}
		plain := fmt.Sprintf("Landlock ABI %d: %s", abi, a.Lacking)
		if a.Supervised == "" {
			p.Downgrades = append(p.Downgrades, report.Downgrade{Feature: report.Feature(a.Feature), Reason: plain})
			continue
		}
		p.degrade(report.Feature(a.Feature), plain, fmt.Sprintf("Landlock ABI %d: %s", abi, a.Supervised))
	}
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
// resolving the path once inside the command's root (supervisor/unixconnect.go), and
// every sendmsg and sendmmsg, with a destination or not (supervisor/sendmsg.go). So
// with the supervisor there is no downgrade; without it (none can be had,
// or --no-denial-reports) there is, and --require landlock-resolve-unix
// makes the supervisor required (requireSupervisorFor).
func (p *Plan) restrictUnixSockets(lp *landlock.Ruleset) {
	if lp == nil || lp.ABI < resolveUnixABI {
		reason := "Landlock is not available on this kernel"
		if lp != nil {
			reason = fmt.Sprintf("Landlock ABI %d (ABI %d needed)", lp.ABI, resolveUnixABI)
		}
		row, _ := landlock.ByFeature(landlock.FeatureResolveUnix)
		d := report.Downgrade{Feature: report.Feature(row.Feature), Reason: reason + ": " + row.Lacking}
		if p.Supervise == SuperviseOff {
			p.Downgrades = append(p.Downgrades, d)
			return
		}
		// The supervisor carries out every connect, every datagram sent
		// to an address and every sendmsg and sendmmsg itself
		// (supervisor/unixconnect.go, supervisor/sendmsg.go), so with it nothing is degraded;
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
	lp.HandledFS |= landlock.Mask(landlock.FS, lp.ABI, landlock.NetworkOff)
	for i, r := range lp.Rules {
		if r.Access&llWrite == llWrite {
			lp.Rules[i].Access |= landlock.Granted(landlock.WriteRoot, landlock.NetworkOff)
		}
	}
}
