package call

import (
	"time"

	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/netrule"
	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/report"
	"github.com/sbx-sandbox/sbx/internal/shells"
)

// Request is one call, from `sbx run` flags or `sbx exec` JSON, before
// anything about it is decided.
type Request struct {
	Command []string
	// Shell, when set, makes Command from a shell kind and a script.
	Shell         *shells.Spec
	Cwd           string
	Mode          profiles.Mode
	WritableRoots []string
	ExcludeTmp    bool
	ExcludeTmpdir bool
	CarveOuts     []string
	// Protect are names kept read-only in every writable root besides
	// policy.DefaultProtected (dropped by NoDefaultProtect); ProtectField
	// names them in errors (--protect, protect).
	Protect          []string
	ProtectField     string
	NoDefaultProtect bool
	Network          bool
	Additional       profiles.Profile
	// Resolve pins names for the proxy of a network-by-domain call, as
	// curl's --resolve HOST:PORT:ADDR (policy.Domains.Resolve), parsed
	// where the request entered sbx (netrule.ParseResolves: the CLI's
	// flags, wire's decoding), which names the field at fault.
	Resolve []netrule.Resolve
	// Tools are rows of the tool table (tools.Table) the caller opts the
	// call into (--tool, "tools"): each one's cache and state directories
	// writable and its registry domains reachable through the proxy, as
	// the caller's own permissions (ToolProfile).
	Tools []string
	// Preauthorized marks Additional as the caller's own configuration
	// (sbx run's --allow-* flags, sbx exec's "preauthorized": true), which
	// needs no approval under use_default. Without it, additional
	// permissions under use_default are refused: a runtime that forwards a
	// model's arguments verbatim must not get unapproved permissions.
	Preauthorized bool
	// Env is sbx's own environment; EnvPolicy makes the command's from it.
	Env       []string
	EnvPolicy profiles.EnvPolicy
	Timeout   time.Duration
	Limits    report.Limits
	Require   []string
	// CapAdd are Linux capabilities the command keeps; CapAddField names
	// them in errors (--cap-add, cap_add).
	CapAdd      []string
	CapAddField string
	Escalation  Escalation
	// KillGrace is the time between a relayed SIGTERM and the kill (0:
	// host.DefaultKillGrace).
	KillGrace time.Duration
	// RetryOnSuccess asks for the retry hint of a call that succeeded
	// with denials (Prepared.Retry): without it, such a call gets none.
	RetryOnSuccess bool
}

// Escalation is the permission part of a request: grants, the per-call
// escalation pair, who approves, and the deployment guard.
type Escalation struct {
	CallID             string
	EnvironmentID      string
	Grants             profiles.Grants
	SandboxPermissions profiles.SandboxPermissions
	Justification      string
	// Target is the mode a require_escalated call asks for.
	Target         profiles.Mode
	ApprovalPolicy profiles.ApprovalPolicy
	Approver       escalate.Approver
	GuardPath      string
	// Tool names the tool to the approver: "shell" (the default) or "fs".
	Tool string
	// Control are sbx's own control-plane paths, kept out of the call by
	// mounts as the guard's paths are (sbx serve's; see ControlPaths).
	Control ControlPaths

	// CapAdd are the capabilities the call asks to keep as a request
	// (Prepare sets it: cap_add but for the caller's own, preauthorized
	// under use_default), which escalate asks about.
	CapAdd []string
	// Env is the command's environment (Prepare sets it): it places the
	// tools' cache and state directories, which sbx creates on approval
	// when a grant names one that is missing (creatable).
	Env []string
	// Command is the argv the approver is shown (Prepare sets it: the
	// command when no shell spec rewrites it and the call is not a
	// file-system change's stage; nil otherwise).
	Command []string
}

// PrestartHint guesses, before Prepare, whether the call will be launched
// in a way host.Prestart can make ready while Prepare runs (sandboxed, no
// limits), and whether with a network namespace (the call does not ask for
// the network itself). It is only a guess: grants, approval and the guard
// may decide otherwise, and a wrong guess costs only the namespaces made.
// The caller adds what only it knows: the prestarted stage takes the
// command's stdio, so a call on a pty is never prestarted.
func PrestartHint(r Request) (netns, ok bool) {
	if r.Mode == profiles.DangerFullAccess || !r.Limits.IsZero() {
		return false, false
	}
	// The network is decided as Build will (policy.DecideNetwork), with
	// --network merged in as Prepare merges it (a full network beside a
	// deny list runs behind the proxy, in a namespace of its own).
	return policy.DecideNetwork(r.Mode, r.networkProfile()).OwnNamespace(), true
}

// networkProfile is the network part of the call's own permissions:
// Additional with --network (network_access) merged in, as Prepare does.
func (r Request) networkProfile() profiles.Profile {
	if !r.Network {
		return r.Additional
	}
	return profiles.Merge(r.Additional, profiles.New(profiles.FullNetwork(), nil, nil))
}
