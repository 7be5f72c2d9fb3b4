package escalate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/sbx-sandbox/sbx/internal/enum"
	"github.com/sbx-sandbox/sbx/internal/profiles"
)

// Outcome is an approver's answer. Only AllowedOnce lets a call proceed; any
// other value, including one not listed here, is a denial.
type Outcome string

const (
	AllowedOnce Outcome = "allowed-once"
	Rejected    Outcome = "rejected"
	Cancelled   Outcome = "cancelled"
	Unavailable Outcome = "unavailable"
)

// ErrDenied matches every denial of Decide: errors.Is(err, ErrDenied).
var ErrDenied = errors.New("denied")

// denial is a sentinel that matches ErrDenied while keeping its own text, so a
// caller can tell the reasons apart and still test for "denied" once.
type denial struct{ text string }

func (d *denial) Error() string        { return d.text }
func (d *denial) Is(target error) bool { return target == ErrDenied }

// The denials. Each matches ErrDenied.
var (
	ErrNeverAsks error = &denial{"approval policy never: the call needs approval, so it is denied without asking"}
	// ErrOnlyOnRequest: under on-failure and untrusted a call may not ask
	// for more (Codex: "you should not ask for escalated permissions if the
	// approval policy is ..."); it is refused without asking anyone.
	ErrOnlyOnRequest error = &denial{"only approval policy on-request lets a call ask for more than its standing policy and grants; denied without asking"}
	// ErrGranularSandbox: under a granular policy whose sandbox_approval
	// is false, Codex rejects the escalation prompt instead of showing it.
	ErrGranularSandbox error = &denial{"approval policy granular: sandbox_approval is false, so a call that needs approval is denied without asking"}
	ErrNoApprover      error = &denial{"no approver is configured"}
	ErrRejected        error = &denial{"the approver rejected the call"}
	ErrCancelled       error = &denial{"the approval was cancelled"}
	ErrUnavailable     error = &denial{"no approver was available to answer"}
	ErrTimeout         error = &denial{"the approver did not answer in time"}
	ErrApproverFailed  error = &denial{"the approver failed"}
	ErrMalformedAnswer error = &denial{"the approver's answer is malformed"}
	ErrUnknownOutcome  error = &denial{"the approver's answer is not a known outcome"}
)

// ApprovalRequest is the one approval question: what every answerer is
// shown, the same for each (the --approver program's stdin, the terminal
// prompt, a client's approval/requested, the browser panel, an ACP
// editor, an in-process Approver). Exactly one of TargetMode
// (require_escalated) and AdditionalPermissions (with_additional_permissions,
// or a strict review of the grants) is set.
type ApprovalRequest struct {
	// ApprovalID identifies this one question (random, fresh per ask), so
	// that an approver program can log it and match its answer.
	ApprovalID string `json:"approval_id"`
	CallID     string `json:"call_id"`
	// EnvironmentID is the session the call belongs to ("" when the caller
	// gave none).
	EnvironmentID         string            `json:"environment_id"`
	Tool                  string            `json:"tool"`
	TargetMode            *profiles.Mode    `json:"target_mode,omitempty"`
	AdditionalPermissions *profiles.Profile `json:"additional_permissions,omitempty"`
	Justification         string            `json:"justification"`
	Cwd                   string            `json:"cwd"`
	// StandingMode is the mode the call has without approval.
	StandingMode profiles.Mode `json:"standing_mode"`
	// MergedPermissions is what the call would run with beyond its mode,
	// if allowed: the caller's own permissions, the sticky grants and the
	// request (Call.Merged); NewPermissions is the part of it that neither
	// the standing policy nor the grants already allow, the part asked about.
	MergedPermissions *profiles.Profile `json:"merged_permissions,omitempty"`
	NewPermissions    *profiles.Profile `json:"new_permissions,omitempty"`
	// CapAdd are the Linux capabilities the command would keep (cap_add):
	// a widening of its own, asked about with the rest.
	CapAdd []string `json:"cap_add,omitempty"`
	// Create are the requested write paths that do not exist yet and
	// that sbx will create, as the calling user, before the command
	// starts if the call is allowed: missing directories inside a tool's
	// cache or state directory (tools.Table), what the result then
	// reports as permissions.created. Any other missing path is refused
	// before anyone is asked.
	Create []string `json:"create,omitempty"`
	// Command is the call's argv, only when that argv is what runs (no
	// shell spec rewrote it, not a file-system change): nil otherwise,
	// never a guess.
	Command []string `json:"command,omitempty"`
	// SessionID and TurnID place the question in an sbx server's session
	// and turn ("" outside one); ACPSessionID is the ACP session that
	// session is bound to (session/open's acp_session_id), "" when none.
	SessionID    string `json:"session_id,omitempty"`
	TurnID       string `json:"turn_id,omitempty"`
	ACPSessionID string `json:"acp_session_id,omitempty"`
}

// Approver is the one answerer interface: every answerer (the --approver
// program, the terminal, an sbx server's clients, browser panel and ACP
// editor, an in-process one) takes the one question and gives an Outcome.
// The vocabulary is closed: only AllowedOnce lets the call proceed; any
// other outcome, an unknown word or an error denies it. An implementation
// should honour ctx, but nothing relies on it: Ask stops waiting once ctx
// is done and drops a late answer. Approve may be called concurrently for
// different questions.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (Outcome, error)
}

// ApproverFunc adapts a function to Approver (tests, in-process runtimes).
type ApproverFunc func(ctx context.Context, req ApprovalRequest) (Outcome, error)

func (f ApproverFunc) Approve(ctx context.Context, req ApprovalRequest) (Outcome, error) {
	return f(ctx, req)
}

// Via says how a call obtained what it runs with.
type Via int

const (
	// ViaStanding: nothing beyond the standing policy was asked for.
	ViaStanding Via = iota
	// ViaGrant: the call's additional permissions were already granted
	// (session or turn grants), so nobody was asked.
	ViaGrant
	// ViaApproval: an approver answered allowed-once.
	ViaApproval
)

var viaNames = enum.Names[Via]{Type: "Via", What: "permission provenance", Names: []string{"standing", "grant", "approval"}}

func (v Via) String() string { return viaNames.String(v) }

func (v Via) MarshalText() ([]byte, error) { return viaNames.Marshal(v) }

// Decision is what one call may run with. It is transient: it applies to this
// call only and changes no preset, default or stored grant.
type Decision struct {
	// Mode is the call's mode: the approved target of require_escalated, else
	// the standing mode.
	Mode profiles.Mode `json:"mode"`
	// Additional is the call's own explicit profile, now allowed. Sticky grants
	// are not in it: the caller unions them in (profiles.Grants.Effective).
	Additional profiles.Profile `json:"additional"`
	Via        Via              `json:"via"`
}

type askRule int

const (
	denyWithoutAsking askRule = iota
	askApprover
	// refuseAsking: the policy asks, but not about a call's own request.
	refuseAsking
)

// askRules says what each approval policy does with a call that needs
// approval: an escalation that neither the standing policy nor the grants
// cover. Anything else never reaches this table.
var askRules = map[profiles.ApprovalPolicy]askRule{
	// DESIGN.md: never ask, and deny whatever would need asking.
	profiles.ApprovalNever: denyWithoutAsking,
	// The call requested more: ask. Only this policy lets a call ask.
	profiles.ApprovalOnRequest: askApprover,
	// As Codex defines them: untrusted asks before commands outside a
	// trusted list, on-failure asks whether to rerun a command the sandbox
	// failed without the sandbox. Neither lets the call itself ask for more
	// (with_additional_permissions, require_escalated): that is refused
	// without asking, unless grants already cover it. Asking before a
	// non-escalating command or rerunning a failed one is the runtime's.
	profiles.ApprovalUntrusted: refuseAsking,
	profiles.ApprovalOnFailure: refuseAsking,
}

// Decide validates the call (Validate), then obtains what it runs with
// (Obtain). Validation errors come first and nobody is asked; every refusal
// after that matches ErrDenied. Only an exact allowed-once proceeds.
func Decide(ctx context.Context, c Call, ap profiles.ApprovalPolicy, approver Approver) (Decision, error) {
	if err := Validate(c); err != nil {
		return Decision{}, err
	}
	return Obtain(ctx, c, ap, approver)
}

// Obtain is Decide for a call Validate has passed (call.Prepare checks it
// once, then builds and guards the policy the call would run with, then
// obtains): when the call asks for something the standing policy and grants
// do not cover, it obtains approval under the approval policy. Every refusal
// matches ErrDenied. Only an exact allowed-once proceeds.
//
// IMPORTANT: Obtain does not validate; a caller that has not run Validate
// on c must call Decide.
func Obtain(ctx context.Context, c Call, ap profiles.ApprovalPolicy, approver Approver) (Decision, error) {
	dec := Decision{Mode: c.Standing.Mode}
	switch c.SandboxPermissions {
	case UseDefault:
		// Under strict review a call that rides on sticky grants is shown to
		// the approver too; otherwise nothing was asked for.
		if !c.StrictAutoReview || Missing(c.Standing, profiles.Profile{}, c.Granted).IsEmpty() {
			return dec, nil
		}
	case WithAdditionalPermissions:
		dec.Additional = c.Additional
		// No grant carries a capability: asking for one is always asked.
		if Missing(c.Standing, c.Granted, c.Additional).IsEmpty() && !c.StrictAutoReview && len(c.CapAdd) == 0 {
			dec.Via = ViaGrant
			return dec, nil
		}
	case RequireEscalated:
		dec.Mode = c.Target
	}
	rule, ok := askRules[ap]
	if g, granular := ap.Granular(); granular {
		// Codex's granular policy: sandbox_approval says whether an
		// escalation prompt may be shown; false denies without asking.
		rule, ok = askApprover, true
		if !g.SandboxApproval {
			return Decision{}, fmt.Errorf("approval denied: %w", ErrGranularSandbox)
		}
	}
	if !ok {
		return Decision{}, fmt.Errorf("approval policy %v: %w", ap, ErrDenied)
	}
	switch rule {
	case denyWithoutAsking:
		return Decision{}, fmt.Errorf("approval denied: %w", ErrNeverAsks)
	case refuseAsking:
		return Decision{}, fmt.Errorf("approval denied: approval policy %s: %w", ap, ErrOnlyOnRequest)
	}
	if _, err := Ask(ctx, approver, requestFor(c), 0); err != nil {
		return Decision{}, fmt.Errorf("approval denied: %w", err)
	}
	dec.Via = ViaApproval
	return dec, nil
}

func requestFor(c Call) ApprovalRequest {
	req := ApprovalRequest{ApprovalID: newApprovalID(), CallID: c.CallID, EnvironmentID: c.EnvironmentID, Tool: c.Tool,
		Justification: c.Justification, Cwd: c.Cwd, StandingMode: c.Standing.Mode, CapAdd: c.CapAdd, Create: c.Create, Command: c.Command}
	if c.SandboxPermissions != RequireEscalated {
		merged := profiles.Merge(c.Merged, c.Granted, c.Additional)
		asked := c.Additional
		if c.SandboxPermissions == UseDefault {
			asked = c.Granted
		}
		fresh := Missing(c.Standing, c.Granted, asked)
		if c.StrictAutoReview {
			// Under strict review the grants themselves are reviewed.
			fresh = Missing(c.Standing, profiles.Profile{}, asked)
		}
		req.MergedPermissions, req.NewPermissions = &merged, &fresh
	}
	if c.SandboxPermissions == RequireEscalated {
		t := c.Target
		req.TargetMode = &t
	} else {
		p := c.Additional
		if c.SandboxPermissions == UseDefault {
			p = c.Granted // strict review of a call running on its grants
		}
		req.AdditionalPermissions = &p
	}
	return req
}

// newApprovalID returns 16 random bytes in hex; should the system's random
// source fail, a time-based id (an id for logs, not a secret).
func newApprovalID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Sprintf("t%x", time.Now().UnixNano())
	}
	return hex.EncodeToString(b[:])
}

// ChildPolicy is the approval policy of a delegated child: always never,
// whatever the parent's. A child cannot ask; what would need asking is denied.
func ChildPolicy(parent profiles.ApprovalPolicy) profiles.ApprovalPolicy {
	return profiles.ApprovalNever
}

// CallContext is what a call inherits from its session.
type CallContext struct {
	EnvironmentID string
	// SessionMode is the session's explicit sandbox override; nil when the
	// session runs under the deployment default.
	SessionMode *profiles.Mode
	// DefaultMode is the deployment default, read from this process's own
	// configuration.
	DefaultMode    profiles.Mode
	ApprovalPolicy profiles.ApprovalPolicy
	// Grants are the sticky grants of the environment (session + turn).
	Grants profiles.Grants
}

// StandingMode is the session override when there is one, else the default.
func (c CallContext) StandingMode() profiles.Mode {
	if c.SessionMode != nil {
		return *c.SessionMode
	}
	return c.DefaultMode
}

// ForChild returns the context of a delegated child: only the parent's
// explicit session sandbox override, and approval policy never. It takes no
// grants (session, turn or one-shot), no environment and not the parent's
// deployment default: the child's launcher fills DefaultMode from its own
// configuration, and until then it is read-only, the narrowest mode.
func ForChild(parent CallContext) CallContext {
	child := CallContext{ApprovalPolicy: ChildPolicy(parent.ApprovalPolicy)}
	if parent.SessionMode != nil {
		m := *parent.SessionMode
		child.SessionMode = &m
	}
	return child
}
