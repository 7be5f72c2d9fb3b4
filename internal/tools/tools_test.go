package tools

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestTable walks every row: a name, a source, and directories that place
// somewhere under a HOME and never at HOME.
func TestTable(t *testing.T) {
	seen := map[string]bool{}
	for _, tool := range Table {
		if tool.Name == "" || seen[tool.Name] {
			t.Errorf("row %q: empty or repeated name", tool.Name)
		}
		seen[tool.Name] = true
		if !strings.HasPrefix(tool.Source, "https://") {
			t.Errorf("%s: source %q is not a URL", tool.Name, tool.Source)
		}
		for _, d := range append(append([]Dir{}, tool.Dirs...), tool.Never...) {
			if d.Default != "" && (!strings.HasPrefix(d.Default, "~/") || filepath.Clean(d.Default) != d.Default || d.Default == "~/") {
				t.Errorf("%s: default %q is not a clean path under ~/", tool.Name, d.Default)
			}
			if d.Default == "" && len(d.Locations) == 0 {
				t.Errorf("%s: a directory with neither default nor variable", tool.Name)
			}
			for _, l := range d.Locations {
				if l.Var == "" || filepath.IsAbs(l.Sub) || strings.Contains(l.Sub, "..") {
					t.Errorf("%s: location %+v", tool.Name, l)
				}
			}
		}
		for _, d := range tool.Dirs {
			if d.Why == "" {
				t.Errorf("%s: directory %q says not what it holds", tool.Name, d.Default)
			}
		}
	}
	for _, want := range []string{"git", "go", "npm", "pnpm", "yarn", "pip", "uv", "python", "cargo", "make", "node", "java", "maven", "gradle"} {
		if !seen[want] {
			t.Errorf("no row for %s", want)
		}
	}
}

func TestResolve(t *testing.T) {
	home := "/home/u"
	tests := []struct {
		name  string
		env   []string
		path  string
		want  string // root, "" for none
		never string // never entry, "" for none
	}{
		{"go build cache hash dir", nil, home + "/.cache/go-build/5e/5e01-d", home + "/.cache/go-build", ""},
		{"go build cache itself", nil, home + "/.cache/go-build", home + "/.cache/go-build", ""},
		{"GOCACHE relocates", []string{"GOCACHE=/var/cache/gb"}, "/var/cache/gb/8d/x", "/var/cache/gb", ""},
		{"GOCACHE relocates: the default is not a root", []string{"GOCACHE=/var/cache/gb"}, home + "/.cache/go-build/5e", "", ""},
		{"XDG_CACHE_HOME relocates", []string{"XDG_CACHE_HOME=/xc"}, "/xc/go-build/f7", "/xc/go-build", ""},
		{"a relative GOCACHE is ignored", []string{"GOCACHE=rel"}, home + "/.cache/go-build/5e", home + "/.cache/go-build", ""},
		{"telemetry dated file", nil, home + "/.config/go/telemetry/local/go@go1.26.8-linux-amd64-2026-12-07.v1.count", home + "/.config/go/telemetry", ""},
		{"go env is never granted", nil, home + "/.config/go/env", "", home + "/.config/go/env"},
		{"GOPATH list: first entry", []string{"GOPATH=/gp:/other"}, "/gp/pkg/mod/cache/download", "/gp/pkg/mod", ""},
		{"npm cacache index", nil, home + "/.npm/_cacache/index-v5/25/5e", home + "/.npm", ""},
		{"npm_config_cache relocates", []string{"npm_config_cache=/c/npm"}, "/c/npm/_logs/x.log", "/c/npm", ""},
		{"pip", nil, home + "/.cache/pip/http-v2/a/b", home + "/.cache/pip", ""},
		{"PIP_CACHE_DIR", []string{"PIP_CACHE_DIR=/pc"}, "/pc/wheels", "/pc", ""},
		{"cargo package cache is not under a root", nil, home + "/.cargo/.package-cache", "", ""},
		{"cargo registry", nil, home + "/.cargo/registry/index/x", home + "/.cargo/registry", ""},
		{"CARGO_HOME relocates", []string{"CARGO_HOME=/ch"}, "/ch/registry/cache", "/ch/registry", ""},
		{"cargo bin is never granted", nil, home + "/.cargo/bin/foo", "", home + "/.cargo/bin"},
		{"a parent of cargo bin is never granted", nil, home + "/.cargo", "", home + "/.cargo/bin"},
		{"a PATH directory is never granted", []string{"PATH=/opt/tools/bin:/usr/bin"}, "/opt/tools/bin/x", "", "/opt/tools/bin"},
		{"a name directly in a PATH directory is never granted", []string{"PATH=" + home + ":/usr/bin"}, home + "/tool", "", home},
		{"a directory below a PATH directory is", []string{"PATH=" + home + ":/usr/bin"}, home + "/proj/out", "", ""},
		{"a parent of a PATH directory is not", []string{"PATH=/opt/tools/bin"}, "/opt", "", "/opt/tools/bin"},
		{"shell startup file", nil, home + "/.bashrc", "", home + "/.bashrc"},
		{"maven", nil, home + "/.m2/repository/org/x", home + "/.m2/repository", ""},
		{"gradle", []string{"GRADLE_USER_HOME=/g"}, "/g/caches/8.5", "/g/caches", ""},
		{"a variable set to HOME makes no root", []string{"GOCACHE=" + home}, home + "/x", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Resolve(append([]string{"HOME=" + home}, tt.env...))
			got, ok := r.Root(tt.path)
			if (ok && got.Path != tt.want) || (!ok && tt.want != "") {
				t.Errorf("Root(%s) = %q %v, want %q", tt.path, got.Path, ok, tt.want)
			}
			n, ok := r.Never(tt.path)
			if (ok && n.Path != tt.never) || (!ok && tt.never != "") {
				t.Errorf("Never(%s) = %q %v, want %q", tt.path, n.Path, ok, tt.never)
			}
		})
	}
}

func TestResolveWithoutHome(t *testing.T) {
	r := Resolve([]string{"GOCACHE=/gc"})
	if len(r.Dirs) != 1 || r.Dirs[0].Path != "/gc" {
		t.Errorf("without HOME only relocated roots place: %+v", r.Dirs)
	}
}
