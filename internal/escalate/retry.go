package escalate

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sbx-sandbox/sbx/internal/fspath"
	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/report"
	"github.com/sbx-sandbox/sbx/internal/tools"
)

// RetryInput is what SmallestRetry needs to know about a call that had
// denials.
type RetryInput struct {
	// Policy is the policy the call ran under, after the guard.
	Policy policy.Policy
	Guard  Guard
	// Additional is the call's own additional profile, normalised; the
	// retry keeps it, because it is the same call again.
	Additional profiles.Profile
	// SandboxPermissions is the call's own: it decides what a grant must
	// cover for the same call to go through (see Retry.Grant).
	SandboxPermissions profiles.SandboxPermissions
	Denials            []report.Denial
	// Env is the command's environment: it places the tools' cache and
	// state roots (tools.Resolve) and says what HOME and PATH are.
	Env []string
	// Command is the call's argv: its program (or, for a shell's -c, the
	// programs its script runs) names the tool whose roots a denial on the
	// way to several is meant for (commandTools).
	Command []string
}

// Retry is the exact-retry hint: the escalation fields to add to the same
// call so that every denial that can be let through is. Its JSON is the
// `retry` object of a report, without the argv and request the CLI adds.
type Retry struct {
	// SandboxPermissions is with_additional_permissions or
	// require_escalated; absent when no escalation would help.
	SandboxPermissions *profiles.SandboxPermissions `json:"sandbox_permissions,omitempty"`
	// AdditionalPermissions is the profile to send with
	// with_additional_permissions: the call's own plus, for each denial, the
	// exact path (the file written, or the directory a name is made in or
	// removed from) or the network.
	AdditionalPermissions *profiles.Profile `json:"additional_permissions,omitempty"`
	// EscalateTo is the mode for require_escalated.
	EscalateTo *profiles.Mode `json:"escalate_to,omitempty"`
	// Justification is always empty, and present whenever
	// SandboxPermissions is: the caller fills it in.
	Justification *string `json:"justification,omitempty"`
	// Reason says why require_escalated was needed.
	Reason string `json:"reason,omitempty"`
	// Unresolved are the denials no escalation lets through, each with why
	// ("forbidden by guard: ...").
	Unresolved []Unresolved `json:"unresolved,omitempty"`
	// CapAdd are the capabilities the command must keep (cap_add) for the
	// denials file permissions caused inside its writable roots (a root
	// caller over files another uid owns): sent with
	// with_additional_permissions, a request an approver sees; a runtime
	// that asked the user itself sends them as its own instead
	// ("preauthorized": true under use_default), as no grant carries a
	// capability.
	CapAdd []string `json:"cap_add,omitempty"`
	// Alternatives are the other retries that let the same call through,
	// narrowest first; the first is this retry itself (without its own
	// alternatives). Present only when there is another: a write into a
	// repository's .git, whose narrow grant (that .git writable with its
	// hooks and configuration kept read-only) comes before the escalation
	// to danger-full-access. On the wire they are call.RetryHint's
	// "alternatives", each with its argv or request.
	Alternatives []Retry `json:"-"`
	// Grant is the other way to let the same call through, for a runtime
	// that asked the user itself: the profile to add to the call's
	// grants.turn (or grants.session) before sending the call again
	// unchanged. It is what the denials need plus, for a call that was
	// with_additional_permissions, the profile it asked for (granted, it
	// needs no approval again). Absent for require_escalated, which no grant
	// gives, and for a call that was require_escalated, which grants do
	// not apply to (profiles.Grants.Effective).
	Grant *profiles.Profile `json:"grant,omitempty"`
}

// Unresolved is a denial the retry cannot help with.
type Unresolved struct {
	Operation string          `json:"operation"`
	Path      string          `json:"path,omitempty"`
	Address   *report.Address `json:"address,omitempty"`
	Domain    string          `json:"domain,omitempty"`
	Port      int             `json:"port,omitempty"`
	Reason    string          `json:"reason"`
}

// setidUnresolved is why a "setid" denial gets no retry.
const setidUnresolved = "a set-user-ID or set-group-ID file would outlive the call with more privilege: no grant allows it"

// guardReason starts the reason of a denial that only the guard explains;
// a backend that finds the guard at fault by other means than the path (a
// hard link of a masked file, found by inode) says so with it.
const guardReason = "forbidden by guard: "

// SmallestRetry returns the smallest escalation that lets every denial of
// in through, in the ladder's order of size:
//
//   - with_additional_permissions naming what was refused, made stable
//     (stableGrant): a write to an existing object grants that object;
//     making, removing or renaming a name grants its directory (the
//     nearest existing one, since a granted path must exist); inside a
//     tool's cache or state root (tools.Table) the root, whole, even when
//     it is missing; never a hash-named, dated or temporary name, a whole
//     home directory, or a place whose contents run later outside the
//     sandbox (those denials are Unresolved); a network denial grants the
//     network;
//   - require_escalated to danger-full-access, only when additional
//     permissions cannot fit: a read-only carve-out (.git, --read-only),
//     which policy.Build keeps read-only inside any granted tree, or a
//     denial the policy refuses although the path is writable (device
//     nodes). No mode below danger-full-access lifts those;
//   - nothing, for what the guard forbids: it applies after every
//     escalation, so each such denial is Unresolved with "forbidden by
//     guard".
//
// ok is false when there are no denials.
func SmallestRetry(in RetryInput) (r Retry, ok bool) {
	if len(in.Denials) == 0 {
		return Retry{}, false
	}
	var write, escalate, caps []string
	// gitDirs are repositories' .git a denial was in, which a narrow grant
	// opens (policy.GitGrant); gitReasons say why each needed more.
	var gitDirs, gitReasons []string
	network := false
	var domains proxyRetry
	roots := tools.Resolve(in.Env)
	command := commandTools(in.Command)
	unresolved := func(d report.Denial, reason string) {
		r.Unresolved = append(r.Unresolved, Unresolved{Operation: d.Operation, Path: d.Path, Address: d.Address, Domain: d.Domain, Port: d.Port, Reason: reason})
	}
	for _, d := range in.Denials {
		if d.Source == ProxySource {
			switch {
			case in.Guard.DenyNetwork:
				unresolved(d, "forbidden by guard: deny_network")
			case d.Reason == report.ProxyReasonDenied && in.Guard.deniesDomain(d.Domain, d.Port):
				unresolved(d, "forbidden by guard: deny_domains")
			default:
				if reason := domains.add(d); reason != "" {
					unresolved(d, reason)
				}
			}
			continue
		}
		if d.Operation == "setid" {
			// A set-id bit is refused under every sandbox (invariant 7):
			// no grant lifts it, and asking for no sandbox to leave one is
			// not a retry anyone should be offered.
			unresolved(d, setidUnresolved)
			continue
		}
		if d.Reason == report.ReasonCallSocketBound || d.Reason == report.ReasonControlPlane {
			unresolved(d, d.Reason) // never a grant towards sbx's control plane
			continue
		}
		if d.Address != nil || isNetworkOp(d.Operation) {
			if in.Guard.DenyNetwork {
				unresolved(d, "forbidden by guard: deny_network")
			} else {
				network = true
			}
			continue
		}
		if d.Operation == "syscall" {
			unresolved(d, "no permission lets a syscall the seccomp filter refuses through")
			continue
		}
		if c := report.NeededCapability(d.Reason); c != "" {
			// The policy let it through; file permissions did not.
			if !slices.Contains(caps, c) {
				caps = append(caps, c)
			}
			continue
		}
		if strings.HasSuffix(d.Reason, report.NoCapabilityReason) {
			unresolved(d, d.Reason)
			continue
		}
		if !filepath.IsAbs(d.Path) {
			unresolved(d, "no path to grant")
			continue
		}
		if g := in.Guard.forbidding(d.Path); g != "" {
			unresolved(d, "forbidden by guard: "+g)
			continue
		}
		if m := covering(d.Path, in.Policy.Masked); m != "" {
			unresolved(d, "forbidden by guard: "+m+" is hidden")
			continue
		}
		if g, ok := in.Policy.DenyGlobAt(d.Path, false); ok {
			// A deny pattern (guard or profile) only narrows: nothing
			// granted or approved widens past it.
			unresolved(d, "forbidden: "+d.Path+" "+g.Reason())
			continue
		}
		if strings.HasPrefix(d.Reason, guardReason) {
			// The backend saw the guard at fault where the path does not
			// say it: another name (a hard link) of a masked file.
			unresolved(d, d.Reason)
			continue
		}
		if c := carveOutAt(d, in.Policy.CarveOuts); c != "" {
			what := d.Path + " is inside the read-only carve-out " + c
			if c == d.Path {
				what = d.Path + " is a read-only carve-out"
			}
			if gitNarrowable(d, c) {
				gitDirs = append(gitDirs, c)
				gitReasons = append(gitReasons, what)
				continue
			}
			escalate = append(escalate, what+": additional permissions cannot widen past a carve-out")
			continue
		}
		target := retryTarget(d)
		if fspath.CoveredBy(target, in.Policy.WriteRoots) {
			escalate = append(escalate, fmt.Sprintf("%s %s was refused although %s is writable (%s)", d.Operation, d.Path, target, d.Reason))
			continue
		}
		denied := ""
		if d.Operation == "create" || d.Operation == "mkdir" {
			denied = d.Path
		}
		g, refused := stableGrant(target, denied, command, roots)
		if refused != "" {
			unresolved(d, refused)
			continue
		}
		write = append(write, g)
	}
	empty := ""
	if len(escalate) > 0 {
		// An escalation lets the .git writes through too.
		for _, g := range gitReasons {
			escalate = append(escalate, g+": additional permissions cannot widen past a carve-out")
		}
		gitDirs = nil
	}
	write = append(write, dedupe(gitDirs)...)
	switch {
	case len(escalate) > 0 && in.Policy.Mode == profiles.DangerFullAccess:
		for _, reason := range escalate {
			r.Unresolved = append(r.Unresolved, Unresolved{Operation: "escalate", Reason: "no mode is wider than danger-full-access: " + reason})
		}
	case len(escalate) > 0:
		// Under danger-full-access everything else is let through too,
		// except what the guard forbids.
		sp, mode := profiles.RequireEscalated, profiles.DangerFullAccess
		r.SandboxPermissions, r.EscalateTo, r.Justification = &sp, &mode, &empty
		r.Reason = strings.Join(dedupe(escalate), "; ")
	case len(write) > 0 || network || domains.any() || len(caps) > 0:
		sp := profiles.WithAdditionalPermissions
		r.CapAdd = caps
		needed := profiles.New(domains.network(network), nil, write)
		add := profiles.Merge(in.Additional, needed)
		r.SandboxPermissions, r.AdditionalPermissions, r.Justification = &sp, &add, &empty
		switch {
		case len(write) == 0 && !network && !domains.any():
			// Capabilities alone: no grant carries them (CapAdd).
		case in.SandboxPermissions == profiles.UseDefault:
			// The call's own profile is preauthorised: it applies
			// with the grant as it did without.
			r.Grant = &needed
		case in.SandboxPermissions == profiles.WithAdditionalPermissions:
			grant := profiles.Merge(in.Additional, needed)
			r.Grant = &grant
		}
		if len(gitDirs) > 0 {
			r = withGitAlternative(r, dedupe(gitDirs), gitReasons)
		}
	}
	return r, true
}

func isNetworkOp(op string) bool {
	return op == "connect" || op == "bind" || op == "socket" || op == "send"
}

// retryTarget is what must be writable for d to go through: the object for
// a write, chmod or chown; its directory for anything that makes, removes
// or renames a name (Landlock checks those rights on the directory).
func retryTarget(d report.Denial) string {
	switch d.Operation {
	case "write", "truncate", "chmod", "chown":
		return d.Path
	}
	return filepath.Dir(d.Path)
}

// carveOutAt returns the carve-out that d's path is in, or for a rename
// onto a directory, lies under it.
func carveOutAt(d report.Denial, carveOuts []string) string {
	if c := covering(d.Path, carveOuts); c != "" {
		return c
	}
	if d.Operation == "rename" {
		for _, c := range carveOuts {
			if fspath.Within(c, d.Path) {
				return c
			}
		}
	}
	return ""
}

// forbidding returns the guard entry that forbids writing p, as
// "deny_write /etc", or "".
func (g Guard) forbidding(p string) string {
	if d := covering(p, g.DenyWrite); d != "" {
		return "deny_write " + d
	}
	if d := covering(p, g.DenyRead); d != "" {
		return "deny_read " + d
	}
	return ""
}

func covering(p string, bases []string) string {
	for _, b := range bases {
		if fspath.Within(p, b) {
			return b
		}
	}
	return ""
}

// nearestExisting returns p or its nearest existing ancestor: a granted
// path must exist (policy.Build refuses one that does not).
func nearestExisting(p string) string {
	for !fspath.Exists(p) && p != "/" {
		p = filepath.Dir(p)
	}
	return p
}

func dedupe(s []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
