//go:build linux

package linux

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/policy"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/report"
)

// maskFiles makes, under a fresh directory, files for the mask-links cases:
// "one" (a single name), "two" with a second name "ws/two-link" outside
// "out", and "dir" holding "inner" (linked from ws/inner-link) and "pair"
// (both names inside dir).
func maskFiles(t *testing.T) (base string) {
	t.Helper()
	base = t.TempDir()
	for _, d := range []string{"ws", "out", "out/dir"} {
		if err := os.Mkdir(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"out/one", "out/two", "out/dir/inner", "out/dir/pair"} {
		if err := os.WriteFile(filepath.Join(base, f), []byte("secret\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range [][2]string{{"out/two", "ws/two-link"}, {"out/dir/inner", "ws/inner-link"}, {"out/dir/pair", "out/dir/pair2"}} {
		if err := os.Link(filepath.Join(base, l[0]), filepath.Join(base, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	return base
}

func maskPolicy(t *testing.T, ws string, masked ...string) policy.Policy {
	t.Helper()
	pol, err := policy.Build(policy.Request{Mode: profiles.WorkspaceWrite, Cwd: ws, ExcludeTmp: true, ExcludeTmpdir: true})
	if err != nil {
		t.Fatal(err)
	}
	pol.Masked = masked
	return pol
}

func maskLinkDowngrades(p *Plan) []report.Downgrade {
	var out []report.Downgrade
	for _, d := range p.Downgrades {
		if d.Feature == "mask-links" {
			out = append(out, d)
		}
	}
	return out
}

// TestCompileMaskLinks: a masked regular file with other hard links, or a
// masked directory holding files linked from outside it, is a mask-links
// downgrade naming the mask (a mount covers the path, not the file), and
// its inode goes to the supervisor; a file whose every name is masked is
// none.
func TestCompileMaskLinks(t *testing.T) {
	base := maskFiles(t)
	ws, out := filepath.Join(base, "ws"), filepath.Join(base, "out")
	supervised := System{LandlockABI: 7, Privileged: true, UserNotif: true}
	tests := []struct {
		name   string
		masked []string
		sys    System
		want   []string // substrings, one downgrade each
		links  []string // MaskedLinks paths
	}{
		{"single link", []string{out + "/one"}, supervised, nil, nil},
		{"missing mask", []string{out + "/none"}, supervised, nil, nil},
		{"second link", []string{out + "/two"}, supervised,
			[]string{out + "/two has 1 other hard link(s), which the mask does not cover: the seccomp supervisor refuses opens"}, []string{out + "/two"}},
		{"every name masked", []string{out + "/two", ws + "/two-link"}, supervised, nil, nil},
		{"unsupervised", []string{out + "/two"}, System{LandlockABI: 7, Privileged: true, UserNotifReason: "no"},
			[]string{out + "/two has 1 other hard link(s), which the mask does not cover: reading them through their other names is not prevented"}, []string{out + "/two"}},
		{"no mount namespace", []string{out + "/two"}, System{LandlockABI: 7, UserNotif: true, UserNSReason: "off"},
			[]string{out + "/two has 1 other hard link(s), which the mask does not cover: the masks are not applied either (see mask)"}, nil},
		{"directory", []string{out + "/dir"}, supervised,
			[]string{"1 file(s) under " + out + "/dir have hard links outside it, which the mask does not cover (" + out + "/dir/inner among them)"}, []string{out + "/dir/inner"}},
		{"file inside a masked directory counts once", []string{out + "/dir", out + "/dir/pair"}, supervised,
			[]string{"1 file(s) under " + out + "/dir"}, []string{out + "/dir/inner"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Compile(maskPolicy(t, ws, tt.masked...), tt.sys, Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := maskLinkDowngrades(p)
			if len(got) != len(tt.want) {
				t.Fatalf("mask-links downgrades %+v, want %d: %q", got, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i].Reason, w) {
					t.Errorf("downgrade %q, want it to contain %q", got[i].Reason, w)
				}
			}
			var links []string
			for _, l := range p.MaskedLinks {
				links = append(links, l.Path)
			}
			if !slices.Equal(links, tt.links) {
				t.Errorf("MaskedLinks %q, want %q", links, tt.links)
			}
		})
	}
}

// TestMaskLinksWithoutSupervisor: when the supervisor is turned off, the
// downgrade no longer counts on it.
func TestMaskLinksWithoutSupervisor(t *testing.T) {
	base := maskFiles(t)
	p, err := Compile(maskPolicy(t, filepath.Join(base, "ws"), filepath.Join(base, "out", "two")), System{LandlockABI: 7, Privileged: true, UserNotif: true}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p.withoutSupervisor()
	got := maskLinkDowngrades(p)
	if len(got) != 1 || !strings.HasSuffix(got[0].Reason, "reading them through their other names is not prevented") {
		t.Errorf("without the supervisor: %+v", got)
	}
}

// TestMaskLinksBounded: the walk of masked directories stops after the
// limit and says so; a directory past the limit is not read at all.
func TestMaskLinksBounded(t *testing.T) {
	base := t.TempDir()
	big, other := filepath.Join(base, "big"), filepath.Join(base, "other")
	for _, d := range []string{big, other} {
		os.Mkdir(d, 0o755)
	}
	for i := range 10 {
		os.WriteFile(filepath.Join(big, fmt.Sprint(i)), nil, 0o644)
	}
	scan := maskLinks([]string{big, other}, 5)
	if g := scan.gaps[big]; !strings.Contains(g, "more than 5 entries") {
		t.Errorf("gap of %s: %q", big, g)
	}
	if g := scan.gaps[other]; !strings.Contains(g, "not read") {
		t.Errorf("gap of %s: %q", other, g)
	}
	p, err := Compile(maskPolicy(t, base, big), System{LandlockABI: 7, Privileged: true, UserNotif: true}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d := maskLinkDowngrades(p); len(d) != 0 {
		t.Errorf("a small directory without links: %+v", d)
	}
}

// TestMaskedLinkLookup: the supervisor finds a masked file by any of its
// names, and nothing else.
func TestMaskedLinkLookup(t *testing.T) {
	base := maskFiles(t)
	out := filepath.Join(base, "out")
	p, err := Compile(maskPolicy(t, filepath.Join(base, "ws"), out+"/two"), System{LandlockABI: 7, Privileged: true, UserNotif: true}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := p.maskedLink(filepath.Join(base, "ws", "two-link")); !ok || m.Mask != out+"/two" {
		t.Errorf("two-link: %+v %t, want the masked %s", m, ok, out+"/two")
	}
	if _, ok := p.maskedLink(out + "/one"); ok {
		t.Errorf("one: found, but it is no name of a masked file")
	}
}
