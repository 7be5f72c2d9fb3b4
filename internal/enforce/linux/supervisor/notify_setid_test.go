//go:build linux && amd64

package supervisor

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/enforce/linux/seccomp"
)

// TestSetidModeCountsLikeTheFilter: the supervisor finds the mode where
// the filter tested it, for every mode call in its *at form.
func TestSetidModeCountsLikeTheFilter(t *testing.T) {
	tests := []struct {
		name  string
		nr    uint32
		args  [6]uint64
		mode  uint32
		chmod bool
		ok    bool
	}{
		{"chmod", unix.SYS_CHMOD, [6]uint64{0x1000, 0o4755}, 0o4755, true, true},
		{"creat", unix.SYS_CREAT, [6]uint64{0x1000, 0o2644}, 0o2644, false, true},
		{"open O_CREAT", unix.SYS_OPEN, [6]uint64{0x1000, unix.O_CREAT | unix.O_WRONLY, 0o4644}, 0o4644, false, true},
		{"open O_RDONLY", unix.SYS_OPEN, [6]uint64{0x1000, unix.O_RDONLY, 0o4644}, 0, false, false},
		{"mknod", unix.SYS_MKNOD, [6]uint64{0x1000, unix.S_IFREG | 0o4644}, unix.S_IFREG | 0o4644, false, true},
		{"fchmod", unix.SYS_FCHMOD, [6]uint64{3, 0o2775}, 0o2775, true, true},
		{"fchmodat2", unix.SYS_FCHMODAT2, [6]uint64{3, 0x1000, 0o2775, 0}, 0o2775, true, true},
		{"openat O_TMPFILE", unix.SYS_OPENAT, [6]uint64{3, 0x1000, unix.O_TMPFILE | unix.O_RDWR, 0o2600}, 0o2600, false, true},
		{"mkdirat", unix.SYS_MKDIRAT, [6]uint64{3, 0x1000, 0o2775}, 0, false, false},
	}
	for _, tt := range tests {
		c, ok := atForm(tt.nr, tt.args)
		if !ok {
			t.Fatalf("%s: atForm refused it", tt.name)
		}
		mode, chmod, ok := seccomp.SetidMode(c.nr, c.u32)
		if mode != tt.mode || chmod != tt.chmod || ok != tt.ok {
			t.Errorf("%s: SetidMode = %#o, %t, %t; want %#o, %t, %t", tt.name, mode, chmod, ok, tt.mode, tt.chmod, tt.ok)
		}
	}
}
