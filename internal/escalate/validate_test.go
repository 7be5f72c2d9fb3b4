package escalate

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

const repo = "/sbx-test/repo"

func prof(network bool, read, write []string) profiles.Profile {
	return profiles.New(fullIf(network), read, write)
}

// wsStanding is a workspace-write call in repo with the usual .git carve-out.
var wsStanding = Standing{Mode: profiles.WorkspaceWrite, WriteRoots: []string{"/tmp", repo}, CarveOuts: []string{repo + "/.git"}}

func TestValidatePairing(t *testing.T) {
	tests := []struct {
		name string
		call Call
		want error
	}{
		{"justification without sandbox_permissions", Call{Justification: "because"}, ErrUnpaired},
		{"require_escalated without justification", Call{SandboxPermissions: RequireEscalated, Target: profiles.DangerFullAccess}, ErrUnpaired},
		{"with_additional_permissions without justification", Call{SandboxPermissions: WithAdditionalPermissions, Additional: prof(true, nil, nil)}, ErrUnpaired},
		{"whitespace justification", Call{SandboxPermissions: RequireEscalated, Target: profiles.DangerFullAccess, Justification: " \t\n"}, ErrEmptyJustification},
		{"whitespace justification, additional", Call{SandboxPermissions: WithAdditionalPermissions, Additional: prof(true, nil, nil), Justification: "  "}, ErrEmptyJustification},
		{"profile with use_default", Call{Additional: prof(true, nil, nil)}, ErrStrayProfile},
		{"profile with require_escalated", Call{SandboxPermissions: RequireEscalated, Target: profiles.DangerFullAccess, Justification: "x", Additional: prof(true, nil, nil)}, ErrStrayProfile},
		{"use_default, nothing else", Call{}, nil},
		{"use_default with white space only is no justification", Call{Justification: "  "}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.call.Standing = Standing{Mode: profiles.ReadOnly}
			if err := Validate(tt.call); !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

// TestValidateLadder checks every (standing, target) pair of modes.
func TestValidateLadder(t *testing.T) {
	for _, standing := range profiles.Modes() {
		for _, target := range profiles.Modes() {
			t.Run(fmt.Sprintf("%s->%s", standing, target), func(t *testing.T) {
				err := Validate(Call{
					Standing:           Standing{Mode: standing},
					SandboxPermissions: RequireEscalated, Target: target, Justification: "needed",
				})
				switch {
				case target == standing:
					if !errors.Is(err, ErrSameLevel) {
						t.Fatalf("err = %v, want ErrSameLevel", err)
					}
				case target < standing:
					if !errors.Is(err, ErrNarrowing) {
						t.Fatalf("err = %v, want ErrNarrowing", err)
					}
				default:
					if err != nil {
						t.Fatalf("strictly wider refused: %v", err)
					}
				}
			})
		}
	}
	if ErrSameLevel.Error() == ErrNarrowing.Error() {
		t.Error("same-level and narrowing share their error text")
	}
	err := Validate(Call{SandboxPermissions: RequireEscalated, Target: profiles.Mode(7), Justification: "x"})
	if err == nil || !strings.Contains(err.Error(), "target_mode") {
		t.Errorf("out-of-range target: %v", err)
	}
}

func TestValidateAdditional(t *testing.T) {
	tests := []struct {
		name     string
		standing Standing
		add      profiles.Profile
		want     error
	}{
		{"empty profile", wsStanding, profiles.Profile{}, ErrAddsNothing},
		{"write inside a write root", wsStanding, prof(false, nil, []string{repo + "/src"}), ErrAddsNothing},
		{"a write root itself", wsStanding, prof(false, nil, []string{repo}), ErrAddsNothing},
		{"reads are always allowed", wsStanding, prof(false, []string{"/etc"}, nil), ErrAddsNothing},
		{"network already on", Standing{Mode: profiles.ReadOnly, Network: true}, prof(true, nil, nil), ErrAddsNothing},
		{"anything under danger-full-access", Standing{Mode: profiles.DangerFullAccess}, prof(true, nil, []string{"/etc"}), ErrAddsNothing},
		{"relative path", wsStanding, profiles.Profile{FileSystem: &profiles.FileSystem{Write: []string{"out"}}}, ErrNotNormalised},
		{"write outside the roots", wsStanding, prof(false, nil, []string{"/sbx-test/out"}), nil},
		{"write into a carve-out", wsStanding, prof(false, nil, []string{repo + "/.git"}), nil},
		{"network", wsStanding, prof(true, nil, nil), nil},
		{"write in read-only", Standing{Mode: profiles.ReadOnly}, prof(false, nil, []string{repo}), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(Call{Standing: tt.standing, SandboxPermissions: WithAdditionalPermissions, Additional: tt.add, Justification: "needed"})
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestValidateErrorsNameTheField(t *testing.T) {
	err := Validate(Call{SandboxPermissions: RequireEscalated, Target: profiles.WorkspaceWrite, Justification: ""})
	var fe *strictjson.FieldError
	if !errors.As(err, &fe) || fe.Field != "justification" {
		t.Fatalf("err = %v, want a FieldError on justification", err)
	}
	if errors.Is(err, ErrDenied) {
		t.Fatal("a malformed call is reported as a denial")
	}
}

// fullIf is the full network when network is set, else none.
func fullIf(network bool) *profiles.Network {
	if network {
		return profiles.FullNetwork()
	}
	return nil
}
