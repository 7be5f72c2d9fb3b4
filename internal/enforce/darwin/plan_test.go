package darwin

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/profiles"
)

// update rewrites testdata/*.golden from what Compile produces:
// go test ./internal/enforce/darwin -run TestGolden -update
var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// Policies are built by hand, as policy.Build would for a Mac user "dev" with
// a project in /Users/dev/proj; policy.Build itself touches the file system.
const (
	home   = "/Users/dev"
	proj   = home + "/proj"
	tmpdir = "/var/folders/zz/abc123/T"
)

var devices = policy.DefaultDevices

func readOnly() policy.Policy {
	return policy.Policy{Mode: profiles.ReadOnly, ReadRoots: []string{"/"}, Devices: devices, Network: policy.NetworkIsolated}
}

func workspaceWrite() policy.Policy {
	return policy.Policy{Mode: profiles.WorkspaceWrite, ReadRoots: []string{"/"}, Devices: devices, Network: policy.NetworkIsolated,
		WriteRoots: []string{proj, "/tmp", tmpdir},
		CarveOuts:  []string{proj + "/.git"}}
}

var goldenCases = []struct {
	name string
	pol  func() policy.Policy
}{
	{"read-only", readOnly},
	{"workspace-write", workspaceWrite},
	{"danger-full-access", func() policy.Policy {
		return policy.Policy{Mode: profiles.DangerFullAccess, Unrestricted: true, ReadRoots: []string{"/"},
			WriteRoots: []string{"/"}, Devices: devices, Network: policy.NetworkFull}
	}},
	{"workspace-write-grants", func() policy.Policy {
		// Additional write grants: a second repository (its .git protected
		// too), a cache directory, a single file, and a configured extra
		// carve-out.
		p := workspaceWrite()
		p.WriteRoots = append(p.WriteRoots, home+"/other-repo", home+"/Library/Caches/pip", "/etc/hosts")
		p.CarveOuts = append(p.CarveOuts, proj+"/.codex", home+"/other-repo/.git")
		return p
	}},
	{"read-only-network", func() policy.Policy {
		p := readOnly()
		p.Network = policy.NetworkFull
		return p
	}},
	{"workspace-write-network", func() policy.Policy {
		p := workspaceWrite()
		p.Network = policy.NetworkFull
		return p
	}},
	{"guard-masked", func() policy.Policy {
		// The guard's deny-read list: paths outside the roots, one inside
		// the workspace, and one under /etc (canonicalised).
		p := workspaceWrite()
		p.Masked = []string{home + "/.ssh", home + "/.aws", proj + "/.env", "/etc/sudoers"}
		return p
	}},
	{"deny-globs", func() policy.Policy {
		// Deny patterns: a relative one anchored at the workspace and at
		// /tmp (canonicalised), an absolute one, and an existing match
		// made read-only as a carve-out.
		p := workspaceWrite()
		p.CarveOuts = append(p.CarveOuts, proj+"/sub/.env")
		p.DenyGlobs = []policy.DenyGlob{
			{Pattern: proj + "/**/.env", Given: "**/.env", Access: policy.DenyWrite},
			{Pattern: "/tmp/**/*.pem", Given: "**/*.pem", Access: policy.DenyRead},
			{Pattern: "/Users/*/.ssh", Given: "/Users/*/.ssh", Access: policy.DenyRead},
			{Pattern: proj + "/[^a]?.key", Given: "[^a]?.key", Access: policy.DenyRead},
		}
		return p
	}},
	{"read-only-guard-masked", func() policy.Policy {
		p := readOnly()
		p.Masked = []string{home + "/.ssh"}
		return p
	}},
	{"narrow-reads", func() policy.Policy {
		// No built-in mode narrows reads; this pins the per-root form.
		p := workspaceWrite()
		p.ReadRoots = []string{"/usr", "/System", "/Library", "/bin", "/private/var/db/dyld"}
		return p
	}},
}

func TestGolden(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := Compile(tc.pol(), Options{Paths: PathsStatic})
			if err != nil {
				t.Fatal(err)
			}
			got := plan.String()
			file := filepath.Join("testdata", tc.name+".golden")
			if *update {
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from Plan.String(); run go test ./internal/enforce/darwin -run TestGolden -update and review the diff\n--- got\n%s", file, got)
			}
		})
	}
}

var paramRef = regexp.MustCompile(`\(param "([A-Z0-9_]+)"\)`)

// TestProfileInvariants checks every golden policy: parameters and
// references match one to one, no parameter value is pasted into the text,
// the text is balanced, and the guard comes last.
func TestProfileInvariants(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			pol := tc.pol()
			plan, err := Compile(pol, Options{Paths: PathsStatic})
			if err != nil {
				t.Fatal(err)
			}
			if pol.Unrestricted {
				if plan.Launch != LaunchDirect || plan.Profile != "" || len(plan.Params) != 0 {
					t.Fatalf("danger-full-access: launch %q, %d params, profile %q; want direct, none", plan.Launch, len(plan.Params), plan.Profile)
				}
				return
			}
			prof := plan.Profile
			if !strings.HasPrefix(prof, "(version 1)\n") || !strings.Contains(prof, "\n(deny default)\n") {
				t.Errorf("profile does not start with (version 1) (deny default)")
			}
			defined := map[string]bool{}
			for _, p := range plan.Params {
				if defined[p.Name] {
					t.Errorf("parameter %s defined twice", p.Name)
				}
				defined[p.Name] = true
				if strings.Contains(prof, `"`+p.Value+`"`) {
					t.Errorf("value %q of %s is pasted into the profile", p.Value, p.Name)
				}
			}
			used := map[string]bool{}
			for _, m := range paramRef.FindAllStringSubmatch(prof, -1) {
				used[m[1]] = true
				if !defined[m[1]] {
					t.Errorf("profile uses undefined parameter %s", m[1])
				}
			}
			for name := range defined {
				if !used[name] {
					t.Errorf("parameter %s is defined but not used", name)
				}
			}
			if err := balanced(prof); err != "" {
				t.Errorf("profile is not balanced: %s", err)
			}
			if len(pol.Masked) > 0 {
				guard := strings.Index(prof, "(deny file-read* file-write* process-exec")
				if guard < 0 || strings.LastIndex(prof, "(allow") > guard {
					t.Errorf("guard denial missing or not after every allow")
				}
			}
			if pol.Network == policy.NetworkIsolated && strings.Contains(prof, "(allow network*)") {
				t.Errorf("network isolated but profile allows network*")
			}
		})
	}
}

// balanced checks parentheses outside comments and string literals
// ("..." and #"...").
func balanced(s string) string {
	depth := 0
	for _, line := range strings.Split(s, "\n") {
		inStr := false
		for i := 0; i < len(line); i++ {
			c := line[i]
			switch {
			case inStr && c == '\\':
				i++
			case c == '"':
				inStr = !inStr
			case inStr:
			case c == ';':
				i = len(line)
			case c == '(':
				depth++
			case c == ')':
				depth--
				if depth < 0 {
					return "unexpected ) in " + line
				}
			}
		}
		if inStr {
			return "unterminated string in " + line
		}
	}
	if depth != 0 {
		return "unclosed ("
	}
	return ""
}

// TestPathsAreParameters: a path that is itself SBPL cannot change the
// profile, because it only ever travels as a -D value.
func TestPathsAreParameters(t *testing.T) {
	evil := `/Users/dev/x") (allow default) ("`
	pol := workspaceWrite()
	pol.WriteRoots = append(pol.WriteRoots, evil)
	pol.Masked = []string{evil + "/secret"}
	plan, err := Compile(pol, Options{Paths: PathsStatic})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plan.Profile, "allow default") {
		t.Fatalf("a path rewrote the profile:\n%s", plan.Profile)
	}
	found := false
	for _, p := range plan.Params {
		found = found || p.Value == evil
	}
	if !found {
		t.Fatalf("path %q is not a parameter: %v", evil, plan.Params)
	}
}

func TestCommand(t *testing.T) {
	plan, err := Compile(workspaceWrite(), Options{Paths: PathsStatic})
	if err != nil {
		t.Fatal(err)
	}
	path, argv := plan.Command("/bin/sh", []string{"sh", "-c", "echo hi"})
	want := []string{SandboxExec, "-p", plan.Profile,
		"-D", "WRITABLE_ROOT_0=/Users/dev/proj",
		"-D", "WRITABLE_ROOT_1=/private/tmp",
		"-D", "WRITABLE_ROOT_2=/private/var/folders/zz/abc123/T",
		"-D", "RO_0=/Users/dev/proj/.git",
	}
	for i, d := range devices {
		want = append(want, "-D", "DEVICE_"+strconv.Itoa(i)+"="+d)
	}
	want = append(want, "--", "/bin/sh", "-c", "echo hi")
	if path != "/usr/bin/sandbox-exec" || !slices.Equal(argv, want) {
		t.Errorf("Command = %q %q\nwant %q %q", path, argv, SandboxExec, want)
	}

	direct, err := Compile(policy.Policy{Mode: profiles.DangerFullAccess, Unrestricted: true}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	path, argv = direct.Command("/bin/sh", []string{"sh", "-c", "echo hi"})
	if path != "/bin/sh" || !slices.Equal(argv, []string{"sh", "-c", "echo hi"}) {
		t.Errorf("direct Command = %q %q, want the command itself", path, argv)
	}
	if e := direct.Enforcement(); e.Platform != "darwin" || e.Launch != "direct" {
		t.Errorf("direct Enforcement = %+v", e)
	}
	if e := plan.Enforcement(); e.Platform != "darwin" || e.Launch != "sandbox-exec" {
		t.Errorf("Enforcement = %+v", e)
	}
}

func TestCanonical(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"tmp", "/tmp", "/private/tmp"},
		{"under tmp", "/tmp/x/../y", "/private/tmp/y"},
		{"var folders", "/var/folders/zz/T/", "/private/var/folders/zz/T"},
		{"etc", "/etc/sudoers", "/private/etc/sudoers"},
		{"already private", "/private/tmp/a", "/private/tmp/a"},
		{"prefix is not a component", "/tmpfoo/a", "/tmpfoo/a"},
		{"variable is not var", "/variable", "/variable"},
		{"users", "/Users/dev/proj", "/Users/dev/proj"},
		{"root", "/", "/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := canonical(tc.in, PathsStatic)
			if err != nil || got != tc.want {
				t.Errorf("canonical(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
	if _, err := canonical("relative/path", PathsStatic); err == nil {
		t.Errorf("canonical of a relative path: no error")
	}
	if _, err := Compile(policy.Policy{Mode: profiles.WorkspaceWrite, ReadRoots: []string{"/"}, WriteRoots: []string{"proj"}}, Options{}); err == nil {
		t.Errorf("Compile with a relative write root: no error")
	}
}

// TestCanonicalResolve exercises symlink resolution on the host's own file
// system (it is what darwin does by default).
func TestCanonicalResolve(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	link := filepath.Join(dir, "link")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	realDir, err := filepath.EvalSymlinks(real)
	if err != nil {
		t.Fatal(err)
	}
	// Off darwin the temporary directory may be under /tmp, which the static
	// mapping then rewrites as a Mac would see it.
	wantDir := staticCanonical(realDir)
	got, err := canonical(filepath.Join(link, "missing", ".git"), PathsResolve)
	if err != nil || got != filepath.Join(wantDir, "missing", ".git") {
		t.Errorf("canonical via symlink = %q, %v; want %q", got, err, filepath.Join(wantDir, "missing", ".git"))
	}
	// A carve-out that is itself a symlink is protected as a name (it must
	// not be replaced) and as the object it points to.
	if err := os.Symlink(real, filepath.Join(realDir, ".git")); err != nil {
		t.Fatal(err)
	}
	names, err := canonicalNames(filepath.Join(link, ".git"), PathsResolve)
	want := []string{filepath.Join(wantDir, ".git"), wantDir}
	if err != nil || !slices.Equal(names, want) {
		t.Errorf("canonicalNames = %q, %v; want %q", names, err, want)
	}
}
