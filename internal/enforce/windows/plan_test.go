package windows

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/report"
)

const sid = "S-1-5-21-1-2-3-4"

// project makes a workspace where every protected name (.git, .codex,
// .agents) exists, a second repository without them, and a file, as
// policy.Build would see them.
func project(t *testing.T) (root, other, file string) {
	t.Helper()
	base := t.TempDir()
	root, other = filepath.Join(base, "proj"), filepath.Join(base, "other")
	dirs := []string{other}
	for _, n := range policy.DefaultProtected {
		dirs = append(dirs, filepath.Join(root, n))
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	file = filepath.Join(base, "notes.txt")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return root, other, file
}

// protectedDenies are the deny ACEs of root's protected names.
func protectedDenies(root string) []ACE {
	var out []ACE
	for _, n := range policy.DefaultProtected {
		out = append(out, ACE{filepath.Join(root, n), Deny, DenyMask, InheritTree})
	}
	return out
}

func build(t *testing.T, req policy.Request) policy.Policy {
	t.Helper()
	req.ExcludeTmp = true
	pol, err := policy.Build(req)
	if err != nil {
		t.Fatal(err)
	}
	return pol
}

func features(ds []report.Downgrade) []string {
	var out []string
	for _, d := range ds {
		out = append(out, string(d.Feature))
	}
	return out
}

func TestCompile(t *testing.T) {
	root, other, file := project(t)
	tests := []struct {
		name       string
		req        policy.Request
		wantLaunch string
		wantACEs   []ACE
		wantDown   []string
	}{
		{"danger-full-access", policy.Request{Mode: profiles.DangerFullAccess, Cwd: root},
			LaunchDirect, nil, nil},
		{"read-only: no root is granted, every write is refused",
			policy.Request{Mode: profiles.ReadOnly, Cwd: root},
			LaunchRestrictedToken, nil, []string{"everyone-writable", "denial-reports", "netns"}},
		{"workspace-write: cwd granted, existing protected names denied",
			policy.Request{Mode: profiles.WorkspaceWrite, Cwd: root},
			LaunchRestrictedToken,
			append([]ACE{{root, Allow, GrantMask, InheritTree}}, protectedDenies(root)...),
			[]string{"everyone-writable", "denial-reports", "netns"}},
		{"workspace-write with network: netns is not degraded",
			policy.Request{Mode: profiles.WorkspaceWrite, Cwd: root, Additional: profiles.New(profiles.FullNetwork(), nil, nil)},
			LaunchRestrictedToken,
			append([]ACE{{root, Allow, GrantMask, InheritTree}}, protectedDenies(root)...),
			[]string{"everyone-writable", "denial-reports"}},
		{"grants: a repository without .git and a single file",
			policy.Request{Mode: profiles.WorkspaceWrite, Cwd: root, Additional: profiles.New(nil, nil, []string{other, file})},
			LaunchRestrictedToken,
			// The policy sorts its write roots.
			append([]ACE{{file, Allow, GrantMask, InheritNone}, {other, Allow, GrantMask, InheritTree}, {root, Allow, GrantMask, InheritTree}},
				protectedDenies(root)...),
			[]string{"everyone-writable", "denial-reports", "netns", "carve-out-create"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Compile(build(t, tc.req), Options{CallSID: sid})
			if err != nil {
				t.Fatal(err)
			}
			if p.Launch != tc.wantLaunch {
				t.Errorf("launch = %s, want %s", p.Launch, tc.wantLaunch)
			}
			if !slices.Equal(p.ACEs, tc.wantACEs) {
				t.Errorf("aces =\n%v\nwant\n%v", p.ACEs, tc.wantACEs)
			}
			if got := features(p.Downgrades); !slices.Equal(got, tc.wantDown) {
				t.Errorf("downgrades = %v, want %v", got, tc.wantDown)
			}
			if p.Launch == LaunchRestrictedToken && !slices.Equal(p.RestrictingSIDs, []string{sid, EveryoneSID, LogonSID}) {
				t.Errorf("restricting sids = %v", p.RestrictingSIDs)
			}
			if p.Launch == LaunchDirect && (p.CallSID != "" || p.RestrictingSIDs != nil) {
				t.Errorf("direct launch has a call sid %q or restricting sids %v", p.CallSID, p.RestrictingSIDs)
			}
		})
	}
}

func TestCompileMissingCarveOutIsNamed(t *testing.T) {
	_, other, _ := project(t)
	p, err := Compile(build(t, policy.Request{Mode: profiles.WorkspaceWrite, Cwd: other}), Options{CallSID: sid})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(p.Downgrades, func(d report.Downgrade) bool { return d.Feature == "carve-out-create" })
	if i < 0 || !strings.Contains(p.Downgrades[i].Reason, filepath.Join(other, ".git")) {
		t.Errorf("downgrades %v do not name %s/.git", p.Downgrades, other)
	}
	for _, a := range p.ACEs {
		if a.Kind == Deny {
			t.Errorf("deny ACE for a path that does not exist: %v", a)
		}
	}
}

func TestCompileMasked(t *testing.T) {
	root, _, _ := project(t)
	pol := build(t, policy.Request{Mode: profiles.WorkspaceWrite, Cwd: root})
	pol.Masked = []string{filepath.Join(root, "secret")}
	p, err := Compile(pol, Options{CallSID: sid})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(features(p.Downgrades), "mask") {
		t.Errorf("masked paths not reported as degraded: %v", p.Downgrades)
	}
}

func TestCompileRefuses(t *testing.T) {
	root, _, _ := project(t)
	pol := build(t, policy.Request{Mode: profiles.WorkspaceWrite, Cwd: root})
	if _, err := Compile(pol, Options{}); err == nil || !strings.Contains(err.Error(), "call sid") {
		t.Errorf("no call sid: err = %v", err)
	}
	pol.WriteRoots = append(pol.WriteRoots, filepath.Join(root, "gone"))
	if _, err := Compile(pol, Options{CallSID: sid}); err == nil || !strings.Contains(err.Error(), "write_roots") {
		t.Errorf("missing write root: err = %v, want one naming write_roots", err)
	}
}

func TestMasks(t *testing.T) {
	// Deleting a carve-out through its parent needs FILE_DELETE_CHILD on the
	// parent; rewriting the ACLs needs WRITE_DAC or WRITE_OWNER.
	for _, bit := range []uint32{fileDeleteChild, writeDAC, writeOwner} {
		if GrantMask&bit != 0 {
			t.Errorf("GrantMask %#x has %#x", GrantMask, bit)
		}
	}
	for _, bit := range []uint32{fileWriteData, fileAppendData, fileWriteAttributes, fileWriteEA, accessDelete, fileDeleteChild, writeDAC, writeOwner} {
		if DenyMask&bit == 0 {
			t.Errorf("DenyMask %#x lacks %#x", DenyMask, bit)
		}
	}
}

func TestJobFromLimits(t *testing.T) {
	root, _, _ := project(t)
	for _, mode := range []profiles.Mode{profiles.WorkspaceWrite, profiles.DangerFullAccess} {
		pol := build(t, policy.Request{Mode: mode, Cwd: root})
		p, err := Compile(pol, Options{CallSID: sid, Limits: report.Limits{MemoryBytes: 64 << 20, Pids: 32}})
		if err != nil {
			t.Fatal(err)
		}
		if want := (Job{ActiveProcessLimit: 32, JobMemoryLimit: 64 << 20}); p.Job != want {
			t.Errorf("%s: job = %+v, want %+v", mode, p.Job, want)
		}
		if slices.Contains(features(p.Downgrades), "limits") {
			t.Errorf("%s: memory and pids reported degraded: %v", mode, p.Downgrades)
		}
		p, err = Compile(pol, Options{CallSID: sid, Limits: report.Limits{CPUs: 0.5}})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(features(p.Downgrades), "limits") {
			t.Errorf("%s: cpus not reported degraded: %v", mode, p.Downgrades)
		}
	}
}

func TestJobLimitFlags(t *testing.T) {
	tests := []struct {
		name string
		job  Job
		want uint32
	}{
		{"no limits", Job{}, 0x2400},
		{"process count", Job{ActiveProcessLimit: 64}, 0x2408},
		{"memory", Job{JobMemoryLimit: 1 << 30}, 0x2600},
		{"both", Job{ActiveProcessLimit: 1, JobMemoryLimit: 1}, 0x2608},
	}
	for _, tc := range tests {
		if got := tc.job.LimitFlags(); got != tc.want {
			t.Errorf("%s: flags = %#x, want %#x", tc.name, got, tc.want)
		}
		if got := tc.job.LimitFlags(); got&0x1800 != 0 {
			t.Errorf("%s: flags %#x allow breakaway", tc.name, got)
		}
	}
}

func TestNewCallSID(t *testing.T) {
	b := []byte{1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}
	got, err := NewCallSID(bytes.NewReader(b))
	if err != nil || got != "S-1-5-21-1-2-3-4294967295" {
		t.Errorf("NewCallSID = %q, %v", got, err)
	}
	if _, err := NewCallSID(bytes.NewReader(b[:3])); err == nil {
		t.Error("short random source: no error")
	}
	a, _ := DefaultOptions()
	c, _ := DefaultOptions()
	if a.CallSID == c.CallSID {
		t.Errorf("two calls got the same sid %s", a.CallSID)
	}
}

func TestString(t *testing.T) {
	root, _, _ := project(t)
	p, err := Compile(build(t, policy.Request{Mode: profiles.WorkspaceWrite, Cwd: root}), Options{CallSID: sid})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.ReplaceAll(p.String(), root, "$ROOT")
	want := `mode: workspace-write
launch: restricted-token
job: limit_flags=0x2400 ui_restrictions=0xff active_processes=0 job_memory=0 breakaway=forbidden
token: write-restricted, max privileges disabled, restricting sids: call S-1-1-0 logon
network: isolated
ace: allow call 0x1301bf tree $ROOT
ace: deny call 0xd0156 tree $ROOT/.git
ace: deny call 0xd0156 tree $ROOT/.codex
ace: deny call 0xd0156 tree $ROOT/.agents
degraded: everyone-writable: files and directories whose ACL lets Everyone write stay writable outside the writable roots
degraded: denial-reports: no access-check audit is read on windows: operations the sandbox blocks are not reported
degraded: netns: network is not isolated on windows (no AppContainer or firewall rule yet): the command has the host's network
`
	if got != want {
		t.Errorf("String() =\n%s\nwant\n%s", got, want)
	}
	if strings.Contains(p.String(), sid) {
		t.Error("String() prints the random call sid")
	}
}
