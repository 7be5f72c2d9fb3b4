package profiles

import (
	"reflect"
	"testing"
)

// p builds a normalised profile; the tests use paths that do not exist so
// that symlink resolution cannot change them on any machine.
func p(network bool, read, write []string) Profile {
	if network {
		return New(FullNetwork(), read, write)
	}
	return New(nil, read, write)
}

func paths(ps ...string) []string { return ps }

const r = "/sbx-test/repo"

func TestIntersect(t *testing.T) {
	tests := []struct {
		name               string
		requested, granted Profile
		want               Profile
	}{
		// Refusals first: what a client may not grant.
		{"network not requested", p(false, paths(r), nil), p(true, paths(r), nil), p(false, paths(r), nil)},
		{"network requested, not granted", p(true, nil, nil), p(false, nil, nil), Profile{}},
		{"extra path ignored", p(false, nil, paths(r+"/a")), p(false, nil, paths(r+"/a", "/etc")), p(false, nil, paths(r+"/a"))},
		{"only extra paths", p(false, paths(r), nil), p(false, paths("/etc"), paths("/usr")), Profile{}},
		{"sibling with common prefix is not under", p(false, nil, paths(r)), p(false, nil, paths(r+"2")), Profile{}},
		// Codex: a write granted where only a read was asked is dropped.
		{"write granted where only read requested is dropped", p(false, paths(r), nil), p(false, nil, paths(r+"/a")), Profile{}},
		// Codex: a granted path broader than the requested one gives nothing.
		{"wider grant gives nothing", p(false, nil, paths(r+"/a/b")), p(false, nil, paths(r)), Profile{}},
		{"wider grant beside a valid one", p(false, nil, paths(r+"/child", r+"/out")), Profile{FileSystem: &FileSystem{Write: paths(r, r+"/out/x")}}, p(false, nil, paths(r+"/out/x"))},
		{"granting / gives no path", p(true, paths(r+"/doc"), paths(r+"/out")), p(true, nil, paths("/")), p(true, nil, nil)},
		{"wider read gives nothing", p(false, paths(r+"/doc"), nil), p(false, paths(r), nil), Profile{}},
		{"relative granted path never matches", p(false, nil, paths(r)), Profile{FileSystem: &FileSystem{Write: paths("repo")}}, Profile{}},
		{"empty grant", p(true, paths(r), paths(r+"/a")), Profile{}, Profile{}},
		{"empty request", Profile{}, p(true, paths(r), paths(r)), Profile{}},
		// What a client may grant.
		{"full grant", p(true, paths(r), paths("/sbx-test/out")), p(true, paths(r), paths("/sbx-test/out")), p(true, paths(r), paths("/sbx-test/out"))},
		{"partial grant: network only", p(true, paths(r), paths("/sbx-test/out")), p(true, nil, nil), p(true, nil, nil)},
		{"partial grant: read of the write", p(false, nil, paths(r)), p(false, paths(r), nil), p(false, paths(r), nil)},
		{"nested grant under request", p(false, paths(r), paths(r+"/build")), p(false, paths(r+"/src"), paths(r+"/build/x")), p(false, paths(r+"/src"), paths(r+"/build/x"))},
		{"read under requested write", p(false, nil, paths(r)), p(false, paths(r+"/a"), nil), p(false, paths(r+"/a"), nil)},
		{"root request covers everything", p(false, nil, paths("/")), p(false, paths("/etc"), paths(r)), p(false, paths("/etc"), paths(r))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Intersect(tt.requested, tt.granted)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Intersect(%+v, %+v)\n got %s\nwant %s", tt.requested, tt.granted, show(got), show(tt.want))
			}
			if !tt.requested.Covers(got) || !tt.granted.Covers(got) {
				t.Errorf("result %s is not within both inputs", show(got))
			}
		})
	}
}

func TestMerge(t *testing.T) {
	tests := []struct {
		name string
		in   []Profile
		want Profile
	}{
		{"nothing", nil, Profile{}},
		{"empties", []Profile{{}, {Network: &Network{}}}, Profile{}},
		{"network from any", []Profile{p(false, paths(r), nil), p(true, nil, nil)}, p(true, paths(r), nil)},
		{"nested folded", []Profile{p(false, nil, paths(r+"/a")), p(false, nil, paths(r))}, p(false, nil, paths(r))},
		{"read covered by write folded", []Profile{p(false, paths(r+"/a"), nil), p(false, nil, paths(r))}, p(false, nil, paths(r))},
		{"duplicates", []Profile{p(false, paths(r), nil), p(false, paths(r), nil)}, p(false, paths(r), nil)},
		{"disjoint kept sorted", []Profile{p(false, nil, paths("/sbx-test/z")), p(false, nil, paths("/sbx-test/a"))}, p(false, nil, paths("/sbx-test/a", "/sbx-test/z"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Merge(tt.in...); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %s, want %s", show(got), show(tt.want))
			}
		})
	}
}

func TestCovers(t *testing.T) {
	q := p(false, paths(r+"/doc"), paths(r+"/out"))
	for _, tt := range []struct {
		name string
		in   Profile
		want bool
	}{
		{"network not in q", p(true, nil, nil), false},
		{"write where q only reads", p(false, nil, paths(r+"/doc")), false},
		{"write outside", p(false, nil, paths(r)), false},
		{"read under write", p(false, paths(r+"/out/x"), nil), true},
		{"write under write", p(false, nil, paths(r+"/out/x")), true},
		{"empty", Profile{}, true},
	} {
		if got := q.Covers(tt.in); got != tt.want {
			t.Errorf("%s: Covers = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func show(p Profile) string {
	return "{net:" + map[bool]string{true: "on", false: "off"}[p.NetworkEnabled()] +
		" read:" + join2(p.ReadPaths()) + " write:" + join2(p.WritePaths()) + "}"
}

func join2(s []string) string {
	out := "["
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out + "]"
}
