package call

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/netrule"
	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/shells"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// asker is an approver that records what it is shown and answers outcome.
type asker struct {
	outcome escalate.Outcome
	asked   []escalate.ApprovalRequest
}

func (a *asker) Approve(_ context.Context, req escalate.ApprovalRequest) (escalate.Outcome, error) {
	a.asked = append(a.asked, req)
	return a.outcome, nil
}

// dir is a fresh directory, symlinks resolved (as Normalize resolves them).
func dir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// fixture is what the cases of TestPrepare are built from.
type fixture struct {
	ws, out, granted string
	// guard denies writes to out and the network; empty denies nothing.
	guard, empty string
	exe          string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	f := fixture{ws: dir(t), out: dir(t), granted: dir(t)}
	for _, d := range []string{".git", ".git/hooks"} {
		if err := os.Mkdir(filepath.Join(f.ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	g := dir(t)
	f.guard, f.empty = filepath.Join(g, "guard.json"), filepath.Join(g, "empty.json")
	if err := os.WriteFile(f.guard, []byte(`{"deny_write":["`+f.out+`"],"deny_network":true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.empty, []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f.exe = exe
	return f
}

// request is a read-only call of the test binary in ws, under the empty
// guard, asking on-request.
func (f fixture) request() Request {
	return Request{Command: []string{f.exe}, Cwd: f.ws, Mode: profiles.ReadOnly, Env: []string{"PATH=/usr/bin:/bin"},
		Escalation: Escalation{GuardPath: f.empty, ApprovalPolicy: profiles.ApprovalOnRequest}}
}

func write(paths ...string) profiles.Profile { return profiles.New(nil, nil, paths) }

func TestPrepare(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name    string
		edit    func(r *Request)
		outcome escalate.Outcome
		// wantErr is a substring of the error ("" none); wantField the
		// field it names.
		wantErr, wantField string
		wantIs             error
		// wantAsked is how often the approver is asked.
		wantAsked int
		check     func(t *testing.T, p *Prepared, a *asker)
	}{
		{name: "read-only standing", check: func(t *testing.T, p *Prepared, _ *asker) {
			pol := p.Policy()
			if pol.Mode != profiles.ReadOnly || len(pol.WriteRoots) != 0 || pol.Network != policy.NetworkIsolated {
				t.Errorf("policy %+v, want read-only, no write roots, no network", pol)
			}
			if p.Permissions.Via != escalate.ViaStanding || p.Permissions.Mode != profiles.ReadOnly || p.Report.Mode != "read-only" {
				t.Errorf("permissions %+v, report mode %q", p.Permissions, p.Report.Mode)
			}
			if p.Call.Cmd.Path != f.exe || p.Call.Cmd.Dir != f.ws || p.Request.Cwd != f.ws {
				t.Errorf("cmd %+v, request cwd %q", p.Call.Cmd, p.Request.Cwd)
			}
		}},
		{name: "workspace-write keeps .git read-only", edit: func(r *Request) { r.Mode = profiles.WorkspaceWrite; r.ExcludeTmp, r.ExcludeTmpdir = true, true },
			check: func(t *testing.T, p *Prepared, _ *asker) {
				pol := p.Policy()
				if !slices.Contains(pol.WriteRoots, f.ws) || !slices.Contains(pol.CarveOuts, filepath.Join(f.ws, ".git")) {
					t.Errorf("write roots %q, read-only %q", pol.WriteRoots, pol.CarveOuts)
				}
			}},
		{name: "network preauthorized", edit: func(r *Request) { r.Network = true },
			check: func(t *testing.T, p *Prepared, _ *asker) {
				if p.Policy().Network != policy.NetworkFull || !p.Permissions.Preauthorized.NetworkEnabled() {
					t.Errorf("network %v, preauthorized %+v", p.Policy().Network, p.Permissions.Preauthorized)
				}
			}},
		{name: "use_default additional preauthorized", edit: func(r *Request) { r.Additional, r.Preauthorized = write(f.out), true },
			check: func(t *testing.T, p *Prepared, _ *asker) {
				if !slices.Contains(p.Policy().WriteRoots, f.out) || !slices.Equal(p.Permissions.Preauthorized.WritePaths(), []string{f.out}) {
					t.Errorf("write roots %q, preauthorized %+v", p.Policy().WriteRoots, p.Permissions.Preauthorized)
				}
			}},
		// Codex: additional_permissions under use_default require
		// with_additional_permissions, unless the caller marks them its own.
		{name: "use_default additional not preauthorized", edit: func(r *Request) { r.Additional = write(f.out) },
			wantField: "additional_permissions", wantIs: escalate.ErrStrayProfile, wantErr: `"preauthorized": true`},
		{name: "preauthorized only with use_default", edit: func(r *Request) {
			r.Additional, r.Preauthorized = write(f.out), true
			r.Escalation.SandboxPermissions, r.Escalation.Justification = profiles.WithAdditionalPermissions, "j"
		}, wantField: "preauthorized", wantErr: "only with sandbox_permissions use_default"},
		{name: "empty command", edit: func(r *Request) { r.Command = nil }, wantField: "command"},
		{name: "command and shell", edit: func(r *Request) { r.Shell = &shells.Spec{Kind: shells.Sh, Script: "true"} }, wantField: "shell"},
		{name: "unknown feature", edit: func(r *Request) { r.Require = []string{"landlcok"} }, wantField: "require", wantErr: `unknown feature "landlcok"`},
		{name: "missing cwd", edit: func(r *Request) { r.Cwd = filepath.Join(f.ws, "missing") }, wantField: "cwd", wantErr: "does not exist"},
		{name: "missing guard", edit: func(r *Request) { r.Escalation.GuardPath = filepath.Join(f.ws, "missing.json") }, wantErr: "guard: "},
		{name: "not found", edit: func(r *Request) { r.Command = []string{"no-such-command-sbx"} }, wantIs: ErrNotFound,
			check: func(t *testing.T, p *Prepared, _ *asker) {
				if p == nil || p.Call.Cmd.Path != "" || p.Call.Policy.Mode != profiles.ReadOnly {
					t.Errorf("prepared %+v, want the policy without a command", p)
				}
			}},
		{name: "sticky turn grant", edit: func(r *Request) { r.Escalation.Grants.Turn = write(f.granted) },
			check: func(t *testing.T, p *Prepared, _ *asker) {
				if p.Permissions.Via != escalate.ViaGrant || !slices.Equal(p.Permissions.Turn.WritePaths(), []string{f.granted}) ||
					!slices.Contains(p.Policy().WriteRoots, f.granted) {
					t.Errorf("permissions %+v, write roots %q; want the turn grant, via grant", p.Permissions, p.Policy().WriteRoots)
				}
			}},
		// Codex: a turn granted with strict_auto_review sends every later
		// call of the turn to approval, even one its grants cover.
		{name: "strict turn grant asks", edit: func(r *Request) {
			r.Escalation.Grants.Turn, r.Escalation.Grants.TurnStrict = write(f.granted), true
		}, outcome: escalate.Rejected, wantIs: escalate.ErrDenied, wantAsked: 1, check: func(t *testing.T, _ *Prepared, a *asker) {
			if np := a.asked[0].NewPermissions; np == nil || !slices.Equal(np.WritePaths(), []string{f.granted}) {
				t.Errorf("shown %+v, want the grant under review", a.asked[0])
			}
		}},
		{name: "escalation approved", edit: func(r *Request) {
			r.Escalation.SandboxPermissions, r.Escalation.Target, r.Escalation.Justification = profiles.RequireEscalated, profiles.DangerFullAccess, "j"
		}, outcome: escalate.AllowedOnce, wantAsked: 1, check: func(t *testing.T, p *Prepared, _ *asker) {
			if !p.Policy().Unrestricted || p.Permissions.Via != escalate.ViaApproval || p.Permissions.StandingMode != profiles.ReadOnly ||
				p.Permissions.Mode != profiles.DangerFullAccess || p.Report.Mode != "danger-full-access" {
				t.Errorf("policy %+v, permissions %+v", p.Policy(), p.Permissions)
			}
		}},
		{name: "escalation rejected", edit: func(r *Request) {
			r.Escalation.SandboxPermissions, r.Escalation.Target, r.Escalation.Justification = profiles.RequireEscalated, profiles.DangerFullAccess, "j"
		}, outcome: escalate.Rejected, wantIs: escalate.ErrDenied, wantAsked: 1},
		{name: "never asks nobody", edit: func(r *Request) {
			r.Escalation.ApprovalPolicy = profiles.ApprovalNever
			r.Escalation.SandboxPermissions, r.Escalation.Target, r.Escalation.Justification = profiles.RequireEscalated, profiles.DangerFullAccess, "j"
		}, outcome: escalate.AllowedOnce, wantIs: escalate.ErrDenied},
		// Nothing is asked that would then be refused.
		{name: "escalation to the same mode", edit: func(r *Request) {
			r.Escalation.SandboxPermissions, r.Escalation.Target, r.Escalation.Justification = profiles.RequireEscalated, profiles.ReadOnly, "j"
		}, outcome: escalate.AllowedOnce, wantIs: escalate.ErrSameLevel},
		{name: "escalation without justification", edit: func(r *Request) {
			r.Escalation.SandboxPermissions, r.Escalation.Target = profiles.RequireEscalated, profiles.DangerFullAccess
		}, outcome: escalate.AllowedOnce, wantField: "justification"},
		{name: "missing path", edit: func(r *Request) {
			r.Escalation.SandboxPermissions, r.Escalation.Justification = profiles.WithAdditionalPermissions, "j"
			r.Additional = write(filepath.Join(f.out, "missing"))
		}, outcome: escalate.AllowedOnce, wantField: "additional_permissions.file_system.write[0]", wantErr: f.out + "/missing does not exist"},
		{name: "inside a carve-out", edit: func(r *Request) {
			r.Mode, r.ExcludeTmp, r.ExcludeTmpdir = profiles.WorkspaceWrite, true, true
			r.Escalation.SandboxPermissions, r.Escalation.Justification = profiles.WithAdditionalPermissions, "j"
			r.Additional = write(".git/hooks")
		}, outcome: escalate.AllowedOnce, wantField: "additional_permissions.file_system.write[0]", wantErr: "is inside the read-only carve-out " + f.ws + "/.git, which no request can widen"},
		{name: "stripped by the guard", edit: func(r *Request) {
			r.Escalation.GuardPath = f.guard
			r.Escalation.SandboxPermissions, r.Escalation.Justification = profiles.WithAdditionalPermissions, "j"
			r.Additional = write(f.out)
		}, outcome: escalate.AllowedOnce, wantField: "additional_permissions", wantIs: errGuardStrips, wantErr: "write_root " + f.out + ": inside " + f.out + ", denied by the guard"},
		{name: "network stripped by the guard", edit: func(r *Request) {
			r.Escalation.GuardPath = f.guard
			r.Escalation.SandboxPermissions, r.Escalation.Justification = profiles.WithAdditionalPermissions, "j"
			r.Additional = profiles.New(profiles.FullNetwork(), nil, nil)
		}, outcome: escalate.AllowedOnce, wantIs: errGuardStrips, wantErr: "deny_network in the guard"},
		// A full network beside a deny list runs behind the proxy: what
		// was asked survives (every host but the denied ones).
		{name: "full network with a deny list survives", edit: func(r *Request) {
			r.Escalation.SandboxPermissions, r.Escalation.Justification = profiles.WithAdditionalPermissions, "j"
			r.Additional = profiles.New(&profiles.Network{Enabled: true, DeniedDomains: []string{"evil.test"}}, nil, nil)
		}, outcome: escalate.AllowedOnce, wantAsked: 1, check: func(t *testing.T, p *Prepared, _ *asker) {
			pol := p.Policy()
			if d := pol.Domains; pol.Network != policy.NetworkIsolated || d == nil || !d.AllowAll || !slices.Equal(netrule.Strings(d.Denied), []string{"evil.test"}) {
				t.Errorf("policy network %v, domains %+v: want every host but evil.test through the proxy", pol.Network, pol.Domains)
			}
		}},
		{name: "guard removes, last", edit: func(r *Request) {
			r.Escalation.GuardPath = f.guard
			r.Network, r.Additional, r.Preauthorized = true, write(f.out, f.granted), true
		}, check: func(t *testing.T, p *Prepared, _ *asker) {
			pol := p.Policy()
			if slices.Contains(pol.WriteRoots, f.out) || !slices.Contains(pol.WriteRoots, f.granted) || pol.Network != policy.NetworkIsolated {
				t.Errorf("policy %+v: want %s and the network removed, %s kept", pol, f.out, f.granted)
			}
			var what []string
			for _, r := range p.Permissions.GuardRemoved {
				what = append(what, r.What)
			}
			if !slices.Contains(what, "write_root") || !slices.Contains(what, "network") {
				t.Errorf("guard_removed %+v, want the write root and the network", p.Permissions.GuardRemoved)
			}
		}},
		// The approver sees what the call would run with, marking what is
		// new, with an approval id and the environment.
		{name: "approver sees the merged profile", edit: func(r *Request) {
			r.Escalation.CallID, r.Escalation.EnvironmentID = "c9", "env7"
			r.Escalation.SandboxPermissions, r.Escalation.Justification = profiles.WithAdditionalPermissions, "j"
			r.Escalation.Grants.Session = write(f.granted)
			r.Additional = write(f.out)
		}, outcome: escalate.Rejected, wantIs: escalate.ErrDenied, wantAsked: 1, check: func(t *testing.T, _ *Prepared, a *asker) {
			r := a.asked[0]
			if r.ApprovalID == "" || r.EnvironmentID != "env7" || r.CallID != "c9" || r.Tool != "shell" {
				t.Errorf("request %+v: want an approval_id, environment_id env7, call_id c9, tool shell", r)
			}
			if r.MergedPermissions == nil || len(r.MergedPermissions.WritePaths()) != 2 {
				t.Errorf("merged_permissions %+v, want the grant and the request", r.MergedPermissions)
			}
			if r.NewPermissions == nil || !slices.Equal(r.NewPermissions.WritePaths(), []string{f.out}) {
				t.Errorf("new_permissions %+v, want only %s", r.NewPermissions, f.out)
			}
		}},
		{name: "fs tool", edit: func(r *Request) {
			r.Escalation.Tool = "fs"
			r.Escalation.SandboxPermissions, r.Escalation.Justification = profiles.WithAdditionalPermissions, "j"
			r.Additional = write(f.out)
		}, outcome: escalate.Rejected, wantIs: escalate.ErrDenied, wantAsked: 1, check: func(t *testing.T, _ *Prepared, a *asker) {
			if a.asked[0].Tool != "fs" {
				t.Errorf("tool %q, want fs", a.asked[0].Tool)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.request()
			a := &asker{outcome: tt.outcome}
			if tt.outcome != "" {
				r.Escalation.Approver = a
			}
			if tt.edit != nil {
				tt.edit(&r)
			}
			p, err := Prepare(context.Background(), r)
			wantErr := tt.wantErr != "" || tt.wantField != "" || tt.wantIs != nil
			switch {
			case !wantErr && err != nil:
				t.Fatalf("error %v", err)
			case wantErr && err == nil:
				t.Fatalf("no error, want one")
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Errorf("error %q, want it to contain %q", err, tt.wantErr)
			case tt.wantIs != nil && !errors.Is(err, tt.wantIs):
				t.Errorf("error %q, want it to match %q", err, tt.wantIs)
			}
			if tt.wantField != "" {
				var fe *strictjson.FieldError
				if !errors.As(err, &fe) || fe.Field != tt.wantField {
					t.Errorf("error %q names no field %s", err, tt.wantField)
				}
			}
			if len(a.asked) != tt.wantAsked {
				t.Fatalf("the approver was asked %d times, want %d", len(a.asked), tt.wantAsked)
			}
			if tt.check != nil {
				tt.check(t, p, a)
			}
		})
	}
}

// TestShownCommand: the argv is shown only when it is what runs (moved
// from serve: Prepare fills the one question's command for every answerer).
func TestShownCommand(t *testing.T) {
	argv := []string{"sh", "-c", "x"}
	for _, tt := range []struct {
		name string
		req  Request
		want []string
	}{
		{"argv", Request{Command: argv}, argv},
		{"shell spec", Request{Command: argv, Shell: &shells.Spec{}}, nil},
		{"fs", Request{Command: argv, Escalation: Escalation{Tool: "fs"}}, nil},
	} {
		if got := shownCommand(tt.req); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
