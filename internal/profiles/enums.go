package profiles

import (
	"strings"

	"github.com/sbx-sandbox/sbx/internal/enum"
)

// This file holds the small wire enums that sit beside Mode: the approval
// policy, the per-call sandbox_permissions field and the grant scope. Each
// keeps the exact DESIGN.md spelling on the wire and rejects anything else.

// ApprovalPolicy says when a person (or an approver program) is asked.
// The zero value is ApprovalNever, the fail-closed policy: never ask, and deny
// whatever would need asking. It is not "approve silently".
//
// Besides the four named policies it holds Codex's granular policy
// (GranularPolicy, approval.go): granularTag plus one bit per category, so
// that a policy stays one comparable value that every layer passes,
// compares and records as before.
type ApprovalPolicy int

const (
	ApprovalNever ApprovalPolicy = iota
	ApprovalOnRequest
	ApprovalOnFailure
	ApprovalUntrusted
)

var approvalNames = enum.Names[ApprovalPolicy]{Type: "ApprovalPolicy", What: "approval policy",
	Names: []string{"never", "on-request", "on-failure", "untrusted"}}

// ApprovalPolicies lists every named approval policy (a granular one is
// built with GranularPolicy).
func ApprovalPolicies() []ApprovalPolicy {
	return []ApprovalPolicy{ApprovalNever, ApprovalOnRequest, ApprovalOnFailure, ApprovalUntrusted}
}

// String is the policy's name, or a granular policy's CLI spelling
// ("granular:sandbox_approval,rules"), which ParseApprovalPolicy reads back.
func (a ApprovalPolicy) String() string {
	if g, ok := a.Granular(); ok {
		return g.cliSpelling()
	}
	return approvalNames.String(a)
}

// ParseApprovalPolicy parses an approval policy as the CLI spells it: one
// of the four names, or "granular:" and the granular categories that are
// allowed, comma-separated ("granular:" alone allows none).
func ParseApprovalPolicy(s string) (ApprovalPolicy, error) {
	if rest, ok := strings.CutPrefix(s, granularPrefix); ok {
		g, err := parseGranularList(rest)
		if err != nil {
			return 0, err
		}
		return GranularPolicy(g), nil
	}
	return approvalNames.Parse(s)
}

// MarshalText is the CLI spelling (String); a value off the table is an
// error, never written.
func (a ApprovalPolicy) MarshalText() ([]byte, error) {
	if _, ok := a.Granular(); ok {
		return []byte(a.String()), nil
	}
	return approvalNames.Marshal(a)
}

// UnmarshalText reads one of the four names only: a granular policy comes
// as JSON's object (UnmarshalJSON) or as the CLI spelling (Parse), never as
// a second spelling of a JSON string.
func (a *ApprovalPolicy) UnmarshalText(b []byte) error { return approvalNames.Unmarshal(a, b) }

// SandboxPermissions is the per-call escalation field. The zero value,
// UseDefault, asks for nothing beyond the standing policy.
type SandboxPermissions int

const (
	// UseDefault runs the call under its standing mode (plus sticky grants).
	UseDefault SandboxPermissions = iota
	// WithAdditionalPermissions adds the call's additional permission profile.
	WithAdditionalPermissions
	// RequireEscalated runs this one call under a strictly wider mode.
	RequireEscalated
)

var sandboxPermissionNames = enum.Names[SandboxPermissions]{Type: "SandboxPermissions", What: "sandbox_permissions",
	Names: []string{"use_default", "with_additional_permissions", "require_escalated"}}

func (s SandboxPermissions) String() string { return sandboxPermissionNames.String(s) }

// ParseSandboxPermissions parses the wire spelling of sandbox_permissions.
func ParseSandboxPermissions(s string) (SandboxPermissions, error) {
	return sandboxPermissionNames.Parse(s)
}

// AsksForMore reports whether s asks for anything beyond the default, and so
// must come with a justification.
func (s SandboxPermissions) AsksForMore() bool { return s != UseDefault }

func (s SandboxPermissions) MarshalText() ([]byte, error) { return sandboxPermissionNames.Marshal(s) }

func (s *SandboxPermissions) UnmarshalText(b []byte) error {
	return sandboxPermissionNames.Unmarshal(s, b)
}

// Scope is where a granted profile is kept. The zero value is ScopeTurn, the
// narrower one, which is also what a response without a scope means.
type Scope int

const (
	// ScopeTurn keeps the grant on the turn that asked; it ends with that turn.
	ScopeTurn Scope = iota
	// ScopeSession keeps the grant for the rest of the session.
	ScopeSession
)

var scopeNames = enum.Names[Scope]{Type: "Scope", What: "grant scope", Names: []string{"turn", "session"}}

func (s Scope) String() string { return scopeNames.String(s) }

// ParseScope parses the wire spelling of a grant scope.
func ParseScope(s string) (Scope, error) { return scopeNames.Parse(s) }

func (s Scope) MarshalText() ([]byte, error) { return scopeNames.Marshal(s) }

func (s *Scope) UnmarshalText(b []byte) error { return scopeNames.Unmarshal(s, b) }
