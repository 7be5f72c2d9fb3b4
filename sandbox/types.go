package sandbox

import (
	"github.com/sbx-sandbox/sbx/internal/call"
	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/fsop"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/report"
	"github.com/sbx-sandbox/sbx/internal/shells"
	"github.com/sbx-sandbox/sbx/internal/wire"
)

// The types below are sbx's own, named here so that an embedder can name
// every type a request, a result or a question holds (TestNameable walks
// them). They are aliases: the values are the ones sbx's other front ends
// print, and their JSON is the contract's.

// Mode is a sandbox mode; its order is the escalation ladder.
type Mode = profiles.Mode

// The sandbox modes, narrowest first.
const (
	ReadOnly         = profiles.ReadOnly
	WorkspaceWrite   = profiles.WorkspaceWrite
	DangerFullAccess = profiles.DangerFullAccess
)

// SandboxPermissions is a call's escalation ("sandbox_permissions").
type SandboxPermissions = profiles.SandboxPermissions

// The escalations; any but UseDefault needs a Justification.
const (
	UseDefault                = profiles.UseDefault
	WithAdditionalPermissions = profiles.WithAdditionalPermissions
	RequireEscalated          = profiles.RequireEscalated
)

// ApprovalPolicy says when a person is asked ("approval_policy").
type ApprovalPolicy = profiles.ApprovalPolicy

// The named approval policies. ApprovalNever never asks and denies what
// would need asking.
const (
	ApprovalNever     = profiles.ApprovalNever
	ApprovalOnRequest = profiles.ApprovalOnRequest
	ApprovalOnFailure = profiles.ApprovalOnFailure
	ApprovalUntrusted = profiles.ApprovalUntrusted
)

// FSOp is the operation of a file-system change.
type FSOp = fsop.Kind

// The file-system operations.
const (
	FSWrite      = fsop.Write
	FSAppend     = fsop.Append
	FSMkdir      = fsop.Mkdir
	FSRemove     = fsop.Remove
	FSMove       = fsop.Move
	FSCopy       = fsop.Copy
	FSChmod      = fsop.Chmod
	FSApplyPatch = fsop.ApplyPatch
)

// Request's parts.
type (
	// Profile is a permission profile: network and file-system paths.
	Profile = profiles.Profile
	// Network and FileSystem are a profile's parts.
	Network    = profiles.Network
	FileSystem = profiles.FileSystem
	// Grants are stored grants, by scope.
	Grants = profiles.Grants
	// EnvPolicy is the environment policy.
	EnvPolicy = profiles.EnvPolicy
	// EnvMode is how much of this process's environment a command inherits.
	EnvMode = profiles.EnvMode
	// Shell is a shell spec: which shell runs the command, and how.
	Shell = shells.Spec
	// ShellKind names a shell's family (bash, sh, pwsh, ...).
	ShellKind = shells.Kind
	// Limits are the cgroup limits a request asks for.
	Limits = report.LimitsRequest
)

// Result's parts.
type (
	// Report is what a call was held to and what it did.
	Report = report.Report
	// Enforcement is what the backend applied.
	Enforcement = report.Enforcement
	// LandlockInfo and SeccompInfo are what Landlock and seccomp applied.
	LandlockInfo = report.LandlockInfo
	SeccompInfo  = report.SeccompInfo
	// Denial is one operation the sandbox denied.
	Denial = report.Denial
	// Address is the network address of a denied connect or bind.
	Address = report.Address
	// Resources are the cgroup's limits and what the call used.
	Resources = report.Resources
	// AppliedLimits are the limits a call ran with.
	AppliedLimits = report.Limits
	// Downgrade is a feature the backend could not apply, and why.
	Downgrade = report.Downgrade
	// Feature names an enforcement feature (Request.Require takes them).
	Feature = report.Feature
	// Check is one line of Doctor.
	Check = report.Check
	// Permissions says where a call's permissions came from.
	Permissions = call.Permissions
	// Via says how a call obtained what it runs with.
	Via = escalate.Via
	// Removal is what the guard took away.
	Removal = escalate.Removal
	// EnvReport names what the environment policy stripped and set.
	EnvReport = profiles.EnvReport
	// RetryHint is the exact-retry hint: the same call plus the smallest
	// escalation that lets it through.
	RetryHint = call.RetryHint
	// Retry is the escalation part of a RetryHint; Unresolved is a
	// denial it could not turn into a grant.
	Retry      = escalate.Retry
	Unresolved = escalate.Unresolved
)

// SchemaVersion is the version of the JSON contract a result marshals to.
const SchemaVersion = wire.SchemaVersion
