package profiles

import (
	"fmt"
	"strings"
)

// This file holds the small wire enums that sit beside Mode: the approval
// policy, the per-call sandbox_permissions field and the grant scope. Each
// keeps the exact DESIGN.md spelling on the wire and rejects anything else.

// ApprovalPolicy says when a person (or an approver program) is asked.
// The zero value is ApprovalNever, the fail-closed policy: never ask, and deny
// whatever would need asking. It is not "approve silently".
type ApprovalPolicy int

const (
	ApprovalNever ApprovalPolicy = iota
	ApprovalOnRequest
	ApprovalOnFailure
	ApprovalUntrusted
)

var approvalNames = []string{"never", "on-request", "on-failure", "untrusted"}

// ApprovalPolicies lists every approval policy.
func ApprovalPolicies() []ApprovalPolicy {
	return []ApprovalPolicy{ApprovalNever, ApprovalOnRequest, ApprovalOnFailure, ApprovalUntrusted}
}

func (a ApprovalPolicy) String() string { return enumString(approvalNames, int(a), "ApprovalPolicy") }

// ParseApprovalPolicy parses the wire spelling of an approval policy.
func ParseApprovalPolicy(s string) (ApprovalPolicy, error) {
	i, err := enumParse(approvalNames, s, "approval policy")
	return ApprovalPolicy(i), err
}

func (a ApprovalPolicy) MarshalText() ([]byte, error) {
	return enumMarshal(approvalNames, int(a), "approval policy")
}

func (a *ApprovalPolicy) UnmarshalText(b []byte) error {
	v, err := ParseApprovalPolicy(string(b))
	if err == nil {
		*a = v
	}
	return err
}

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

var sandboxPermissionNames = []string{"use_default", "with_additional_permissions", "require_escalated"}

func (s SandboxPermissions) String() string {
	return enumString(sandboxPermissionNames, int(s), "SandboxPermissions")
}

// ParseSandboxPermissions parses the wire spelling of sandbox_permissions.
func ParseSandboxPermissions(s string) (SandboxPermissions, error) {
	i, err := enumParse(sandboxPermissionNames, s, "sandbox_permissions")
	return SandboxPermissions(i), err
}

// AsksForMore reports whether s asks for anything beyond the default, and so
// must come with a justification.
func (s SandboxPermissions) AsksForMore() bool { return s != UseDefault }

func (s SandboxPermissions) MarshalText() ([]byte, error) {
	return enumMarshal(sandboxPermissionNames, int(s), "sandbox_permissions")
}

func (s *SandboxPermissions) UnmarshalText(b []byte) error {
	v, err := ParseSandboxPermissions(string(b))
	if err == nil {
		*s = v
	}
	return err
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

var scopeNames = []string{"turn", "session"}

func (s Scope) String() string { return enumString(scopeNames, int(s), "Scope") }

// ParseScope parses the wire spelling of a grant scope.
func ParseScope(s string) (Scope, error) {
	i, err := enumParse(scopeNames, s, "grant scope")
	return Scope(i), err
}

func (s Scope) MarshalText() ([]byte, error) { return enumMarshal(scopeNames, int(s), "grant scope") }

func (s *Scope) UnmarshalText(b []byte) error {
	v, err := ParseScope(string(b))
	if err == nil {
		*s = v
	}
	return err
}

func enumString(names []string, i int, typ string) string {
	if i < 0 || i >= len(names) {
		return fmt.Sprintf("%s(%d)", typ, i)
	}
	return names[i]
}

func enumMarshal(names []string, i int, what string) ([]byte, error) {
	if i < 0 || i >= len(names) {
		return nil, fmt.Errorf("invalid %s %d", what, i)
	}
	return []byte(names[i]), nil
}

func enumParse(names []string, s, what string) (int, error) {
	for i, n := range names {
		if s == n {
			return i, nil
		}
	}
	return 0, fmt.Errorf("unknown %s %q (want %s)", what, s, strings.Join(names, ", "))
}
