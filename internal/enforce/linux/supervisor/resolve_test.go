//go:build linux

package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestResolve resolves paths for this test's own thread, both ways (the
// kernel-assisted fast path and the walk), against what the kernel makes
// of them.
func TestResolve(t *testing.T) {
	base, _ := filepath.EvalSymlinks(t.TempDir())
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(base+"/a/b", 0o755))
	must(os.MkdirAll(base+"/out", 0o755))
	must(os.WriteFile(base+"/a/f", nil, 0o644))
	must(os.WriteFile(base+"/out/target", nil, 0o644))
	must(os.Symlink(base+"/out", base+"/a/abs-dir"))
	must(os.Symlink("../out/target", base+"/a/rel-file"))
	must(os.Symlink(base+"/out/missing", base+"/a/dangling"))
	must(os.Symlink("loop2", base+"/a/loop1"))
	must(os.Symlink("loop1", base+"/a/loop2"))
	tid := unix.Gettid()
	tests := []struct {
		path   string
		follow bool
		want   string // "" when the resolver must not answer
		exists bool
	}{
		{base + "/a/f", true, base + "/a/f", true},
		{base + "/a/new", true, base + "/a/new", false},
		{base + "/a/b/../f", true, base + "/a/f", true},
		{base + "//a/./b/", true, base + "/a/b", true},
		{base + "/a/abs-dir/target", true, base + "/out/target", true},
		{base + "/a/abs-dir/new", false, base + "/out/new", false},
		{base + "/a/abs-dir/../a/f", true, base + "/a/f", true}, // .. after a symlink is the link target's parent
		{base + "/a/rel-file", true, base + "/out/target", true},
		{base + "/a/rel-file", false, base + "/a/rel-file", true},
		{base + "/a/dangling", true, base + "/out/missing", false},
		{base + "/a/dangling", false, base + "/a/dangling", true},
		{base + "/a/loop1", true, "", false},
		{base + "/a/missing/x", true, "", false},
		{base + "/a/f/x", true, "", false},
		{"/proc/self/fd/1000000", true, fmt.Sprintf("/proc/%d/fd/1000000", os.Getpid()), false},
		{"/dev/null", true, "/dev/null", true},
	}
	for _, tt := range tests {
		for _, fast := range []bool{true, false} {
			v := newTaskView(tid)
			var r resolved
			var ok bool
			if fast {
				r, ok = v.resolveAt(atFDCWD, tt.path, tt.follow)
			} else {
				r, ok = v.resolve("/", tt.path, tt.follow)
			}
			switch {
			case tt.want == "" && ok:
				t.Errorf("fast=%t %s: resolved to %q, want no answer", fast, tt.path, r.path)
			case tt.want != "" && (!ok || r.path != tt.want || r.exists != tt.exists):
				t.Errorf("fast=%t %s follow=%t: got %q exists=%t ok=%t, want %q exists=%t", fast, tt.path, tt.follow, r.path, r.exists, ok, tt.want, tt.exists)
			}
		}
	}
}

// TestResolveRelativeAndProcSelf: relative paths start at the task's cwd,
// and /proc/self means the task (here the test process itself, so this
// checks the rewriting, not a different answer).
func TestResolveRelativeAndProcSelf(t *testing.T) {
	// The view is of this thread: the goroutine must not move to another
	// before the thread-self check compares with Gettid.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	os.Mkdir(dir+"/d", 0o755)
	os.WriteFile(dir+"/d/file", nil, 0o644)
	d, err := os.Open(dir + "/d")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	v := newTaskView(unix.Gettid())
	rel := "../" + filepath.Base(dir) + "/./d/file"
	if r, ok := v.resolveAt(int32(d.Fd()), "../d/file", true); !ok || r.path != dir+"/d/file" || !r.exists {
		t.Errorf("relative to a dirfd: %+v %t", r, ok)
	}
	if r, ok := v.resolveAt(int32(d.Fd()), "../"+rel, true); !ok || r.path != dir+"/d/file" {
		t.Errorf("relative to a dirfd, up and down: %+v %t", r, ok)
	}
	if r, ok := v.resolveAt(int32(d.Fd()), "missing-dir/../file", true); ok {
		t.Errorf("through a missing directory: %+v, want no answer (ENOENT)", r)
	}
	cwd, _ := os.Getwd()
	cwd, _ = filepath.EvalSymlinks(cwd)
	entries, _ := os.ReadDir(".")
	if len(entries) > 0 {
		name := entries[0].Name()
		if r, ok := v.resolveAt(atFDCWD, "./"+name, false); !ok || r.path != cwd+"/"+name {
			t.Errorf("relative to the cwd: %+v %t", r, ok)
		}
	}
	f, err := os.CreateTemp(t.TempDir(), "fd")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want, _ := filepath.EvalSymlinks(f.Name())
	for _, p := range []string{fmt.Sprintf("/proc/self/fd/%d", f.Fd()), fmt.Sprintf("/dev/fd/%d", f.Fd())} {
		if r, ok := v.resolveAt(atFDCWD, p, true); !ok || r.path != want {
			t.Errorf("%s: got %+v %t, want %s", p, r, ok, want)
		}
	}
	if got := v.procSelf("/proc/self"); got != fmt.Sprintf("/proc/%d", os.Getpid()) {
		t.Errorf("procSelf: %s", got)
	}
	if got := v.procSelf("/proc/thread-self"); got != fmt.Sprintf("/proc/%d/task/%d", os.Getpid(), unix.Gettid()) {
		t.Errorf("procSelf thread: %s", got)
	}
	r, w, _ := os.Pipe()
	defer r.Close()
	defer w.Close()
	if res, ok := v.resolveAt(atFDCWD, fmt.Sprintf("/proc/self/fd/%d", w.Fd()), true); ok {
		t.Errorf("a pipe resolved to %+v", res)
	}
}

// TestReadString reads strings at the end of a mapping and refuses one
// without a NUL within PATH_MAX.
func TestReadString(t *testing.T) {
	page := unix.Getpagesize()
	mem, err := unix.Mmap(-1, 0, 2*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Syscall(unix.SYS_MUNMAP, uintptr(unsafe.Pointer(&mem[0])), uintptr(page), 0)
	if _, _, errno := unix.Syscall(unix.SYS_MUNMAP, uintptr(unsafe.Pointer(&mem[page])), uintptr(page), 0); errno != 0 {
		t.Fatal(errno)
	}
	tid := unix.Gettid()
	s := "/tail/of/the/page"
	copy(mem[page-len(s)-1:], s+"\x00")
	addr := uint64(uintptr(unsafe.Pointer(&mem[page-len(s)-1])))
	if got, ok := readString(tid, addr); !ok || got != s {
		t.Errorf("end of mapping: %q %t", got, ok)
	}
	for i := range page {
		mem[i] = 'a'
	}
	if got, ok := readString(tid, uint64(uintptr(unsafe.Pointer(&mem[0])))); ok {
		t.Errorf("unterminated string read as %d bytes", len(got))
	}
	long := strings.Repeat("x", 5000) + "\x00"
	b := []byte(long)
	if _, ok := readString(tid, uint64(uintptr(unsafe.Pointer(&b[0])))); ok {
		t.Error("a string longer than PATH_MAX was accepted")
	}
	short := []byte("/a/b\x00")
	if got, ok := readString(tid, uint64(uintptr(unsafe.Pointer(&short[0])))); !ok || got != "/a/b" {
		t.Errorf("short: %q %t", got, ok)
	}
}

// TestFDPathBlindOrNameless: an fd whose /proc link is no usable path is
// either in no directory (an O_TMPFILE, a pipe: nameless, no rule applies)
// or a deleted name of a file that still has another (blind: the supervisor
// cannot tell where, and fails closed).
func TestFDPathBlindOrNameless(t *testing.T) {
	dir := t.TempDir()
	tmp, err := unix.Open(dir, unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
	if err != nil {
		t.Skipf("SKIP: no O_TMPFILE here: %v", err)
	}
	defer unix.Close(tmp)
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := os.WriteFile(a, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(a, b); err != nil {
		t.Fatal(err)
	}
	linked, err := unix.Open(a, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(linked)
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		fd       int
		nameless bool
		blind    string
	}{
		{"O_TMPFILE", tmp, true, ""},
		{"pipe", p[0], true, ""},
		{"deleted name of a linked file", linked, false, "other name"},
		{"closed fd", 999, false, "fd 999"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newTaskView(os.Getpid())
			if _, ok := v.fdPath(int32(tc.fd)); ok {
				t.Fatal("fdPath resolved it")
			}
			if v.nameless != tc.nameless || (tc.blind == "") != (v.blind == "") || !strings.Contains(v.blind, tc.blind) {
				t.Errorf("nameless=%t blind=%q, want nameless=%t blind containing %q", v.nameless, v.blind, tc.nameless, tc.blind)
			}
		})
	}
}
