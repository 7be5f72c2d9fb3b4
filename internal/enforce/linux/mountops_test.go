//go:build linux

package linux

import (
	"slices"
	"testing"
)

// TestMountOps: the steps come in the order the stage must run them (the
// read-only root first, the masks last) and print as the plan's lines.
func TestMountOps(t *testing.T) {
	p := &Plan{StageSpec: StageSpec{WriteRoots: []string{"/w", "/tmp"}, ReadOnlyRoot: true,
		ReadOnlyMounts: []string{"/w/.git"}, Placeholders: []string{"/w/.codex"}, PrivateProc: true,
		MaskedMounts: []string{"/w/.env"}}}
	var got []string
	for _, op := range p.MountOps() {
		got = append(got, op.String())
	}
	want := []string{
		"every mount read-only but the writable roots /w, /tmp, made nosuid",
		"ro-bind /w/.git",
		"proc /proc (the call's PID namespace), ro-bind /proc/sys /proc/sysrq-trigger /proc/irq /proc/bus",
		"ro-bind /w/.codex (empty placeholder directory, removed after the call)",
		"mask /w/.env",
	}
	if !slices.Equal(got, want) {
		t.Errorf("MountOps:\n got %q\nwant %q", got, want)
	}
	if !p.needsMountNS() {
		t.Error("a plan with mount steps needs no mount namespace")
	}
	if empty := (&Plan{}); len(empty.MountOps()) != 0 || empty.needsMountNS() {
		t.Errorf("an empty plan has mount steps %v", empty.MountOps())
	}
	if s := (MountOp{Kind: MountReadOnlyRoot}).String(); s != "every mount read-only but the writable roots (none)" {
		t.Errorf("no writable roots: %q", s)
	}
}

// TestNeedsMountNS: needsMountNS, which reads the fields, says what
// MountOps, which makes the steps, does: for each field alone, and none.
func TestNeedsMountNS(t *testing.T) {
	for _, s := range []StageSpec{
		{},
		{WriteRoots: []string{"/w"}},
		{ReadOnlyRoot: true},
		{ReadOnlyMounts: []string{"/w/.git"}},
		{PrivateProc: true},
		{Placeholders: []string{"/w/.codex"}},
		{MaskedMounts: []string{"/w/.env"}},
	} {
		if got, want := s.needsMountNS(), len(s.MountOps()) > 0; got != want {
			t.Errorf("%+v: needsMountNS %t, MountOps %v", s, got, s.MountOps())
		}
	}
}
