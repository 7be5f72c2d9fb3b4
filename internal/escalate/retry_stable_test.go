package escalate

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// TestSmallestRetryStable: denials of the shapes real tools leave (issue
// 29) get one stable grant a person would give: a tool's root, never a
// hash-named, dated or temporary entry, a whole home directory or a place
// whose contents run outside the sandbox.
func TestSmallestRetryStable(t *testing.T) {
	base := t.TempDir()
	home, ws := filepath.Join(base, "home"), filepath.Join(base, "ws")
	mk := func(dirs ...string) {
		for _, d := range dirs {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	mk(ws, home+"/.cache/go-build/5e", home+"/.npm/_cacache/index-v5/25/5e", home+"/.cargo/bin", home+"/.cargo/registry",
		home+"/.config/go/telemetry/local", home+"/proj/out/2026-12-07", home+"/.local/bin", base+"/gc/8d",
		base+"/var/tmp/tmp_jgxqnzo", base+"/var/tmp/tmpab3k9zqx")
	mk(base + "/home2")
	os.WriteFile(home+"/.bashrc", nil, 0o644)
	os.WriteFile(home+"/.cargo/.package-cache", nil, 0o644)
	pol := policy.Policy{Mode: profiles.WorkspaceWrite, ReadRoots: []string{"/"}, WriteRoots: []string{ws}}
	env := []string{"HOME=" + home, "PATH=" + home + "/.local/bin:/usr/bin"}
	fs := func(op, path string) report.Denial { return report.Denial{Operation: op, Path: path, Reason: "r"} }
	tests := []struct {
		name       string
		env        []string
		denials    []report.Denial
		want       []string // the grant's write paths
		unresolved int
	}{
		{"go build cache hash dirs fold to the cache root", nil, []report.Denial{
			fs("create", home+"/.cache/go-build/5e/5e01-d"), fs("create", home+"/.cache/go-build/8d/8d02-a"), fs("write", home+"/.cache/go-build/5e/5e03-d")},
			[]string{home + "/.cache/go-build"}, 0},
		{"no ~/.cache: go's mkdir of it asks for the missing go build cache, not the home directory", []string{"HOME=" + base + "/home2"}, []report.Denial{fs("create", base+"/home2/.cache")},
			[]string{base + "/home2/.cache/go-build"}, 0},
		{"no ~/.cache, pip: pip's cache", []string{"HOME=" + base + "/home2"}, []report.Denial{fs("create", base+"/home2/.cache")},
			[]string{base + "/home2/.cache/pip"}, 0},
		{"no ~/.cache, python -m pip: pip's cache", []string{"HOME=" + base + "/home2"}, []report.Denial{fs("create", base+"/home2/.cache")},
			[]string{base + "/home2/.cache/pip"}, 0},
		{"no ~/.cache, an unknown program: not offered", []string{"HOME=" + base + "/home2"}, []report.Denial{fs("create", base+"/home2/.cache")},
			nil, 1},
		{"no ~/.cache, go build in a shell's script: go's build cache", []string{"HOME=" + base + "/home2"}, []report.Denial{fs("create", base+"/home2/.cache")},
			[]string{base + "/home2/.cache/go-build"}, 0},
		{"no ~/.cache, a shell's script of two tools: not offered", []string{"HOME=" + base + "/home2"}, []report.Denial{fs("create", base+"/home2/.cache")},
			nil, 1},
		{"GOCACHE relocates the root", []string{"GOCACHE=" + base + "/gc"}, []report.Denial{fs("create", base+"/gc/8d/x-d")},
			[]string{base + "/gc"}, 0},
		{"making GOCACHE itself asks for it", []string{"GOCACHE=" + base + "/nogc"}, []report.Denial{fs("create", base+"/nogc")},
			[]string{base + "/nogc"}, 0},
		{"a missing GOCACHE is its own grant", []string{"GOCACHE=" + base + "/nogc"}, []report.Denial{fs("create", base+"/nogc/00/x")},
			[]string{base + "/nogc"}, 0},
		{"telemetry dated files: the telemetry root, not ~/.config/go", nil, []report.Denial{
			fs("create", home+"/.config/go/telemetry/local/go@go1.26.8-linux-amd64-2026-12-07.v1.count"),
			fs("create", home+"/.config/go/telemetry/local/compile@go1.26.8-linux-amd64-2026-12-07.v1.count")},
			[]string{home + "/.config/go/telemetry"}, 0},
		{"npm _cacache index and tmp and logs: the cache root", nil, []report.Denial{
			fs("create", home+"/.npm/_cacache/index-v5/25/5e/abc"), fs("create", home+"/.npm/_cacache/tmp/3f2a1b"), fs("create", home+"/.npm/_logs/2026-12-07T04_00_00_000Z-debug-0.log"),
			fs("create", home+"/.npm/_cacache/content-v2/sha512/7f/c3/x")},
			[]string{home + "/.npm"}, 0},
		{"npm_config_cache relocates", []string{"npm_config_cache=" + base + "/npmc"}, []report.Denial{fs("create", base+"/npmc/_cacache/tmp/x")},
			[]string{base + "/npmc"}, 0},
		{"cargo .package-cache: the file, never ~/.cargo (its bin/ is on PATH)", nil, []report.Denial{fs("write", home+"/.cargo/.package-cache")},
			[]string{home + "/.cargo/.package-cache"}, 0},
		{"creating in ~/.cargo is not offered", nil, []report.Denial{fs("create", home+"/.cargo/.package-cache-new")},
			nil, 1},
		{"cargo registry", nil, []report.Denial{fs("create", home+"/.cargo/registry/index/x")},
			[]string{home + "/.cargo/registry"}, 0},
		{"CARGO_HOME relocates, missing", []string{"CARGO_HOME=" + base + "/ch"}, []report.Denial{fs("create", base+"/ch/registry/cache/x")},
			[]string{base + "/ch/registry"}, 0},
		{"a directory on PATH is never offered", nil, []report.Denial{fs("create", home+"/.local/bin/tool")}, nil, 1},
		{"a shell startup file is never offered", nil, []report.Denial{fs("write", home+"/.bashrc")}, nil, 1},
		{"the home directory is never offered", nil, []report.Denial{fs("create", home+"/.newrc")}, nil, 1},
		{"a temporary directory climbs to tmp, never past it", nil, []report.Denial{fs("create", base+"/var/tmp/tmp_jgxqnzo/note")},
			[]string{base + "/var/tmp"}, 0},
		{"a mkdtemp name without a separator is its own grant", nil, []report.Denial{fs("create", base+"/var/tmp/tmpab3k9zqx/note")},
			[]string{base + "/var/tmp/tmpab3k9zqx"}, 0},
		{"a dated directory climbs to its parent", nil, []report.Denial{fs("create", home+"/proj/out/2026-12-07/x")},
			[]string{home + "/proj/out"}, 0},
		{"a grant beside a refusal", nil, []report.Denial{fs("create", home+"/.local/bin/tool"), fs("create", home+"/.cache/go-build/5e/y")},
			[]string{home + "/.cache/go-build"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			command := []string{"go", "build"}
			switch {
			case strings.Contains(tt.name, "python -m pip"):
				command = []string{"venv/bin/python", "-m", "pip", "install", "x"}
			case strings.Contains(tt.name, "pip"):
				command = []string{"/usr/bin/pip", "install"}
			case strings.Contains(tt.name, "unknown"):
				command = []string{"sh", "-c", "./build.sh && ./run"}
			case strings.Contains(tt.name, "go build in a shell"):
				command = []string{"bash", "-lc", "cd sub && GOFLAGS=-v go build ./... && ./hello"}
			case strings.Contains(tt.name, "two tools"):
				command = []string{"sh", "-c", "pip install -r req.txt; go build"}
			}
			r, _ := SmallestRetry(RetryInput{Policy: pol, SandboxPermissions: profiles.UseDefault, Denials: tt.denials, Env: append(slices.Clone(env), tt.env...), Command: command})
			var got []string
			if r.Grant != nil {
				got = r.Grant.WritePaths()
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("grant = %q, want %q (retry %+v)", got, tt.want, r)
			}
			if len(r.Unresolved) != tt.unresolved {
				t.Errorf("unresolved = %+v, want %d", r.Unresolved, tt.unresolved)
			}
		})
	}
}

func TestUnstableName(t *testing.T) {
	for name, want := range map[string]bool{
		"5e": true, "8d": true, "5e01abcd-d": true, "0123456789abcdef": true, "2026-12-07": true, "go@go1.26.8-linux-amd64-2026-12-07.v1.count": true,
		"tmp": false, "temp": false, ".tmp": false, "TMP": false, "tmp.XyZ12": true, "x.TEMP": true, ".tmp-123": true, "x.tmp": true, "tmp_abc": true,
		"20261207": true, "log-20261207.txt": true, "sbx-it-1520660032": false,
		"go-build": false, "registry": false, "_cacache": false, "out": false, "src": false, "index-v5": false, "bin": false,
	} {
		if got := unstableName(name); got != want {
			t.Errorf("unstableName(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestCommandTools: the tools a call runs, as onTheWay matches them to the
// table: the program, without its version, and a shell script's programs.
func TestCommandTools(t *testing.T) {
	for _, tt := range []struct {
		argv []string
		want []string
	}{
		{nil, nil},
		{[]string{"/usr/bin/go", "build"}, []string{"go"}},
		{[]string{"pip3", "install"}, []string{"pip"}},
		{[]string{"/usr/bin/python3.11", "script.py"}, []string{"python"}},
		{[]string{"venv/bin/python", "-m", "pip", "install", "x"}, []string{"python", "pip"}},
		{[]string{"python3", "-m"}, []string{"python"}},
		{[]string{"python3", "-I", "-m", "pip"}, []string{"python", "pip"}},
		{[]string{"python3", "script.py", "-m", "pip"}, []string{"python"}},
		{[]string{"bash", "-lc", "go build ./... && ./hello"}, []string{"bash", "go", "hello"}},
		{[]string{"sh", "-c", "cd sub; CGO_ENABLED=0 env -i go test\nnpm ci | tee log"}, []string{"sh", "cd", "go", "npm", "tee"}},
		{[]string{"sh", "-e", "-c", "if make; then (cargo build); fi"}, []string{"sh", "make", "cargo", "fi"}},
		{[]string{"sh", "script.sh", "-c", "go build"}, []string{"sh"}},
		{[]string{"go", "-c", "npm ci"}, []string{"go"}},
	} {
		if got := commandTools(tt.argv); !slices.Equal(got, tt.want) {
			t.Errorf("commandTools(%q) = %q, want %q", tt.argv, got, tt.want)
		}
	}
}
