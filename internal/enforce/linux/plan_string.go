//go:build linux

package linux

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sbx-sandbox/sbx/internal/landlock"
	"github.com/sbx-sandbox/sbx/internal/netrule"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// String renders the plan as stable text for `sbx explain` and golden tests.
func (p *Plan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "mode: %s\nlaunch: %s\n", p.Policy.Mode, p.Launch)
	if l := p.Limits; !l.IsZero() {
		fmt.Fprintf(&b, "limits: memory=%d pids=%d cpus=%g via %s\n", l.MemoryBytes, l.Pids, l.CPUs, p.LimitMechanism)
	}
	if p.Launch == LaunchDirect {
		b.WriteString("no restrictions (danger-full-access)\n")
		return b.String()
	}
	fmt.Fprintf(&b, "namespaces: user=%t pid=%t net=%t mount=%t uts=%t ipc=%t\n", p.NewUserNS || p.ServerUserNS, p.NewPIDNS, p.NewNetNS, p.needsMountNS(), p.NewUTSNS, p.NewIPCNS)
	if d := p.Policy.Domains; p.Proxy {
		allowed := strings.Join(netrule.Strings(d.Allowed), ",")
		if d.AllowAll {
			allowed = "every host"
		}
		fmt.Fprintf(&b, "proxy: HTTP and SOCKS5 on 127.0.0.1 and ::1 in the call's network namespace, allowed %s", allowed)
		if len(d.Denied) > 0 {
			fmt.Fprintf(&b, ", denied %s", strings.Join(netrule.Strings(d.Denied), ","))
		}
		fmt.Fprintf(&b, ", private addresses %t\n", d.AllowPrivateAddresses)
	}
	caps := "none"
	if len(p.Capabilities) > 0 {
		var names []string
		for _, c := range p.Capabilities {
			names = append(names, CapabilityName(c))
		}
		caps = strings.Join(names, ",")
	}
	fmt.Fprintf(&b, "capabilities: %s kept (bounding set emptied, securebits locked)\n", caps)
	for _, op := range p.MountOps() {
		fmt.Fprintf(&b, "mount: %s\n", op)
	}
	for _, w := range p.Watched {
		fmt.Fprintf(&b, "watch: %s (missing carve-out, left missing: creating it is refused by the supervisor; after the call, whatever appeared there is removed and reported)\n", w)
	}
	for _, l := range p.MaskedLinks {
		fmt.Fprintf(&b, "mask: %s (inode %d:%d) has %d name(s) no mask covers\n", l.Path, l.Dev, l.Ino, l.Uncovered)
	}
	for _, d := range p.Policy.DenyGlobs {
		fmt.Fprintf(&b, "deny-glob: deny_%s %s (given %s): existing matches masked or read-only above; new ones refused by the supervisor only\n", d.Access, d.Pattern, d.Given)
	}
	if lp := p.Landlock; lp != nil {
		fmt.Fprintf(&b, "landlock: abi=%d handled_fs=%s\n", lp.ABI, accessString(lp.HandledFS))
		if lp.HandledNet != 0 {
			fmt.Fprintf(&b, "landlock: handled_net=%s (no port allowed)\n", landlock.Names(landlock.Net, lp.HandledNet))
		}
		for _, r := range lp.Rules {
			fmt.Fprintf(&b, "landlock: allow %s %s\n", r.Path, accessString(r.Access&lp.HandledFS))
		}
	}
	fmt.Fprintf(&b, "seccomp: sockets=%s\n", p.Sockets)
	if p.Supervise != SuperviseOff {
		b.WriteString("supervisor: USER_NOTIF calls are checked against the policy; what it forbids is refused and reported, the rest continues to Landlock\n")
		if slices.Contains(p.supervisorFeatures, report.FeatureLandlockResolveUnix) {
			b.WriteString("supervisor: connect, datagrams to an address, and every sendmsg and sendmmsg are carried out by the supervisor on the command's socket; a pathname unix socket outside the writable roots is refused (EACCES), race-free\n")
		}
	}
	for _, r := range p.Seccomp {
		fmt.Fprintf(&b, "seccomp: %s\n", r)
	}
	for _, d := range p.Downgrades {
		fmt.Fprintf(&b, "degraded: %s: %s\n", d.Feature, d.Reason)
	}
	return b.String()
}
