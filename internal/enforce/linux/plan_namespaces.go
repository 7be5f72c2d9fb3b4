//go:build linux

package linux

import (
	"fmt"
	"runtime"
	"slices"
	"strings"

	"github.com/sbx-sandbox/sbx/internal/enforce"
	"github.com/sbx-sandbox/sbx/internal/enforce/linux/seccomp"
	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// This file decides a plan's namespaces, network, /proc and kept
// capabilities (compile calls each).

// compileCapabilities takes the capabilities the command keeps
// (--cap-add), which only root's thread launch can give.
func (p *Plan) compileCapabilities(sys System) error {
	for _, name := range p.Policy.Capabilities {
		c, err := enforce.ParseCapability(name)
		if err != nil {
			return err
		}
		if !sys.Privileged || sys.ServerUserNS {
			// The stage's capabilities would be its user namespace's, and
			// it gets only those it needs: keeping one is for root alone.
			// The CLI let root through (cap_add, --cap-add); root in a
			// container's default capability set lacks CAP_SYS_ADMIN.
			return fmt.Errorf("--cap-add/cap_add %s: keeping a capability needs sbx run as root with CAP_SYS_ADMIN (root without it, as in a container, gets a user namespace, whose capabilities are not the host's)", name)
		}
		if !slices.Contains(p.Capabilities, c) {
			p.Capabilities = append(p.Capabilities, c)
		}
	}
	return nil
}

// compileNamespaces picks the launch and its PID and user namespaces for
// sys; without user namespaces, what the mounts would have given is
// downgraded.
func (p *Plan) compileNamespaces(sys System) {
	pol := p.Policy
	switch {
	case sys.Privileged:
		p.NewPIDNS = runtime.GOARCH == "amd64" // the thread launch's init is x86-64 code
		if !p.NewPIDNS {
			p.Downgrades = append(p.Downgrades, report.Downgrade{Feature: report.FeaturePIDNS,
				Reason: "no PID namespace init for " + runtime.GOARCH + " yet: processes the command leaves behind survive if sbx is killed"})
		}
	case sys.UserNS:
		p.NewUserNS, p.NewPIDNS = true, true
		p.Launch = LaunchStage
	default:
		p.Downgrades = append(p.Downgrades, report.Downgrade{Feature: report.FeaturePIDNS,
			Reason: "no user namespaces (" + sys.UserNSReason + "): processes the command leaves behind survive if sbx is killed"})
		if len(p.ReadOnlyMounts) > 0 {
			plain := report.Downgrade{Feature: report.FeatureMountNS,
				Reason: "no user namespaces (" + sys.UserNSReason + "): read-only carve-outs " + strings.Join(p.ReadOnlyMounts, ", ") + " are writable"}
			if p.Supervise != SuperviseOff {
				p.addSupervised(report.Downgrade{Feature: report.FeatureMountNS, Reason: plain.Reason + " (the seccomp supervisor refuses the writes it sees, best effort)"}, plain)
			} else {
				p.Downgrades = append(p.Downgrades, plain)
			}
			p.ReadOnlyMounts = nil
		}
		if len(p.MaskedMounts) > 0 {
			p.Downgrades = append(p.Downgrades, report.Downgrade{Feature: report.FeatureMask,
				Reason: "no user namespaces (" + sys.UserNSReason + "): guard deny-read paths " + strings.Join(p.MaskedMounts, ", ") + " stay readable"})
			p.MaskedMounts = nil
		}
		if pol.Network == policy.NetworkIsolated {
			p.Downgrades = append(p.Downgrades, report.Downgrade{Feature: report.FeatureNetNS,
				Reason: "no user namespaces (" + sys.UserNSReason + "): network isolated by seccomp (AF_UNIX only) and Landlock TCP rules instead"})
		}
	}
}

// compileNetwork gives an isolated call its network namespace, network by
// domain its proxy, and picks the seccomp socket rules.
func (p *Plan) compileNetwork(sys System, needNS bool) {
	pol := p.Policy
	p.NewNetNS = needNS && pol.Network == policy.NetworkIsolated
	if pol.Domains != nil {
		// Without a namespace of its own the command would share the
		// host's loopback with the proxy's listener, and seccomp keeps it
		// to unix sockets anyway: it runs without network, reported.
		p.Proxy = p.NewNetNS
		if !p.Proxy {
			p.Downgrades = append(p.Downgrades, report.Downgrade{Feature: report.FeatureNetworkDomains,
				Reason: "no network namespace (no user namespaces: " + sys.UserNSReason + "): network by domain needs one for the proxy; the command runs without network"})
		}
	}
	switch {
	case pol.Network == policy.NetworkFull:
		p.Sockets = seccomp.SocketsAny
	case p.NewNetNS:
		p.Sockets = seccomp.SocketsLoopbackNetns
	default:
		p.Sockets = seccomp.SocketsUnixOnly
	}
}

// compileProc decides the command's /proc: a procfs of the call's own PID
// namespace where one can be mounted, else the host's, reported.
func (p *Plan) compileProc(sys System, mountNS bool) {
	switch {
	case !mountNS || !p.NewPIDNS:
		p.Downgrades = append(p.Downgrades, report.Downgrade{Feature: report.FeatureProcfs,
			Reason: "no PID and mount namespace: the command sees the host's /proc (processes of its own user are visible, and readable where the kernel's ptrace rules allow)"})
	case !sys.ProcFullyVisible && !(sys.Privileged && sys.InitUserNS):
		// The kernel refuses a new procfs inside a user namespace when the
		// host's /proc has parts hidden under other mounts (a container
		// runtime's masked paths): the new one would reveal them.
		p.Downgrades = append(p.Downgrades, report.Downgrade{Feature: report.FeatureProcfs,
			Reason: "the host's /proc has paths hidden under other mounts (a container's masked paths), so the kernel allows no new procfs: the command sees the host's /proc"})
	default:
		p.PrivateProc = true
	}
}
