//go:build linux

package landlock

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRestrictSelf: a thread restricted to reading one directory reads a
// file there and is refused one outside it, while the test's other threads
// keep reading both (the domain is the thread's alone: no TSYNC).
func TestRestrictSelf(t *testing.T) {
	abi := RunningABI()
	if abi == 0 {
		t.Skip("SKIP: the kernel has no Landlock (RunningABI is 0)")
	}
	in, out := t.TempDir(), t.TempDir()
	for _, d := range []string{in, out} {
		if err := os.WriteFile(filepath.Join(d, "f"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rs := &Ruleset{ABI: abi, HandledFS: Mask(FS, abi, Always), Rules: []Rule{{Path: in, Access: Granted(ReadRoot, Always)}}}
	type result struct{ in, out, err error }
	done := make(chan result)
	go func() {
		// The thread is restricted for good: locked and never unlocked,
		// it ends with the goroutine.
		runtime.LockOSThread()
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			done <- result{err: err}
			return
		}
		if err := rs.RestrictSelf(); err != nil {
			done <- result{err: err}
			return
		}
		_, errIn := os.ReadFile(filepath.Join(in, "f"))
		_, errOut := os.ReadFile(filepath.Join(out, "f"))
		done <- result{in: errIn, out: errOut}
	}()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.in != nil {
		t.Errorf("reading inside the rule: %v", r.in)
	}
	if !errors.Is(r.out, unix.EACCES) {
		t.Errorf("reading outside the rules: %v, want EACCES", r.out)
	}
	if _, err := os.ReadFile(filepath.Join(out, "f")); err != nil {
		t.Errorf("another thread is restricted too: %v", err)
	}
}
