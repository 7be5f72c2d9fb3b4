package report

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/landlock"
)

func TestParseFeature(t *testing.T) {
	for _, f := range Features {
		if got, ok := ParseFeature(string(f)); !ok || got != f {
			t.Errorf("ParseFeature(%q) = %q, %v", f, got, ok)
		}
	}
	// Not requirable: a backend's absence, a misspelling, another case.
	for _, s := range []string{"", "sandbox", "pty", "Landlock", "landlock ", "netns2"} {
		if _, ok := ParseFeature(s); ok {
			t.Errorf("ParseFeature(%q) accepted", s)
		}
	}
	if names := FeatureNames(); len(names) != len(Features) || names[0] != string(Features[0]) {
		t.Errorf("FeatureNames() = %v", names)
	}
	if len(slices.Compact(slices.Sorted(slices.Values(Features)))) != len(Features) {
		t.Errorf("Features lists a name twice: %v", Features)
	}
}

func TestUnsupportedFeatureError(t *testing.T) {
	for _, tt := range []struct {
		feature Feature
		want    string
	}{
		{FeatureLandlockRefer, "required feature landlock-refer is not available: ABI 1 (needs Linux 5.19, Landlock ABI 2)"},
		// namespaces hang on the configuration, not on a version
		{FeatureNetNS, "required feature netns is not available: ABI 1"},
	} {
		err := error(&UnsupportedFeatureError{Feature: tt.feature, Reason: "ABI 1"})
		if err.Error() != tt.want {
			t.Errorf("%s: %q, want %q", tt.feature, err, tt.want)
		}
		if !errors.Is(err, ErrNotSupported) {
			t.Errorf("%s: not ErrNotSupported", tt.feature)
		}
	}
	for f := range minimumLinux {
		if !slices.Contains(Features, f) || !strings.Contains(f.MinimumLinux(), "Landlock ABI") {
			t.Errorf("minimumLinux[%s] = %q: only Landlock features have one", f, f.MinimumLinux())
		}
	}
}

func TestCheckRequired(t *testing.T) {
	down := []Downgrade{{Feature: FeaturePIDNS, Reason: "no pid namespace"}}
	if err := CheckRequired([]Feature{FeatureNetNS}, down); err != nil {
		t.Errorf("netns not downgraded, got %v", err)
	}
	var u *UnsupportedFeatureError
	if err := CheckRequired([]Feature{FeatureNetNS, FeaturePIDNS}, down); !errors.As(err, &u) || u.Feature != FeaturePIDNS || u.Reason != "no pid namespace" {
		t.Errorf("pidns downgraded, got %v", err)
	}
}

// TestLandlockFeatures: every feature a Landlock ABI stands for
// (internal/landlock's table) is a Feature declared here, and the requirable
// ones keep the minimum kernels report wrote out by hand before the table
// (issue 32). A new ABI row with a new feature fails here until feature.go
// declares its constant and this list has it.
func TestLandlockFeatures(t *testing.T) {
	declared := []Feature{FeatureLandlock, FeatureLandlockRefer, FeatureLandlockTruncate, FeatureLandlockNet,
		FeatureLandlockIoctlDev, FeatureLandlockScope, FeatureLandlockAudit, FeatureLandlockResolveUnix}
	for _, a := range landlock.ABIs {
		if a.Feature != "" && !slices.Contains(declared, Feature(a.Feature)) {
			t.Errorf("ABI %d stands for %q, which feature.go does not declare", a.Version, a.Feature)
		}
	}
	want := map[Feature]string{
		FeatureLandlock:            "Linux 5.13, Landlock ABI 1",
		FeatureLandlockRefer:       "Linux 5.19, Landlock ABI 2",
		FeatureLandlockTruncate:    "Linux 6.2, Landlock ABI 3",
		FeatureLandlockScope:       "Linux 6.12, Landlock ABI 6",
		FeatureLandlockResolveUnix: "Linux 7.0, Landlock ABI 9",
	}
	if len(minimumLinux) != len(want) {
		t.Errorf("minimumLinux = %v, want %v", minimumLinux, want)
	}
	for f, w := range want {
		if got := f.MinimumLinux(); got != w {
			t.Errorf("%s.MinimumLinux() = %q, want %q", f, got, w)
		}
	}
	// Only what a call can require has one (doctor's lines do not).
	for _, f := range []Feature{FeatureLandlockNet, FeatureLandlockAudit, FeatureNetNS, FeaturePrivileged} {
		if got := f.MinimumLinux(); got != "" {
			t.Errorf("%s.MinimumLinux() = %q, want none", f, got)
		}
	}
}
