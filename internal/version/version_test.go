package version

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"testing"
)

func TestResolve(t *testing.T) {
	vcs := func(rev, time, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: time}, {Key: "vcs.modified", Value: modified}}
	}
	tests := []struct {
		name                  string
		version, commit, date string
		bi                    *debug.BuildInfo
		want                  Info
	}{
		{name: "nothing recorded", want: Info{Version: Devel, GoVersion: runtime.Version(), Source: SourceNone}},
		{
			name: "go build in a clone before Go 1.24, no vcs",
			bi:   &debug.BuildInfo{GoVersion: "go1.23.0", Main: debug.Module{Path: "sbx", Version: "(devel)"}},
			want: Info{Version: Devel, GoVersion: "go1.23.0", Source: SourceNone},
		},
		{
			name: "go build in a dirty clone",
			bi: &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "sbx", Version: "v0.0.0-20261204101010-0123456789ab+dirty"},
				Settings: vcs("0123456789abcdef0123456789abcdef01234567", "2026-12-04T10:10:10Z", "true")},
			want: Info{Version: "0.0.0-20261204101010-0123456789ab+dirty", Commit: "0123456789abcdef0123456789abcdef01234567", Modified: true,
				GoVersion: "go1.26.8", Date: "2026-12-04T10:10:10Z", Source: SourceBuildInfo},
		},
		{
			name: "go install module@version: no vcs settings",
			bi:   &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "example.com/sbx", Version: "v0.1.0"}},
			want: Info{Version: "0.1.0", GoVersion: "go1.26.8", Source: SourceBuildInfo},
		},
		{
			name:    "release: ldflags win over the build information",
			version: "v0.2.0", commit: "fedcba9876543210fedcba9876543210fedcba98", date: "2026-12-05T00:00:00Z",
			bi: &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "sbx", Version: "(devel)"},
				Settings: vcs("0123456789abcdef0123456789abcdef01234567", "2026-12-04T10:10:10Z", "false")},
			want: Info{Version: "0.2.0", Commit: "fedcba9876543210fedcba9876543210fedcba98", GoVersion: "go1.26.8", Date: "2026-12-05T00:00:00Z", Source: SourceLdflags},
		},
		{
			name:    "release that sets only the version keeps the recorded commit",
			version: "0.2.0",
			bi:      &debug.BuildInfo{GoVersion: "go1.26.8", Settings: vcs("0123456789abcdef0123456789abcdef01234567", "2026-12-04T10:10:10Z", "false")},
			want:    Info{Version: "0.2.0", Commit: "0123456789abcdef0123456789abcdef01234567", GoVersion: "go1.26.8", Date: "2026-12-04T10:10:10Z", Source: SourceLdflags},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := resolve(tt.version, tt.commit, tt.date, tt.bi); got != tt.want {
				t.Errorf("resolve:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestString(t *testing.T) {
	tests := []struct {
		name string
		info Info
		want string
	}{
		{"devel", Info{Version: Devel, GoVersion: "go1.26.8"}, "sbx devel (go1.26.8)"},
		{"release", Info{Version: "0.1.0", Commit: "0123456789abcdef0123", Date: "2026-12-04T00:00:00Z", GoVersion: "go1.26.8"},
			"sbx 0.1.0 (commit 0123456789ab, 2026-12-04T00:00:00Z, go1.26.8)"},
		{"modified", Info{Version: "0.1.0", Commit: "0123456789abcdef0123", Modified: true, GoVersion: "go1.26.8"},
			"sbx 0.1.0 (commit 0123456789ab-modified, go1.26.8)"},
	}
	for _, tt := range tests {
		if got := tt.info.String(); got != tt.want {
			t.Errorf("%s: String() = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestLdflags builds a program with the -X flags a release build passes, so
// a renamed variable or package (the module path will change) fails here
// instead of shipping a release that says "devel".
func TestLdflags(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program (-short)")
	}
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	pkg := reflect.TypeOf(Info{}).PkgPath()
	out := filepath.Join(t.TempDir(), "printversion")
	ldflags := "-X " + pkg + ".Version=v9.8.7 -X " + pkg + ".Commit=abcdef0123456789abcdef0123456789abcdef01 -X " + pkg + ".Date=2026-12-04T00:00:00Z"
	build := exec.Command(goBin, "build", "-trimpath", "-ldflags", ldflags, "-o", out, "./testdata/printversion")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	b, err := exec.Command(out).Output()
	if err != nil {
		t.Fatalf("printversion: %v", err)
	}
	var got Info
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("printversion output %q: %v", b, err)
	}
	got.Modified = false // the state of this checkout, whatever it is
	want := Info{Version: "9.8.7", Commit: "abcdef0123456789abcdef0123456789abcdef01", Date: "2026-12-04T00:00:00Z", GoVersion: runtime.Version(), Source: SourceLdflags}
	if got != want {
		t.Errorf("built with %s:\n got %+v\nwant %+v", ldflags, got, want)
	}
}
