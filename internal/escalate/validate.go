package escalate

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/sbx-sandbox/sbx/internal/fspath"
	"github.com/sbx-sandbox/sbx/internal/netrule"
	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// SandboxPermissions is the per-call escalation field; it lives in profiles so
// that the grant rules (profiles.Grants.Effective) can read it.
type SandboxPermissions = profiles.SandboxPermissions

// The sandbox_permissions values, wire names use_default,
// with_additional_permissions and require_escalated.
const (
	UseDefault                = profiles.UseDefault
	WithAdditionalPermissions = profiles.WithAdditionalPermissions
	RequireEscalated          = profiles.RequireEscalated
)

// The refusals of Validate. Each comes wrapped in a *strictjson.FieldError that
// names the field, so errors.Is finds the sentinel and the text reads
// "justification: ...". None of them is a denial: the call was malformed.
var (
	// ErrUnpaired: sandbox_permissions and justification come as a pair.
	ErrUnpaired = errors.New("sandbox_permissions and justification come as a pair")
	// ErrEmptyJustification: the justification is only white space.
	ErrEmptyJustification = errors.New("must not be empty or only white space")
	// ErrSameLevel: require_escalated to the mode the call already has.
	ErrSameLevel = errors.New("require_escalated to the standing mode escalates nothing: the target must be strictly wider")
	// ErrNarrowing: require_escalated to a narrower mode.
	ErrNarrowing = errors.New("require_escalated cannot narrow: the target must be strictly wider than the standing mode")
	// ErrAddsNothing: with_additional_permissions whose profile the standing
	// policy already allows.
	ErrAddsNothing = errors.New("with_additional_permissions adds nothing the standing policy does not already allow")
	// ErrStrayProfile: additional permissions without with_additional_permissions.
	ErrStrayProfile = errors.New("additional_permissions need sandbox_permissions with_additional_permissions")
	// ErrStrayCapAdd: a capability asked for under use_default that is not
	// the caller's own configuration.
	ErrStrayCapAdd = errors.New(`keeping a capability widens the call: ask for it with sandbox_permissions with_additional_permissions and a justification, or mark it "preauthorized": true if it is the caller's own configuration, not a model's`)
	// ErrNotNormalised: a relative path in the call's additional profile.
	ErrNotNormalised = errors.New("not normalised: relative path")
)

// Standing is what the call may already do without escalating. Every mode
// reads the whole file system today, so reads are always allowed; when a mode
// narrows reads, Standing gains read roots.
type Standing struct {
	Mode       profiles.Mode
	WriteRoots []string
	// CarveOuts are carve-outs inside WriteRoots that stay read-only.
	CarveOuts []string
	Network   bool
	// Domains and PrivateAddresses are a standing network by domain
	// (policy.Domains): its allowed patterns, and allow_private_addresses.
	Domains          []string
	PrivateAddresses bool
}

// StandingFrom takes the standing part of a built policy.
func StandingFrom(p policy.Policy) Standing {
	s := Standing{Mode: p.Mode, WriteRoots: p.WriteRoots, CarveOuts: p.CarveOuts, Network: p.Network == policy.NetworkFull}
	if p.Domains != nil {
		s.Domains, s.PrivateAddresses = netrule.Strings(p.Domains.Allowed), p.Domains.AllowPrivateAddresses
	}
	return s
}

// Call is one tool call's escalation request.
type Call struct {
	CallID string
	// Tool names the tool for the approver ("shell", "apply_patch", ...).
	Tool string
	// Cwd is the call's absolute working directory, shown to the approver.
	Cwd                string
	Standing           Standing
	SandboxPermissions SandboxPermissions
	// Justification is "" when absent.
	Justification string
	// Target is the mode asked for by require_escalated.
	Target profiles.Mode
	// Additional is the call's explicit, normalised additional profile.
	Additional profiles.Profile
	// Granted are the sticky grants (session + turn) for this call: an
	// explicit profile they already cover needs no approval.
	Granted profiles.Profile
	// StrictAutoReview, set when the turn asked for it, makes even a call
	// its grants cover go to the approver.
	StrictAutoReview bool
	// EnvironmentID is the session the call belongs to, shown to the approver.
	EnvironmentID string
	// CapAdd are the capabilities the call asks its command to keep
	// (cap_add, --cap-add) as a request, not as the caller's own
	// configuration: a widening no grant covers, so it is always asked
	// about (or refused under a policy that does not ask).
	CapAdd []string
	// Merged are the caller's own additional permissions (preauthorised),
	// shown to the approver with the grants and the request as what the call
	// would run with.
	Merged profiles.Profile
	// Create are the missing directories sbx makes if the call is
	// allowed (ApprovalRequest.Create); they are shown, not checked here.
	Create []string
	// Command is the argv shown to the approver (ApprovalRequest.Command),
	// nil when that argv is not what runs.
	Command []string
}

// Validate checks the call's escalation fields, before anyone is asked:
// pairing, justification, the ladder for require_escalated, and that
// with_additional_permissions adds something. The errors wrap the sentinels
// above.
func Validate(c Call) error {
	sp := c.SandboxPermissions
	if _, err := sp.MarshalText(); err != nil {
		return &strictjson.FieldError{Field: "sandbox_permissions", Err: err}
	}
	if _, err := c.Standing.Mode.MarshalText(); err != nil {
		return &strictjson.FieldError{Field: "sandbox_mode", Err: err}
	}
	if err := checkPairing(sp, c.Justification); err != nil {
		return err
	}
	if sp != WithAdditionalPermissions && !c.Additional.IsEmpty() {
		return &strictjson.FieldError{Field: "additional_permissions", Err: fmt.Errorf("%w (sandbox_permissions is %s)", ErrStrayProfile, sp)}
	}
	switch sp {
	case RequireEscalated:
		return checkLadder(c.Standing.Mode, c.Target)
	case WithAdditionalPermissions:
		if len(c.CapAdd) > 0 && c.Additional.IsEmpty() {
			return nil // asks for capabilities alone
		}
		return checkAdds(c.Standing, c.Additional)
	case UseDefault:
		if len(c.CapAdd) > 0 {
			return &strictjson.FieldError{Field: "cap_add", Err: ErrStrayCapAdd}
		}
	}
	return nil
}

func checkPairing(sp SandboxPermissions, justification string) error {
	switch {
	case !sp.AsksForMore() && strings.TrimSpace(justification) != "":
		return &strictjson.FieldError{Field: "justification", Err: fmt.Errorf("%w: justification given without sandbox_permissions", ErrUnpaired)}
	case sp.AsksForMore() && justification == "":
		return &strictjson.FieldError{Field: "justification", Err: fmt.Errorf("%w: sandbox_permissions %s needs a justification", ErrUnpaired, sp)}
	case sp.AsksForMore() && strings.TrimSpace(justification) == "":
		return &strictjson.FieldError{Field: "justification", Err: ErrEmptyJustification}
	}
	return nil
}

func checkLadder(standing, target profiles.Mode) error {
	if _, err := target.MarshalText(); err != nil {
		return &strictjson.FieldError{Field: "target_mode", Err: err}
	}
	switch {
	case target == standing:
		return &strictjson.FieldError{Field: "target_mode", Err: fmt.Errorf("%w (both are %s)", ErrSameLevel, target)}
	case !target.WiderThan(standing):
		return &strictjson.FieldError{Field: "target_mode", Err: fmt.Errorf("%w (%s is narrower than %s)", ErrNarrowing, target, standing)}
	}
	return nil
}

func checkAdds(s Standing, p profiles.Profile) error {
	fields := []struct {
		name  string
		paths []string
	}{{"file_system.read", p.ReadPaths()}, {"file_system.write", p.WritePaths()}}
	for _, f := range fields {
		for i, path := range f.paths {
			if !filepath.IsAbs(path) {
				return &strictjson.FieldError{Field: fmt.Sprintf("additional_permissions.%s[%d]", f.name, i), Err: ErrNotNormalised}
			}
		}
	}
	if p.IsEmpty() {
		return &strictjson.FieldError{Field: "additional_permissions", Err: fmt.Errorf("%w: the profile is empty", ErrAddsNothing)}
	}
	if Missing(s, profiles.Profile{}, p).IsEmpty() {
		return &strictjson.FieldError{Field: "additional_permissions", Err: ErrAddsNothing}
	}
	return nil
}

// Missing returns the part of p that neither the standing policy nor the
// grants allow: what an approval would add. Reads are always allowed (every mode reads everything). A
// write inside a read-only carve-out is missing even under a write root.
func Missing(s Standing, granted, p profiles.Profile) profiles.Profile {
	if s.Mode == profiles.DangerFullAccess {
		return profiles.Profile{}
	}
	network := missingNetwork(s, granted, p)
	var write []string
	for _, w := range p.WritePaths() {
		if !fspath.WritableUnder(w, s.WriteRoots, s.CarveOuts) && !fspath.CoveredBy(w, granted.WritePaths()) {
			write = append(write, w)
		}
	}
	return profiles.New(network, nil, write)
}

// missingNetwork is the network part of Missing: full network unless the
// standing policy or a grant has it; for a domain profile, the patterns
// that no standing or granted pattern covers (a full network covers them
// all), and allow_private_addresses if neither has it. Denied domains
// narrow: they are never missing.
func missingNetwork(s Standing, granted, p profiles.Profile) *profiles.Network {
	switch {
	case s.Network || granted.NetworkEnabled():
		return nil
	case p.NetworkEnabled():
		return &profiles.Network{Enabled: true}
	case p.NetworkMode() != profiles.NetworkDomains:
		return nil
	}
	have := append(profiles.Patterns(s.Domains), granted.AllowedPatterns()...)
	var missing []string
	if asked := p.AllowedPatterns(); len(asked) != len(p.AllowedDomains()) {
		// An entry that does not parse is covered by nothing: all of
		// them are missing (the edge refused such a profile).
		missing = p.AllowedDomains()
	} else {
		for i, dp := range asked {
			if !profiles.DomainsWithin(dp, have) {
				missing = append(missing, p.AllowedDomains()[i])
			}
		}
	}
	private := p.AllowPrivateAddresses() && !s.PrivateAddresses && !granted.AllowPrivateAddresses()
	if len(missing) == 0 && !private {
		return nil
	}
	if len(missing) == 0 {
		// allow_private_addresses alone is no network part: it is
		// asked for with the hosts it applies to.
		missing = p.AllowedDomains()
	}
	return &profiles.Network{Enabled: true, AllowedDomains: missing, AllowPrivateAddresses: private}
}
