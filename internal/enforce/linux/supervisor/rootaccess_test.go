//go:build linux

package supervisor

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestCredsPermitted: the owner's bits for the owner, the group's for a
// member, the others' else, and no capability overrides them (root's
// command included).
func TestCredsPermitted(t *testing.T) {
	root := Creds{UID: 0, GIDs: []uint32{0, 27}}
	dir := func(uid, gid, mode uint32) *unix.Stat_t {
		return &unix.Stat_t{Uid: uid, Gid: gid, Mode: unix.S_IFDIR | mode}
	}
	wx := uint32(unix.W_OK | unix.X_OK)
	for _, tt := range []struct {
		name string
		st   *unix.Stat_t
		want bool
	}{
		{"root's own 0755", dir(0, 0, 0o755), true},
		{"uid 1000's 0755", dir(1000, 1000, 0o755), false},
		{"uid 1000's 0777", dir(1000, 1000, 0o777), true},
		{"uid 1000's, group 27 0775", dir(1000, 27, 0o775), true},
		{"uid 1000's, group 27 0755", dir(1000, 27, 0o755), false},
		{"root's own 0555", dir(0, 0, 0o555), false},
		{"owner bits rule even when others may: 0507", dir(0, 0, 0o507), false},
		{"sticky 1777", dir(1000, 1000, 0o1777), true},
	} {
		if got := root.Permitted(tt.st, wx); got != tt.want {
			t.Errorf("%s: permitted %v, want %v", tt.name, got, tt.want)
		}
	}
}
