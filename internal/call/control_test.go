package call

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/strictjson"
)

// TestControlPaths: a server's control paths (Escalation.Control) inside
// the call's writable root become a mask and a read-only carve-out, named
// as the server's in guard_removed, and stay in the guard the retry
// reads; a danger-full-access call, which has no sandbox, keeps neither;
// a workspace-write call without them is as before.
func TestControlPaths(t *testing.T) {
	f := newFixture(t)
	state, run := filepath.Join(f.ws, "state"), filepath.Join(f.ws, "run")
	for _, d := range []string{state, run} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	control := ControlPaths{}.With(state, "sbx serve's state directory", true).With(run, "the directory of sbx serve's socket", false)
	prepare := func(mode profiles.Mode, c ControlPaths) *Prepared {
		t.Helper()
		r := f.request()
		// exclude_tmp means something in workspace-write only (checkEffect).
		ws := mode == profiles.WorkspaceWrite
		r.Mode, r.ExcludeTmp, r.ExcludeTmpdir = mode, ws, ws
		r.Escalation.Control = c
		p, err := Prepare(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := prepare(profiles.WorkspaceWrite, control)
	pol := p.Policy()
	if !slices.Contains(pol.Masked, state) || !slices.Contains(pol.CarveOuts, run) || !slices.Contains(pol.WriteRoots, f.ws) {
		t.Errorf("masked %q, read-only %q, write roots %q: want %s masked, %s read-only, %s writable", pol.Masked, pol.CarveOuts, pol.WriteRoots, state, run, f.ws)
	}
	// The state directory's reads go unreported: the report names it once,
	// below, as the server's.
	if !slices.Equal(pol.Unreported, []string{state}) {
		t.Errorf("unreported %q, want the state directory alone", pol.Unreported)
	}
	var reasons []string
	for _, r := range p.Permissions.GuardRemoved {
		reasons = append(reasons, r.Path+": "+r.Reason)
	}
	got := strings.Join(reasons, "\n")
	for _, want := range []string{state + ": read: sbx serve's state directory (control plane): masked", run + ": carve_out: the directory of sbx serve's socket (control plane): read-only"} {
		if !strings.Contains(got, want) {
			t.Errorf("guard_removed %q lacks %q", got, want)
		}
	}
	if !slices.Contains(p.Guard.DenyRead, state) || !slices.Contains(p.Guard.DenyWrite, run) {
		t.Errorf("the retry's guard %+v lacks the control paths", p.Guard)
	}
	if p := prepare(profiles.DangerFullAccess, control); !p.Policy().Unrestricted || len(p.Policy().Masked) != 0 {
		t.Errorf("danger-full-access: %+v; want it unrestricted, nothing masked", p.Policy())
	}
	if p := prepare(profiles.WorkspaceWrite, ControlPaths{}); slices.Contains(p.Policy().CarveOuts, run) || len(p.Policy().Masked) != 0 {
		t.Errorf("without control paths: %+v", p.Policy())
	}
	// A cwd inside the masked state directory is refused, naming cwd:
	// the command would start in an empty directory, not the one asked.
	inside := filepath.Join(state, "ws")
	if err := os.Mkdir(inside, 0o700); err != nil {
		t.Fatal(err)
	}
	r := f.request()
	r.Cwd, r.Mode, r.Escalation.Control = inside, profiles.WorkspaceWrite, control
	_, err := Prepare(context.Background(), r)
	var fe *strictjson.FieldError
	if !errors.As(err, &fe) || fe.Field != "cwd" || !strings.Contains(err.Error(), "sbx serve's state directory") {
		t.Errorf("cwd inside the state directory: %v; want a cwd error naming it", err)
	}
}
