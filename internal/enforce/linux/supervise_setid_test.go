//go:build linux && amd64

package linux

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	supervise "github.com/sbx-sandbox/sbx/internal/enforce/linux/supervisor"
)

// atFDCWDArg is AT_FDCWD (-100) as a syscall argument.
const atFDCWDArg = uint64(^uint32(99))

// setidProbeOp is the probe's "setid CALL PATH MODE": CALL with MODE (octal)
// on PATH, through the raw system call (the legacy ones too).
func setidProbeOp(op []string) (error, bool) {
	if op[0] != "setid" || len(op) != 4 {
		return nil, false
	}
	mode64, err := strconv.ParseUint(op[3], 8, 32)
	if err != nil {
		return err, true
	}
	mode := uintptr(mode64)
	p, err := unix.BytePtrFromString(op[2])
	if err != nil {
		return err, true
	}
	path := uintptr(unsafe.Pointer(p))
	cwd := uintptr(atFDCWDArg)
	sys := func(nr uintptr, a ...uintptr) error {
		var args [6]uintptr
		copy(args[:], a)
		r, _, e := unix.Syscall6(nr, args[0], args[1], args[2], args[3], args[4], args[5])
		if e != 0 {
			return e
		}
		if nr == unix.SYS_OPEN || nr == unix.SYS_OPENAT || nr == unix.SYS_CREAT {
			unix.Close(int(r))
		}
		return nil
	}
	switch op[1] {
	case "chmod":
		return sys(unix.SYS_CHMOD, path, mode), true
	case "fchmodat":
		return sys(unix.SYS_FCHMODAT, cwd, path, mode), true
	case "fchmodat2":
		return sys(unix.SYS_FCHMODAT2, cwd, path, mode, 0), true
	case "fchmod":
		fd, err := unix.Open(op[2], unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err, true
		}
		defer unix.Close(fd)
		return sys(unix.SYS_FCHMOD, uintptr(fd), mode), true
	case "open":
		return sys(unix.SYS_OPEN, path, unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC, mode), true
	case "openat":
		return sys(unix.SYS_OPENAT, cwd, path, unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC, mode), true
	case "creat":
		return sys(unix.SYS_CREAT, path, mode), true
	case "mknod":
		return sys(unix.SYS_MKNOD, path, unix.S_IFREG|mode, 0), true
	case "mknodat":
		return sys(unix.SYS_MKNODAT, cwd, path, unix.S_IFREG|mode, 0), true
	case "tmpfile":
		// An unnamed file in PATH's directory, linked in as PATH.
		fd, err := unix.Open(filepath.Dir(op[2]), unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, uint32(mode))
		if err != nil {
			return err, true
		}
		defer unix.Close(fd)
		return unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), unix.AT_FDCWD, op[2], unix.AT_SYMLINK_FOLLOW), true
	}
	return fmt.Errorf("unknown setid call %q", op[1]), true
}

// TestSetidNeverLeft (issue 27 §2): every call that takes a mode, with
// S_ISUID and with S_ISGID, in both launches, with the supervisor and
// without: the call fails with EPERM, the bit is not on the file, and with
// the supervisor it is a "setid" denial; the same calls without a set-id
// bit work; a setgid directory is made with the supervisor (and refused
// without one, by the filter alone).
func TestSetidNeverLeft(t *testing.T) {
	creates := []string{"open", "openat", "creat", "mknod", "mknodat", "tmpfile"}
	chmods := []string{"chmod", "fchmod", "fchmodat", "fchmodat2"}
	for launch, sys := range launchVariants(t) {
		for _, supervised := range []bool{true, false} {
			name := launch + "/supervised"
			if !supervised {
				name = launch + "/filter-only"
			}
			t.Run(name, func(t *testing.T) {
				e := newSuperviseEnv(t, false)
				opts := Options{NoDenialReports: !supervised}
				// One probe run per case keeps the denials apart.
				check := func(t *testing.T, call, target, mode, want string, denied bool) {
					t.Helper()
					got, res, _ := runProbeOpts(t, e.pol, sys, e.ws, opts, "setid", call, target, mode)
					if got != want {
						t.Errorf("%s %s %s: got %q, want %q", call, mode, target, got, want)
					}
					var wantD []wantDenial
					if denied && supervised {
						p := target
						if call == "tmpfile" {
							p = filepath.Dir(target) // the unnamed file's directory
						}
						wantD = []wantDenial{{supervise.SetidOperation, p}}
					}
					if g := denialSet(res.Denials); !slices.Equal(g, wantD) {
						t.Errorf("%s %s: denials %v, want %v (%+v)", call, mode, g, wantD, res.Denials)
					}
				}
				bitsOf := func(p string) uint32 {
					var st unix.Stat_t
					if err := unix.Lstat(p, &st); err != nil {
						return 0
					}
					return st.Mode & (unix.S_ISUID | unix.S_ISGID)
				}
				for _, call := range creates {
					for _, mode := range []string{"4755", "2755", "6755"} {
						target := filepath.Join(e.ws, call+"-"+mode)
						check(t, call, target, mode, "EPERM", true)
						if b := bitsOf(target); b != 0 {
							t.Errorf("%s %s: %s has set-id bits %#o", call, mode, target, b)
						}
					}
					target := filepath.Join(e.ws, call+"-plain")
					check(t, call, target, "755", "OK", false)
					if _, err := os.Lstat(target); err != nil {
						t.Errorf("%s 755: %v", call, err)
					}
				}
				for _, call := range chmods {
					file := filepath.Join(e.ws, call+"-file")
					dir := filepath.Join(e.ws, call+"-dir")
					if err := os.WriteFile(file, nil, 0o644); err != nil {
						t.Fatal(err)
					}
					if err := os.Mkdir(dir, 0o755); err != nil {
						t.Fatal(err)
					}
					for _, mode := range []string{"4755", "2755"} {
						check(t, call, file, mode, "EPERM", true)
						if b := bitsOf(file); b != 0 {
							t.Errorf("%s %s: %s has set-id bits %#o", call, mode, file, b)
						}
					}
					check(t, call, file, "700", "OK", false)
					check(t, call, dir, "4755", "EPERM", true)
					if supervised {
						check(t, call, dir, "2775", "OK", false)
						if b := bitsOf(dir); b != unix.S_ISGID {
							t.Errorf("%s 2775 on a directory: set-id bits %#o, want S_ISGID", call, b)
						}
					} else {
						check(t, call, dir, "2775", "EPERM", false)
						if b := bitsOf(dir); b != 0 {
							t.Errorf("%s 2775 on a directory without the supervisor: set-id bits %#o", call, b)
						}
					}
				}
				// chmod g+s outside the writable roots stays the policy's
				// refusal, not a setgid one.
				if supervised {
					outDir := filepath.Join(e.out, "d")
					os.Mkdir(outDir, 0o755)
					got, res, _ := runProbeOpts(t, e.pol, sys, e.ws, opts, "setid", "chmod", outDir, "2755")
					if got != "EPERM" && got != "EROFS" {
						t.Errorf("chmod g+s outside the roots: %q", got)
					}
					if g := denialSet(res.Denials); !slices.Equal(g, []wantDenial{{"chmod", outDir}}) {
						t.Errorf("chmod g+s outside the roots: denials %v", g)
					}
					if b := bitsOf(outDir); b != 0 {
						t.Errorf("chmod g+s outside the roots: set-id bits %#o", b)
					}
				}
			})
		}
	}
}
