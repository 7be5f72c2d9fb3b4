package call

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/fspath"
	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// Permissions is the provenance of each permission of a call: which came
// from where (the "permissions" object of a report).
type Permissions struct {
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
	// Created are the directories sbx made, as the calling user, before
	// the command started: granted write paths inside a tool's cache or
	// state directory (tools.Table) that did not exist yet.
	Created []string `json:"created,omitempty"`
	// Tools are the tool table rows the call opted into (--tool, "tools"):
	// their profile is part of Preauthorized.
	Tools []string `json:"tools,omitempty"`
}

// resolvePermissions runs the escalation pipeline: standing policy, sticky
// grants, validation and approval (fail closed), the final policy, and the
// guard on top. base carries everything but the mode and additional
// permissions; explicit is the call's normalised profile. The guard is
// loaded once, here, and returned for the retry.
func resolvePermissions(ctx context.Context, base policy.Request, explicit profiles.Profile, preauth profiles.Profile, e Escalation) (policy.Policy, Permissions, escalate.Guard, error) {
	rep := Permissions{StandingMode: base.Mode, Mode: base.Mode, Preauthorized: preauth, GuardRemoved: []escalate.Removal{}}
	guard, err := escalate.LoadGuard(e.GuardPath)
	if err != nil {
		return policy.Policy{}, rep, guard, err
	}
	pol, rep, guard, err := decide(ctx, base, explicit, preauth, e, guard, rep)
	return pol, rep, guard, err
}

// decide is resolvePermissions once the guard is loaded.
func decide(ctx context.Context, base policy.Request, explicit profiles.Profile, preauth profiles.Profile, e Escalation, guard escalate.Guard, rep Permissions) (policy.Policy, Permissions, escalate.Guard, error) {
	grants, err := e.Grants.Normalize(base.Cwd)
	if err != nil {
		return policy.Policy{}, rep, guard, err
	}
	// A granted tool cache that is missing is made once approved (below):
	// until then Build keeps it as a write root that does not exist.
	base.Create = creatable(e.Env, explicit, preauth, grants.Session, grants.Turn)
	standingReq := base
	standingReq.Additional = preauth
	standing, err := policy.Build(standingReq)
	if err != nil {
		return policy.Policy{}, rep, guard, err
	}
	eff := grants.Effective(explicit, e.SandboxPermissions)
	rep.Session, rep.Turn, rep.Call = eff.Sources.Session, eff.Sources.Turn, eff.Sources.Call
	tool := e.Tool
	if tool == "" {
		tool = "shell"
	}
	call := escalate.Call{
		CallID: e.CallID, EnvironmentID: e.EnvironmentID, Tool: tool, Cwd: base.Cwd,
		Standing:           escalate.StandingFrom(standing),
		SandboxPermissions: e.SandboxPermissions, Justification: e.Justification,
		Target: e.Target, Additional: explicit, Merged: preauth,
		Granted:          profiles.Merge(grants.Session, grants.Turn),
		StrictAutoReview: eff.StrictAutoReview,
		CapAdd:           e.CapAdd,
		Command:          e.Command,
	}
	// Validated once, here (Obtain below does not again). Nothing is asked
	// that would then be refused: the policy the call would run with, if
	// approved, is built and guarded first.
	if err := escalate.Validate(call); err != nil {
		return policy.Policy{}, rep, guard, err
	}
	finalReq := base
	finalReq.Mode = base.Mode
	if e.SandboxPermissions == profiles.RequireEscalated {
		finalReq.Mode = e.Target
	}
	finalReq.Additional = profiles.Merge(preauth, eff.Permissions)
	// Most calls ask for nothing beyond their standing permissions: the
	// final policy is then the standing one, built once (Build stats and
	// resolves every root and reads each .git).
	final := standing
	if finalReq.Mode != standingReq.Mode || !reflect.DeepEqual(finalReq.Additional, standingReq.Additional) {
		if final, err = policy.Build(finalReq); err != nil {
			return policy.Policy{}, rep, guard, err
		}
	}
	deployed := guard
	guard = withControl(guard, final, e.Control)
	if err := controlCwd(base.Cwd, guard, deployed); err != nil {
		return policy.Policy{}, rep, guard, err
	}
	applied := applyGuard(guard, final, base.Cwd, finalReq.Additional)
	controlReasons(applied.Removed, deployed, e.Control)
	if err := checkRequest(call, final, applied); err != nil {
		return policy.Policy{}, rep, guard, err
	}
	if len(base.Resolve) > 0 && applied.Policy.Domains == nil {
		// Only the proxy applies a pin, and none would run for this call
		// (grants and the guard count): refused before anyone is asked.
		return policy.Policy{}, rep, guard, &strictjson.FieldError{Field: "resolve", Err: mention{"no effect: no proxy runs for this call (it needs {additional_permissions.network.allowed_domains}, or {additional_permissions.network.denied_domains} beside the whole network)"}}
	}
	// The question says which missing tool directories an approval makes.
	call.Create = toCreate(base.Create, finalReq, applied)
	// ctx ending while the approver is asked settles the approval
	// cancelled (Ask drops a late answer); the call never starts. The
	// library installs no signal handler: sbx's own SIGINT and SIGTERM
	// reach here through the approver cmd/sbx wraps (its interruptible).
	dec, err := escalate.Obtain(ctx, call, e.ApprovalPolicy, e.Approver)
	if err != nil {
		return policy.Policy{}, rep, guard, err
	}
	if applied, err = createApproved(call.Create, finalReq, applied, guard, deployed, e.Control, &rep); err != nil {
		return policy.Policy{}, rep, guard, err
	}
	rep.Mode, rep.Via = dec.Mode, dec.Via
	if rep.Via == escalate.ViaStanding && eff.Implicit && !escalate.Missing(call.Standing, profiles.Profile{}, call.Granted).IsEmpty() {
		// Sticky grants applied implicitly and add to the standing
		// policy: the call runs on them.
		rep.Via = escalate.ViaGrant
	}
	applied.Policy.Masked = applied.MaskRead
	applied.Policy.Unreported = controlMasks(applied.MaskRead, deployed, e.Control)
	rep.GuardRemoved = append(rep.GuardRemoved, applied.Removed...)
	return applied.Policy, rep, guard, nil
}

// toCreate are the missing tool directories of create that the call, if
// allowed, runs with as write roots (the guard left them writable): the
// ones createApproved makes, and the approval question's create.
func toCreate(create []string, finalReq policy.Request, applied escalate.Applied) []string {
	var want []string
	for _, c := range create {
		if slices.Contains(applied.Policy.WriteRoots, c) && slices.Contains(finalReq.Additional.WritePaths(), c) && !slices.Contains(want, c) {
			want = append(want, c)
		}
	}
	return want
}

// createApproved makes want (toCreate) once the call is approved and, when
// it made any, builds and guards the policy again, now that they exist.
func createApproved(want []string, finalReq policy.Request, applied escalate.Applied, guard, deployed escalate.Guard, control ControlPaths, rep *Permissions) (escalate.Applied, error) {
	made, err := createDirs(want)
	rep.Created = made
	if err != nil || len(made) == 0 {
		return applied, err
	}
	final, err := policy.Build(finalReq)
	if err != nil {
		return applied, err
	}
	applied = applyGuard(guard, final, finalReq.Cwd, finalReq.Additional)
	controlReasons(applied.Removed, deployed, control)
	return applied, nil
}

// checkRequest refuses, before anyone is asked, a with_additional_permissions
// request that could not be honoured: a write inside a read-only carve-out
// of the policy the call would run with (no request widens a carve-out), or
// a request the guard would strip entirely (refused with the guard's
// reasons). final is that policy, applied the guard's result on it.
func checkRequest(c escalate.Call, final policy.Policy, applied escalate.Applied) error {
	if c.SandboxPermissions != profiles.WithAdditionalPermissions {
		return nil
	}
	for i, w := range c.Additional.WritePaths() {
		for _, ro := range final.CarveOuts {
			if fspath.Within(w, ro) {
				return &strictjson.FieldError{Field: fmt.Sprintf("additional_permissions.file_system.write[%d]", i),
					Err: fmt.Errorf("%s is inside the read-only carve-out %s, which no request can widen", w, ro)}
			}
		}
	}
	asked := escalate.Missing(c.Standing, c.Granted, c.Additional)
	if c.StrictAutoReview {
		asked = escalate.Missing(c.Standing, profiles.Profile{}, c.Additional)
	}
	if asked.IsEmpty() {
		return nil
	}
	p := applied.Policy
	// A full network behind the proxy (every host but a deny list: the
	// call's denied_domains or the guard's deny_domains) is the full
	// network asked for, narrowed, not taken away.
	full := p.Network == policy.NetworkFull || p.Domains != nil && p.Domains.AllowAll
	survives := asked.NetworkEnabled() && full ||
		asked.NetworkMode() == profiles.NetworkDomains && (full || p.Domains != nil)
	for _, w := range asked.WritePaths() {
		if p.Unrestricted || fspath.WritableUnder(w, p.WriteRoots, p.CarveOuts) {
			survives = true
		}
	}
	if survives {
		return nil
	}
	var reasons []string
	for _, r := range applied.Removed {
		reasons = append(reasons, strings.TrimSpace(r.What+" "+r.Path)+": "+r.Reason)
	}
	return &strictjson.FieldError{Field: "additional_permissions", Err: fmt.Errorf("%w: the guard would remove all of it (%s)", errGuardStrips, strings.Join(reasons, "; "))}
}

// errGuardStrips is a request the deployment guard takes away whole.
var errGuardStrips = errors.New("nothing of the request would survive the guard")
