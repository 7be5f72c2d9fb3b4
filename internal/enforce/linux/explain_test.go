//go:build linux

package linux

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/report"
)

var update = flag.Bool("update", false, "rewrite testdata/explain/*.golden")

// TestExplainGolden pins the text `sbx explain` prints (Plan.String) for
// every mode and for grants, carve-outs and guard masks, on fixed kernels
// and users, so a change to what sbx enforces shows in review as a change
// of these files. The workspace is a fresh directory with a .git; its path
// is written as $WS. Run it with stdio not a terminal (as go test does by
// default), or the terminal's device joins the rules.
func TestExplainGolden(t *testing.T) {
	// Under /tmp whatever $TMPDIR says, so the rules are the same
	// everywhere: /tmp is a writable root of its own.
	ws, err := os.MkdirTemp("/tmp", "sbx-explain-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(ws) })
	if err := os.Mkdir(filepath.Join(ws, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	extra := filepath.Join(ws, "out")
	if err := os.Mkdir(extra, 0o755); err != nil {
		t.Fatal(err)
	}
	root := System{LandlockABI: 7, Privileged: true, UserNotif: true, InitUserNS: true, ProcFullyVisible: true}
	user := System{LandlockABI: 7, UserNS: true, UserNotif: true, InitUserNS: true, ProcFullyVisible: true}
	// A container whose runtime hides parts of /proc under other mounts.
	userMasked := System{LandlockABI: 7, UserNS: true, UserNotif: true}
	noNS := System{LandlockABI: 7, UserNSReason: "/proc/sys/user/max_user_namespaces is 0", UserNotif: true}
	for _, c := range []struct {
		name string
		req  policy.Request
		mask []string
		sys  System
		opts Options
	}{
		{"read-only-root", policy.Request{Mode: profiles.ReadOnly}, nil, root, Options{}},
		{"workspace-write-root", policy.Request{Mode: profiles.WorkspaceWrite}, nil, root, Options{}},
		{"workspace-write-user", policy.Request{Mode: profiles.WorkspaceWrite}, nil, user, Options{}},
		{"workspace-write-no-userns", policy.Request{Mode: profiles.WorkspaceWrite}, nil, noNS, Options{}},
		{"workspace-write-user-masked-proc", policy.Request{Mode: profiles.WorkspaceWrite}, nil, userMasked, Options{}},
		{"workspace-write-abi2", policy.Request{Mode: profiles.WorkspaceWrite}, nil, System{LandlockABI: 2, Privileged: true, UserNotif: true, InitUserNS: true, ProcFullyVisible: true}, Options{}},
		{"workspace-write-abi9", policy.Request{Mode: profiles.WorkspaceWrite}, nil, System{LandlockABI: 9, Privileged: true, UserNotif: true, InitUserNS: true, ProcFullyVisible: true}, Options{}},
		{"workspace-write-no-landlock", policy.Request{Mode: profiles.WorkspaceWrite}, nil, System{Privileged: true, InitUserNS: true, ProcFullyVisible: true}, Options{}},
		{"network-and-grants", policy.Request{Mode: profiles.ReadOnly, ExcludeTmp: true,
			Additional: profiles.New(profiles.FullNetwork(), []string{"/usr"}, []string{extra})}, nil, root, Options{}},
		{"carve-out-and-mask", policy.Request{Mode: profiles.WorkspaceWrite, ExtraCarveOuts: []string{"out"}}, []string{extra}, root, Options{}},
		{"danger-full-access", policy.Request{Mode: profiles.DangerFullAccess}, nil, root, Options{}},
		// The kernel's wall for the missing carve-outs: placeholders
		// (Plan.Placeholders), where by default they are watched.
		{"workspace-write-require-carve-out-create", policy.Request{Mode: profiles.WorkspaceWrite}, nil, root,
			Options{Require: []report.Feature{report.FeatureCarveOutCreate}}},
		{"workspace-write-no-denial-reports", policy.Request{Mode: profiles.WorkspaceWrite}, nil, user, Options{NoDenialReports: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.req.Cwd = ws
			pol, err := policy.Build(c.req)
			if err != nil {
				t.Fatal(err)
			}
			pol.Masked = c.mask
			p, err := Compile(pol, c.sys, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			got := strings.ReplaceAll(p.String(), ws, "$WS")
			path := filepath.Join("testdata", "explain", c.name+".golden")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -run TestExplainGolden -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("explain text changed; review and run with -update if intended.\n--- got\n%s\n--- want\n%s", got, want)
			}
		})
	}
}
