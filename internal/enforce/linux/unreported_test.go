//go:build linux

package linux

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/enforce/linux/seccomp"
	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/profiles"
)

// TestPlanUnreportedMasks: a mask whose reads go unreported (sbx serve's
// state directory) does not make every open supervised, a reported mask
// does, and so does an unreported one with a hard link outside it (only
// the supervisor keeps that name closed).
func TestPlanUnreportedMasks(t *testing.T) {
	ws := t.TempDir()
	state := filepath.Join(ws, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "log"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Build(policy.Request{Mode: profiles.WorkspaceWrite, Cwd: ws})
	if err != nil {
		t.Fatal(err)
	}
	pol.Masked = []string{state}
	sys := System{LandlockABI: 7, Privileged: true, UserNotif: true, UserNS: true}
	scope := func(p policy.Policy) seccomp.NotifyScope {
		t.Helper()
		plan, err := Compile(p, sys, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.MaskedMounts) != 1 {
			t.Fatalf("masked mounts %v, want %s", plan.MaskedMounts, state)
		}
		for _, s := range []seccomp.NotifyScope{seccomp.NotifyWrites, seccomp.NotifyReads} {
			if reflect.DeepEqual(plan.Seccomp, seccomp.SeccompTable(plan.Sockets, s)) {
				return s
			}
		}
		t.Fatalf("the plan's table is neither scope's")
		return seccomp.NotifyNone
	}
	if got := scope(pol); got != seccomp.NotifyReads {
		t.Errorf("a reported mask: %v, want %v", got, seccomp.NotifyReads)
	}
	quiet := pol
	quiet.Unreported = []string{state}
	if got := scope(quiet); got != seccomp.NotifyWrites {
		t.Errorf("an unreported mask: %v, want %v", got, seccomp.NotifyWrites)
	}
	if err := os.Link(filepath.Join(state, "log"), filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	if got := scope(quiet); got != seccomp.NotifyReads {
		t.Errorf("an unreported mask with a hard link outside it: %v, want %v", got, seccomp.NotifyReads)
	}
}
