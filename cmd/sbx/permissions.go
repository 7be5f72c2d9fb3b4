package main

import (
	"context"

	"sbx/escalate"
	"sbx/policy"
	"sbx/profiles"
)

// escalation is the permission part of a request: grants, the per-call
// escalation pair, who approves, and the deployment guard.
type escalation struct {
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
}

// permissionsReport says which permissions came from where.
type permissionsReport struct {
	StandingMode profiles.Mode `json:"standing_mode"`
	Mode         profiles.Mode `json:"mode"`
	// Via is how the call got what it runs with: standing, grant, approval.
	Via escalate.Via `json:"via"`
	// Preauthorized are the caller's own permissions (--allow-*, --network,
	// additional_permissions with sandbox_permissions use_default).
	Preauthorized profiles.Profile `json:"preauthorized"`
	Session       profiles.Profile `json:"session"`
	Turn          profiles.Profile `json:"turn"`
	Call          profiles.Profile `json:"call"`
	// GuardRemoved lists what the guard took away, last.
	GuardRemoved []escalate.Removal `json:"guard_removed"`
}

// resolvePermissions runs the escalation pipeline: standing policy, sticky
// grants, validation and approval (fail closed), the final policy, and the
// guard on top. base carries everything but the mode and additional
// permissions; explicit is the call's normalised profile.
func resolvePermissions(ctx context.Context, base policy.Request, explicit profiles.Profile, preauth profiles.Profile, e escalation) (policy.Policy, permissionsReport, error) {
	rep := permissionsReport{StandingMode: base.Mode, Mode: base.Mode, Preauthorized: preauth, GuardRemoved: []escalate.Removal{}}
	guard, err := escalate.LoadGuard(e.GuardPath)
	if err != nil {
		return policy.Policy{}, rep, err
	}
	grants, err := e.Grants.Normalize(base.Cwd)
	if err != nil {
		return policy.Policy{}, rep, err
	}
	standingReq := base
	standingReq.Additional = preauth
	standing, err := policy.Build(standingReq)
	if err != nil {
		return policy.Policy{}, rep, err
	}
	eff := grants.Effective(explicit, e.SandboxPermissions)
	rep.Session, rep.Turn, rep.Call = eff.Sources.Session, eff.Sources.Turn, eff.Sources.Call
	dec, err := escalate.Decide(ctx, escalate.Call{
		CallID: e.CallID, Tool: "shell", Cwd: base.Cwd,
		Standing:           escalate.StandingFrom(standing),
		SandboxPermissions: e.SandboxPermissions, Justification: e.Justification,
		Target: e.Target, Additional: explicit,
		Granted:          profiles.Merge(grants.Session, grants.Turn),
		StrictAutoReview: eff.StrictAutoReview,
	}, e.ApprovalPolicy, e.Approver)
	if err != nil {
		return policy.Policy{}, rep, err
	}
	rep.Mode, rep.Via = dec.Mode, dec.Via
	finalReq := base
	finalReq.Mode = dec.Mode
	finalReq.Additional = profiles.Merge(preauth, eff.Permissions)
	final, err := policy.Build(finalReq)
	if err != nil {
		return policy.Policy{}, rep, err
	}
	applied := guard.Apply(final)
	applied.Policy.Masked = applied.MaskRead
	rep.GuardRemoved = append(rep.GuardRemoved, applied.Removed...)
	return applied.Policy, rep, nil
}
