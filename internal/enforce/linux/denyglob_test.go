//go:build linux

package linux

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/enforce/linux/seccomp"
	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// TestPlanDenyGlobs: deny patterns always leave deny-glob-create degraded
// (the supervisor is best effort; without it creation is not prevented),
// an unscanned pattern is deny-glob-scan naming it, and a deny_read
// pattern makes opens for reading supervised.
func TestPlanDenyGlobs(t *testing.T) {
	ws := t.TempDir()
	pol, err := policy.Build(policy.Request{Mode: profiles.WorkspaceWrite, Cwd: ws})
	if err != nil {
		t.Fatal(err)
	}
	reason := func(ds []report.Downgrade, f report.Feature) string {
		i := slices.IndexFunc(ds, func(d report.Downgrade) bool { return d.Feature == f })
		if i < 0 {
			return ""
		}
		return ds[i].Reason
	}
	plain, err := Compile(pol, System{LandlockABI: 7, Privileged: true, UserNotif: true}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if reason(plain.Downgrades, "deny-glob-create") != "" || reflect.DeepEqual(plain.Seccomp, seccomp.SeccompTable(plain.Sockets, seccomp.NotifyReads)) {
		t.Errorf("no deny patterns: downgrades %v", plain.Downgrades)
	}
	pol.DenyGlobs = []policy.DenyGlob{{Pattern: ws + "/**/.env", Given: "**/.env", Access: policy.DenyRead}}
	pol.DenyUnscanned = []policy.SkippedPath{{Path: "**/.env", Reason: "more than 20000 directory entries"}}
	for _, notif := range []bool{false, true} {
		plan, err := Compile(pol, System{LandlockABI: 7, Privileged: true, UserNotif: notif}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		create := reason(plan.Downgrades, "deny-glob-create")
		want := "not prevented"
		if notif {
			want = "best effort"
		}
		if !strings.Contains(create, want) || !strings.Contains(create, ws+"/**/.env") {
			t.Errorf("user notification %t: deny-glob-create %q, want %q naming the pattern", notif, create, want)
		}
		if scan := reason(plan.Downgrades, "deny-glob-scan"); !strings.Contains(scan, "**/.env") {
			t.Errorf("user notification %t: deny-glob-scan %q, want it naming the pattern", notif, scan)
		}
		if notif && !strings.Contains(reason(plan.UnsupervisedDowngrades(), "deny-glob-create"), "not prevented") {
			t.Errorf("without the supervisor at launch: %v", plan.UnsupervisedDowngrades())
		}
		if notif && !reflect.DeepEqual(plan.Seccomp, seccomp.SeccompTable(plan.Sockets, seccomp.NotifyReads)) {
			t.Error("a deny_read pattern without supervised reads")
		}
		if err := report.CheckRequired([]report.Feature{report.FeatureDenyGlobCreate}, plan.Downgrades); err == nil {
			t.Errorf("user notification %t: --require deny-glob-create accepted a best-effort plan", notif)
		}
	}
}
