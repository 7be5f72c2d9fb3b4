package landlock

import (
	"slices"
	"strings"
	"testing"
)

// TestTable: the table's own rules. Versions run from 1 without a gap, a
// right is in one row only, every right no rule grants or sbx never
// handles says why, and a downgrade names the feature it is for.
func TestTable(t *testing.T) {
	seen := map[string]int{}
	for i, a := range ABIs {
		if a.Version != i+1 {
			t.Errorf("row %d is ABI %d, want %d", i, a.Version, i+1)
		}
		if a.Linux == "" {
			t.Errorf("ABI %d: no Linux release", a.Version)
		}
		if (a.Lacking != "" || a.Check != "") && a.Feature == "" {
			t.Errorf("ABI %d: a downgrade or doctor line without a feature", a.Version)
		}
		if a.Supervised != "" && a.Lacking == "" {
			t.Errorf("ABI %d: Supervised without Lacking", a.Version)
		}
		// enforce/linux orders a plan's downgrades by the kind of the
		// rights a row adds.
		if a.Lacking != "" && (len(a.Rights) == 0 || slices.ContainsFunc(a.Rights, func(r Right) bool { return r.Kind != a.Rights[0].Kind })) {
			t.Errorf("ABI %d: a downgrade for no rights, or for rights of two kinds", a.Version)
		}
		for _, r := range a.Rights {
			if v, ok := seen[r.Const()]; ok {
				t.Errorf("%s in ABI %d and ABI %d", r.Const(), v, a.Version)
			}
			seen[r.Const()] = a.Version
			if r.Bit == 0 || r.Bit&(r.Bit-1) != 0 {
				t.Errorf("%s: bit %#x is not one bit", r.Const(), r.Bit)
			}
			if (r.Grant == 0 || r.When == Unused) && r.Why == "" {
				t.Errorf("%s: granted by no rule or never handled, and no Why", r.Const())
			}
			if r.Kind != FS && (r.Grant != 0 || r.File) {
				t.Errorf("%s: only file-system rights are granted by rules", r.Const())
			}
		}
	}
	for _, k := range []Kind{FS, Net, Scope} {
		var all uint64
		for _, r := range Rights() {
			if r.Kind != k {
				continue
			}
			if all&r.Bit != 0 {
				t.Errorf("%s: bit %#x used twice", r.Const(), r.Bit)
			}
			all |= r.Bit
		}
	}
}

// TestDerived: the masks, names and minimum kernels follow from the rows.
func TestDerived(t *testing.T) {
	if got, want := Mask(FS, 1, Always), uint64(1<<13-1); got != want {
		t.Errorf("Mask(FS, 1) = %#x, want %#x", got, want)
	}
	if Mask(FS, 0, Always) != 0 || Mask(Net, 3, NoNetNS) != 0 || Mask(Scope, 5, Always, NetworkOff) != 0 {
		t.Error("an ABI has rights of a later one")
	}
	// A kernel newer than the table has what the newest row has.
	if Mask(FS, 99, Always, NetworkOff) != Mask(FS, len(ABIs), Always, NetworkOff) {
		t.Error("Mask of an ABI past the table differs from the newest")
	}
	if got := Names(FS, Mask(FS, 2, Always)&^Mask(FS, 1, Always)); got != "refer" {
		t.Errorf("ABI 2 adds %q, want refer", got)
	}
	// The report's lists: nil for none (its JSON omits them), else Names' order.
	if got := NameList(Scope, 0); got != nil {
		t.Errorf("NameList(Scope, 0) = %#v, want nil", got)
	}
	if got := NameList(Net, Mask(Net, 4, NoNetNS)); !slices.Equal(got, []string{"bind_tcp", "connect_tcp"}) {
		t.Errorf("NameList(Net, ABI 4) = %q, want [bind_tcp connect_tcp]", got)
	}
	for _, tt := range []struct{ feature, want string }{
		{FeatureLandlock, "Linux 5.13, Landlock ABI 1"},
		{FeatureRefer, "Linux 5.19, Landlock ABI 2"},
		{FeatureTruncate, "Linux 6.2, Landlock ABI 3"},
		{FeatureScope, "Linux 6.12, Landlock ABI 6"},
		{FeatureResolveUnix, "Linux 7.0, Landlock ABI 9"},
		{"netns", ""},
		{"", ""},
	} {
		if got := Minimum(tt.feature); got != tt.want {
			t.Errorf("Minimum(%q) = %q, want %q", tt.feature, got, tt.want)
		}
	}
	if Granted(ReadRoot, Always)&Granted(WriteRoot, Always) != 0 {
		t.Error("a right is both a read and a write right")
	}
	if g := Granted(WriteRoot, NetworkOff); strings.Contains(Names(FS, Granted(WriteRoot, Always)), Names(FS, g)) || g == 0 {
		t.Errorf("Granted(WriteRoot, NetworkOff) = %s: not apart from the rights every ruleset handles", Names(FS, g))
	}
	var features []string
	for _, a := range ABIs {
		if a.Feature != "" {
			features = append(features, a.Feature)
		}
	}
	if len(slices.Compact(slices.Sorted(slices.Values(features)))) != len(features) {
		t.Errorf("a feature stands for two ABIs: %v", features)
	}
}
