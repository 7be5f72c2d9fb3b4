package call

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/escalate"
	"github.com/sbx-sandbox/sbx/internal/fspath"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// TestCreateToolDirOnApproval: a grant may name a tool's cache directory
// that does not exist yet (GOCACHE here); sbx makes it, as the caller,
// once approved and before the call, and says so in permissions.created.
// A missing path outside the table stays refused, and nothing is made for
// a request the approver rejects (issue 29).
func TestCreateToolDirOnApproval(t *testing.T) {
	f := newFixture(t)
	gc := filepath.Join(f.out, "gocache")
	request := func(write string, sp profiles.SandboxPermissions, o escalate.Outcome) Request {
		r := f.request()
		r.Mode, r.ExcludeTmp, r.ExcludeTmpdir = profiles.WorkspaceWrite, true, true
		r.Env = append(r.Env, "HOME="+f.granted, "GOCACHE="+gc)
		r.Escalation.Approver = escalate.ApproverFunc(func(context.Context, escalate.ApprovalRequest) (escalate.Outcome, error) { return o, nil })
		p := profiles.New(nil, nil, []string{write})
		if sp == profiles.UseDefault {
			r.Escalation.Grants.Turn = p
		} else {
			r.Additional, r.Escalation.SandboxPermissions, r.Escalation.Justification = p, sp, "build"
		}
		return r
	}
	_, err := Prepare(context.Background(), request(gc, profiles.WithAdditionalPermissions, escalate.Rejected))
	if !errors.Is(err, escalate.ErrDenied) || fspath.Exists(gc) {
		t.Fatalf("rejected: err %v, %s exists %v; want a denial and nothing made", err, gc, fspath.Exists(gc))
	}
	for _, sp := range []profiles.SandboxPermissions{profiles.WithAdditionalPermissions, profiles.UseDefault} {
		p, err := Prepare(context.Background(), request(gc, sp, escalate.AllowedOnce))
		if err != nil {
			t.Fatalf("%s: %v", sp, err)
		}
		want := []string{gc}
		if sp == profiles.UseDefault {
			want = nil // made by the first
		}
		if !fspath.Exists(gc) || !slices.Equal(p.Permissions.Created, want) || !slices.Contains(p.Policy().WriteRoots, gc) {
			t.Errorf("%s: created %q, write roots %q; want %s made and writable", sp, p.Permissions.Created, p.Policy().WriteRoots, gc)
		}
	}
	other := filepath.Join(f.out, "elsewhere")
	if _, err := Prepare(context.Background(), request(other, profiles.WithAdditionalPermissions, escalate.AllowedOnce)); err == nil || !strings.Contains(err.Error(), "does not exist") || fspath.Exists(other) {
		t.Errorf("a missing path outside the tool table: %v; want it refused, not made", err)
	}
}

// TestToolProfile: --tool go is the go row of the table placed by the
// environment (GOCACHE's directory, not the default) with its registry
// domains; an unknown tool is refused naming its index.
func TestToolProfile(t *testing.T) {
	home := t.TempDir()
	env := []string{"HOME=" + home, "GOCACHE=" + home + "/gc"}
	p, err := ToolProfile([]string{"go"}, env, home)
	if err != nil {
		t.Fatal(err)
	}
	w := p.WritePaths()
	if !slices.Contains(w, home+"/gc") || slices.Contains(w, home+"/.cache/go-build") || !slices.Contains(w, home+"/go/pkg/mod") || !slices.Contains(p.AllowedDomains(), "proxy.golang.org") {
		t.Errorf("go profile %+v: want GOCACHE, ~/go/pkg/mod writable and proxy.golang.org", p)
	}
	if p, err := ToolProfile([]string{"git"}, env, home); err != nil || !p.IsEmpty() {
		t.Errorf("git: %+v %v; want nothing (git writes only in its repository)", p, err)
	}
	var fe *strictjson.FieldError
	if _, err := ToolProfile([]string{"go", "nope"}, env, home); !errors.As(err, &fe) || fe.Field != "tools[1]" {
		t.Errorf("unknown tool: %v; want a tools[1] error", err)
	}
}
