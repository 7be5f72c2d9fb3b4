package escalate

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// TestDecideCapAdd (issue 27 §5): keeping a capability is a widening. As
// a request under use_default it is refused before anyone is asked; under
// with_additional_permissions it is asked about (alone or with a profile),
// even when grants cover the profile, and refused under never.
func TestDecideCapAdd(t *testing.T) {
	caps := func(c Call) Call { c.CapAdd = []string{"CAP_DAC_OVERRIDE"}; return c }
	alone := caps(Call{CallID: "c", Tool: "shell", Cwd: repo, Standing: wsStanding,
		SandboxPermissions: WithAdditionalPermissions, Justification: "the volume is uid 1000's"})
	granted := caps(additional())
	granted.Granted = granted.Additional
	stray := caps(Call{CallID: "c", Tool: "shell", Cwd: repo, Standing: wsStanding, SandboxPermissions: UseDefault})
	for _, tt := range []struct {
		name    string
		c       Call
		policy  profiles.ApprovalPolicy
		outcome Outcome
		wantErr error
		asked   bool
	}{
		{"use_default: refused, nobody asked", stray, profiles.ApprovalOnRequest, AllowedOnce, ErrStrayCapAdd, false},
		{"alone, never: denied without asking", alone, profiles.ApprovalNever, AllowedOnce, ErrNeverAsks, false},
		{"alone, on-request: asked and allowed", alone, profiles.ApprovalOnRequest, AllowedOnce, nil, true},
		{"alone, on-request: rejected", alone, profiles.ApprovalOnRequest, Rejected, ErrRejected, true},
		{"with a granted profile: still asked", granted, profiles.ApprovalOnRequest, AllowedOnce, nil, true},
		{"with a granted profile, never: denied", granted, profiles.ApprovalNever, AllowedOnce, ErrNeverAsks, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{outcome: tt.outcome}
			dec, err := Decide(context.Background(), tt.c, tt.policy, r)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
			if (len(r.asked) > 0) != tt.asked {
				t.Fatalf("asked %d times, want asked %v", len(r.asked), tt.asked)
			}
			if tt.asked && !slices.Equal(r.asked[0].CapAdd, []string{"CAP_DAC_OVERRIDE"}) {
				t.Errorf("the approver was shown cap_add %v", r.asked[0].CapAdd)
			}
			if err == nil && dec.Via != ViaApproval {
				t.Errorf("via %v, want approval", dec.Via)
			}
		})
	}
}

// TestSmallestRetryCapability: a denial file permissions caused asks for
// the capability it names, with with_additional_permissions and no grant
// (no grant carries one); one no capability can help is unresolved, as is
// a foreign ABI's syscall.
func TestSmallestRetryCapability(t *testing.T) {
	pol := policy.Policy{Mode: profiles.WorkspaceWrite, ReadRoots: []string{"/"}, WriteRoots: []string{"/ws"}}
	dac := report.Denial{Operation: "create", Path: "/ws/f", Reason: "/ws (owner uid 1000, ...): ...; " + report.CapabilityReason("CAP_DAC_OVERRIDE")}
	fowner := report.Denial{Operation: "chmod", Path: "/ws/g", Reason: "...; " + report.CapabilityReason("CAP_FOWNER")}
	noCap := report.Denial{Operation: "create", Path: "/ws/f", Reason: "/ws (...): ...; " + report.NoCapabilityReason}
	abi := report.Denial{Operation: "syscall", Syscall: "getpid", Reason: "x32"}
	r, _ := SmallestRetry(RetryInput{Policy: pol, Denials: []report.Denial{dac, fowner, dac}})
	if r.SandboxPermissions == nil || *r.SandboxPermissions != profiles.WithAdditionalPermissions || r.Grant != nil ||
		!slices.Equal(r.CapAdd, []string{"CAP_DAC_OVERRIDE", "CAP_FOWNER"}) || r.Justification == nil {
		t.Errorf("retry %+v, want with_additional_permissions, cap_add [CAP_DAC_OVERRIDE CAP_FOWNER], no grant", r)
	}
	r, _ = SmallestRetry(RetryInput{Policy: pol, Denials: []report.Denial{noCap, abi}})
	if r.SandboxPermissions != nil || len(r.CapAdd) != 0 || len(r.Unresolved) != 2 {
		t.Errorf("retry %+v, want both unresolved", r)
	}
}

// TestPromptShowsCapAdd: the person asked on the terminal sees the
// capability, alone or beside a profile.
func TestPromptShowsCapAdd(t *testing.T) {
	req := requestFor(Call{CallID: "c", Tool: "shell", Cwd: repo, Standing: wsStanding, SandboxPermissions: WithAdditionalPermissions,
		Justification: "j", CapAdd: []string{"CAP_DAC_OVERRIDE"}})
	if p := prompt(req); !strings.Contains(p, "keep capability: CAP_DAC_OVERRIDE") {
		t.Errorf("prompt %q does not show the capability", p)
	}
}
