package escalate

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sbx-sandbox/sbx/internal/profiles"
)

// recorder is an approver that answers a fixed outcome and counts questions.
type recorder struct {
	outcome Outcome
	err     error
	asked   []ApprovalRequest
}

func (r *recorder) Approve(_ context.Context, req ApprovalRequest) (Outcome, error) {
	r.asked = append(r.asked, req)
	return r.outcome, r.err
}

func escalation() Call {
	return Call{
		CallID: "c1", Tool: "shell", Cwd: repo, Standing: wsStanding,
		SandboxPermissions: RequireEscalated, Target: profiles.DangerFullAccess, Justification: "install packages",
	}
}

func additional() Call {
	return Call{
		CallID: "c2", Tool: "apply_patch", Cwd: repo, Standing: wsStanding,
		SandboxPermissions: WithAdditionalPermissions, Additional: prof(false, nil, []string{"/sbx-test/out"}), Justification: "write the output",
	}
}

func TestDecideRefusesBeforeAsking(t *testing.T) {
	for name, c := range map[string]Call{
		"same level": {Standing: wsStanding, SandboxPermissions: RequireEscalated, Target: profiles.WorkspaceWrite, Justification: "x"},
		"narrowing":  {Standing: wsStanding, SandboxPermissions: RequireEscalated, Target: profiles.ReadOnly, Justification: "x"},
		"unpaired":   {Standing: wsStanding, SandboxPermissions: RequireEscalated, Target: profiles.DangerFullAccess},
		"empty":      {Standing: wsStanding, SandboxPermissions: RequireEscalated, Target: profiles.DangerFullAccess, Justification: " "},
		"adds nothing": {Standing: wsStanding, SandboxPermissions: WithAdditionalPermissions,
			Additional: prof(false, nil, []string{repo + "/src"}), Justification: "x"},
	} {
		t.Run(name, func(t *testing.T) {
			r := &recorder{outcome: AllowedOnce}
			_, err := Decide(context.Background(), c, profiles.ApprovalOnRequest, r)
			if err == nil || len(r.asked) != 0 {
				t.Fatalf("err = %v, asked %d times; want a refusal before asking", err, len(r.asked))
			}
		})
	}
}

func TestDecideNeverDeniesWithoutAsking(t *testing.T) {
	for name, c := range map[string]Call{"escalation": escalation(), "additional": additional()} {
		r := &recorder{outcome: AllowedOnce}
		_, err := Decide(context.Background(), c, profiles.ApprovalNever, r)
		if !errors.Is(err, ErrNeverAsks) || !errors.Is(err, ErrDenied) || len(r.asked) != 0 {
			t.Errorf("%s: err = %v, asked %d; want ErrNeverAsks without asking", name, err, len(r.asked))
		}
	}
}

func TestDecideOutcomes(t *testing.T) {
	tests := []struct {
		name     string
		approver Approver
		want     error
	}{
		{"rejected", &recorder{outcome: Rejected}, ErrRejected},
		{"cancelled", &recorder{outcome: Cancelled}, ErrCancelled},
		{"unavailable", &recorder{outcome: Unavailable}, ErrUnavailable},
		{"unknown option", &recorder{outcome: "allowed-always"}, ErrUnknownOutcome},
		{"case matters", &recorder{outcome: "Allowed-Once"}, ErrUnknownOutcome},
		{"empty outcome", &recorder{outcome: ""}, ErrUnknownOutcome},
		{"approver error", &recorder{err: errors.New("socket closed")}, ErrApproverFailed},
		{"approver error despite allowed", &recorder{outcome: AllowedOnce, err: errors.New("boom")}, ErrApproverFailed},
		{"approver deadline", &recorder{err: context.DeadlineExceeded}, ErrTimeout},
		{"no approver", nil, ErrNoApprover},
		{"typed nil approver", (*recorder)(nil), ErrApproverFailed},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decide(context.Background(), escalation(), profiles.ApprovalOnRequest, tt.approver)
			if !errors.Is(err, tt.want) || !errors.Is(err, ErrDenied) {
				t.Fatalf("err = %v, want %v (a denial)", err, tt.want)
			}
			seen[tt.want.Error()] = true
		})
	}
	if len(seen) != 7 {
		t.Errorf("the denials share texts: %d distinct", len(seen))
	}
}

// Codex: only on-request lets a call ask for more; under on-failure and
// untrusted the call's own escalation is refused without asking, with the
// reason, unless its grants already cover it.
func TestDecideOnlyOnRequestAsks(t *testing.T) {
	strict := additional()
	strict.SandboxPermissions, strict.Additional, strict.Justification = UseDefault, profiles.Profile{}, ""
	strict.Granted, strict.StrictAutoReview = prof(false, nil, []string{"/sbx-test/out"}), true
	for _, ap := range []profiles.ApprovalPolicy{profiles.ApprovalOnFailure, profiles.ApprovalUntrusted} {
		for name, c := range map[string]Call{"escalation": escalation(), "additional": additional(), "strict review": strict} {
			r := &recorder{outcome: AllowedOnce}
			_, err := Decide(context.Background(), c, ap, r)
			if !errors.Is(err, ErrOnlyOnRequest) || !errors.Is(err, ErrDenied) || len(r.asked) != 0 ||
				!strings.Contains(err.Error(), "approval policy "+ap.String()) {
				t.Errorf("%s, %s: err = %v, asked %d; want ErrOnlyOnRequest naming the policy, without asking", ap, name, err, len(r.asked))
			}
			if o, _ := DenialOutcome(err); o != OutcomeNever {
				t.Errorf("%s, %s: outcome %q, want never (nobody was asked)", ap, name, o)
			}
		}
		c := additional()
		c.Granted = prof(false, nil, []string{"/sbx-test"})
		r := &recorder{outcome: AllowedOnce}
		if dec, err := Decide(context.Background(), c, ap, r); err != nil || dec.Via != ViaGrant || len(r.asked) != 0 {
			t.Errorf("%s: covered by grants: %+v, %v; want via grant", ap, dec, err)
		}
	}
}

func TestDecideAllowedOnce(t *testing.T) {
	for _, ap := range []profiles.ApprovalPolicy{profiles.ApprovalOnRequest} {
		r := &recorder{outcome: AllowedOnce}
		dec, err := Decide(context.Background(), escalation(), ap, r)
		if err != nil || dec.Mode != profiles.DangerFullAccess || dec.Via != ViaApproval || len(r.asked) != 1 {
			t.Fatalf("%s: %+v, %v, asked %d", ap, dec, err, len(r.asked))
		}
		req := r.asked[0]
		if req.TargetMode == nil || *req.TargetMode != profiles.DangerFullAccess || req.AdditionalPermissions != nil ||
			req.CallID != "c1" || req.Tool != "shell" || req.Cwd != repo || req.Justification != "install packages" {
			t.Fatalf("%s: request %+v", ap, req)
		}
	}
	r := &recorder{outcome: AllowedOnce}
	dec, err := Decide(context.Background(), additional(), profiles.ApprovalOnRequest, r)
	if err != nil || dec.Mode != profiles.WorkspaceWrite || dec.Via != ViaApproval || dec.Additional.IsEmpty() {
		t.Fatalf("additional: %+v, %v", dec, err)
	}
	if req := r.asked[0]; req.TargetMode != nil || req.AdditionalPermissions == nil {
		t.Fatalf("additional request %+v", req)
	}
}

func TestDecideGrantsCoverWithoutAsking(t *testing.T) {
	c := additional()
	c.Granted = prof(false, nil, []string{"/sbx-test"})
	r := &recorder{outcome: Rejected}
	dec, err := Decide(context.Background(), c, profiles.ApprovalNever, r)
	if err != nil || dec.Via != ViaGrant || len(r.asked) != 0 {
		t.Fatalf("%+v, %v, asked %d; want ViaGrant without asking", dec, err, len(r.asked))
	}
	// A grant covering only part of the request does not approve it.
	c.Additional = prof(true, nil, []string{"/sbx-test/out"})
	if _, err := Decide(context.Background(), c, profiles.ApprovalNever, r); !errors.Is(err, ErrNeverAsks) {
		t.Fatalf("partly covered: %v", err)
	}
}

func TestDecideStrictAutoReviewAsksEvenWhenGranted(t *testing.T) {
	c := additional()
	c.Granted = prof(false, nil, []string{"/sbx-test"})
	c.StrictAutoReview = true
	r := &recorder{outcome: Rejected}
	if _, err := Decide(context.Background(), c, profiles.ApprovalOnRequest, r); !errors.Is(err, ErrRejected) || len(r.asked) != 1 {
		t.Fatalf("err = %v, asked %d; want the approver asked", err, len(r.asked))
	}
	// A use_default call running on its grants is reviewed too.
	implicit := Call{CallID: "c3", Standing: wsStanding, Granted: prof(true, nil, nil), StrictAutoReview: true}
	r = &recorder{outcome: AllowedOnce}
	dec, err := Decide(context.Background(), implicit, profiles.ApprovalOnRequest, r)
	if err != nil || dec.Via != ViaApproval || len(r.asked) != 1 || !r.asked[0].AdditionalPermissions.NetworkEnabled() {
		t.Fatalf("implicit: %+v, %v, %+v", dec, err, r.asked)
	}
}

func TestDecideUseDefaultAsksNobody(t *testing.T) {
	r := &recorder{outcome: Rejected}
	dec, err := Decide(context.Background(), Call{Standing: wsStanding}, profiles.ApprovalNever, r)
	if err != nil || dec.Mode != profiles.WorkspaceWrite || dec.Via != ViaStanding || len(r.asked) != 0 {
		t.Fatalf("%+v, %v", dec, err)
	}
}

func TestDecideCancellation(t *testing.T) {
	t.Run("cancelled before asking", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		r := &recorder{outcome: AllowedOnce}
		if _, err := Decide(ctx, escalation(), profiles.ApprovalOnRequest, r); !errors.Is(err, ErrCancelled) || len(r.asked) != 0 {
			t.Fatalf("err = %v, asked %d", err, len(r.asked))
		}
	})
	t.Run("late answer after cancellation is ignored", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		answered := make(chan struct{})
		slow := ApproverFunc(func(context.Context, ApprovalRequest) (Outcome, error) {
			cancel()
			time.Sleep(20 * time.Millisecond)
			close(answered)
			return AllowedOnce, nil // ignores ctx on purpose
		})
		if _, err := Decide(ctx, escalation(), profiles.ApprovalOnRequest, slow); !errors.Is(err, ErrCancelled) {
			t.Fatalf("err = %v, want ErrCancelled", err)
		}
		<-answered
	})
	t.Run("deadline while waiting", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		block := ApproverFunc(func(ctx context.Context, _ ApprovalRequest) (Outcome, error) {
			<-ctx.Done()
			time.Sleep(10 * time.Millisecond)
			return AllowedOnce, nil
		})
		if _, err := Decide(ctx, escalation(), profiles.ApprovalOnRequest, block); !errors.Is(err, ErrTimeout) {
			t.Fatalf("err = %v, want ErrTimeout", err)
		}
	})
}

func TestDecideInvalidPolicyDenies(t *testing.T) {
	r := &recorder{outcome: AllowedOnce}
	if _, err := Decide(context.Background(), escalation(), profiles.ApprovalPolicy(9), r); !errors.Is(err, ErrDenied) || len(r.asked) != 0 {
		t.Fatalf("err = %v", err)
	}
}

func TestChild(t *testing.T) {
	for _, ap := range profiles.ApprovalPolicies() {
		if got := ChildPolicy(ap); got != profiles.ApprovalNever {
			t.Errorf("ChildPolicy(%s) = %s", ap, got)
		}
	}
	override := profiles.WorkspaceWrite
	parent := CallContext{
		EnvironmentID: "local", SessionMode: &override, DefaultMode: profiles.DangerFullAccess,
		ApprovalPolicy: profiles.ApprovalOnRequest,
		Grants:         profiles.Grants{Session: prof(true, nil, nil), Turn: prof(false, nil, []string{repo})},
	}
	child := ForChild(parent)
	if child.StandingMode() != profiles.WorkspaceWrite || child.ApprovalPolicy != profiles.ApprovalNever ||
		!child.Grants.Session.IsEmpty() || !child.Grants.Turn.IsEmpty() || child.EnvironmentID != "" {
		t.Fatalf("child %+v", child)
	}
	*parent.SessionMode = profiles.DangerFullAccess
	if child.StandingMode() != profiles.WorkspaceWrite {
		t.Fatal("child shares the parent's override")
	}
	// Without an override the child does not take the parent's default.
	if c := ForChild(CallContext{DefaultMode: profiles.DangerFullAccess}); c.StandingMode() != profiles.ReadOnly {
		t.Fatalf("child took the parent's default: %s", c.StandingMode())
	}
	// And whatever the child asks is denied without asking.
	r := &recorder{outcome: AllowedOnce}
	if _, err := Decide(context.Background(), escalation(), child.ApprovalPolicy, r); !errors.Is(err, ErrNeverAsks) || len(r.asked) != 0 {
		t.Fatalf("child escalation: %v", err)
	}
}

// TestGranularSandboxApproval: under Codex's granular policy,
// sandbox_approval true asks as on-request does; false denies without
// asking, with its own text, reported as outcome never.
func TestGranularSandboxApproval(t *testing.T) {
	for _, c := range []Call{escalation(), additional()} {
		r := &recorder{outcome: AllowedOnce}
		ask := profiles.GranularPolicy(profiles.Granular{SandboxApproval: true})
		if dec, err := Decide(context.Background(), c, ask, r); err != nil || dec.Via != ViaApproval || len(r.asked) != 1 {
			t.Errorf("%s: sandbox_approval true: %+v, %v, asked %d", c.CallID, dec, err, len(r.asked))
		}
		r = &recorder{outcome: AllowedOnce}
		deny := profiles.GranularPolicy(profiles.Granular{Rules: true, SkillApproval: true, RequestPermissions: true, McpElicitations: true})
		_, err := Decide(context.Background(), c, deny, r)
		if !errors.Is(err, ErrGranularSandbox) || !errors.Is(err, ErrDenied) || len(r.asked) != 0 {
			t.Errorf("%s: sandbox_approval false: %v, asked %d", c.CallID, err, len(r.asked))
		}
		if o, ok := DenialOutcome(err); !ok || o != OutcomeNever {
			t.Errorf("%s: outcome %q", c.CallID, o)
		}
		if errors.Is(err, ErrNeverAsks) {
			t.Errorf("%s: granular denial has never's text: %v", c.CallID, err)
		}
	}
}
