//go:build unix

package fsop

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func write(t *testing.T, path, content string, perm fs.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil {
		t.Fatal(err)
	}
}

func wantFile(t *testing.T, path, content string, perm fs.FileMode) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || string(b) != content {
		t.Errorf("%s: %q, %v; want %q", path, b, err, content)
		return
	}
	if fi, _ := os.Stat(path); perm != 0 && fi.Mode().Perm() != perm {
		t.Errorf("%s: mode %o, want %o", path, fi.Mode().Perm(), perm)
	}
}

// names lists dir, so a test can see that no temp or backup file is left.
func names(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if p != dir {
			r, _ := filepath.Rel(dir, p)
			out = append(out, r)
		}
		return nil
	})
	return out
}

func TestRun(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	tests := []struct {
		name  string
		setup func(d string)
		op    func(d string) Op
		in    string
		check func(t *testing.T, d string)
		err   string // "" for success
	}{
		{"write new", nil, func(d string) Op { return Op{Kind: Write, Path: d + "/f"} }, "hi\n",
			func(t *testing.T, d string) { wantFile(t, d+"/f", "hi\n", 0o644) }, ""},
		{"write keeps mode", func(d string) { write(t, d+"/f", "old", 0o751) }, func(d string) Op { return Op{Kind: Write, Path: d + "/f"} }, "new",
			func(t *testing.T, d string) { wantFile(t, d+"/f", "new", 0o751) }, ""},
		{"write through symlink", func(d string) { write(t, d+"/t", "old", 0o600); os.Symlink("t", d+"/l") }, func(d string) Op { return Op{Kind: Write, Path: d + "/l"} }, "new",
			func(t *testing.T, d string) {
				wantFile(t, d+"/t", "new", 0o600)
				if fi, err := os.Lstat(d + "/l"); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
					t.Errorf("the link was replaced: %v %v", fi, err)
				}
			}, ""},
		{"write missing parent", nil, func(d string) Op { return Op{Kind: Write, Path: d + "/no/f"} }, "x", nil, "no such file or directory"},
		{"write a directory", func(d string) { os.Mkdir(d+"/sub", 0o755) }, func(d string) Op { return Op{Kind: Write, Path: d + "/sub"} }, "x", nil, "is a directory"},
		{"append", func(d string) { write(t, d+"/f", "a\n", 0o640) }, func(d string) Op { return Op{Kind: Append, Path: d + "/f"} }, "b\n",
			func(t *testing.T, d string) { wantFile(t, d+"/f", "a\nb\n", 0o640) }, ""},
		{"append creates", nil, func(d string) Op { return Op{Kind: Append, Path: d + "/f"} }, "b\n",
			func(t *testing.T, d string) { wantFile(t, d+"/f", "b\n", 0o644) }, ""},
		{"mkdir", nil, func(d string) Op { return Op{Kind: Mkdir, Path: d + "/x"} }, "", func(t *testing.T, d string) { wantDir(t, d+"/x") }, ""},
		{"mkdir exists", func(d string) { os.Mkdir(d+"/x", 0o755) }, func(d string) Op { return Op{Kind: Mkdir, Path: d + "/x"} }, "", nil, "file exists"},
		{"mkdir -p", nil, func(d string) Op { return Op{Kind: Mkdir, Path: d + "/x/y", Parents: true} }, "", func(t *testing.T, d string) { wantDir(t, d+"/x/y") }, ""},
		{"mkdir missing parent", nil, func(d string) Op { return Op{Kind: Mkdir, Path: d + "/x/y"} }, "", nil, "no such file or directory"},
		{"remove file", func(d string) { write(t, d+"/f", "", 0o644) }, func(d string) Op { return Op{Kind: Remove, Path: d + "/f"} }, "",
			func(t *testing.T, d string) { wantGone(t, d+"/f") }, ""},
		{"remove missing", nil, func(d string) Op { return Op{Kind: Remove, Path: d + "/f"} }, "", nil, "remove DIR/f: no such file or directory"},
		{"remove -r missing", nil, func(d string) Op { return Op{Kind: Remove, Path: d + "/f", Recursive: true} }, "", nil, "remove DIR/f: no such file or directory"},
		{"remove non-empty", func(d string) { os.Mkdir(d+"/x", 0o755); write(t, d+"/x/f", "", 0o644) }, func(d string) Op { return Op{Kind: Remove, Path: d + "/x"} }, "", nil, "directory not empty"},
		{"remove -r", func(d string) { os.Mkdir(d+"/x", 0o755); write(t, d+"/x/f", "", 0o644) }, func(d string) Op { return Op{Kind: Remove, Path: d + "/x", Recursive: true} }, "",
			func(t *testing.T, d string) { wantGone(t, d+"/x") }, ""},
		{"move", func(d string) { write(t, d+"/a", "A", 0o600) }, func(d string) Op { return Op{Kind: Move, Path: d + "/a", Dest: d + "/b"} }, "",
			func(t *testing.T, d string) { wantGone(t, d+"/a"); wantFile(t, d+"/b", "A", 0o600) }, ""},
		{"move missing", nil, func(d string) Op { return Op{Kind: Move, Path: d + "/a", Dest: d + "/b"} }, "", nil, "no such file or directory"},
		{"copy", func(d string) { write(t, d+"/a", "A", 0o755) }, func(d string) Op { return Op{Kind: Copy, Path: d + "/a", Dest: d + "/b"} }, "",
			func(t *testing.T, d string) { wantFile(t, d+"/a", "A", 0o755); wantFile(t, d+"/b", "A", 0o755) }, ""},
		{"copy onto itself", func(d string) { write(t, d+"/a", "A", 0o644); os.Symlink("a", d+"/l") },
			func(d string) Op { return Op{Kind: Copy, Path: d + "/a", Dest: d + "/l"} }, "",
			func(t *testing.T, d string) { wantFile(t, d+"/a", "A", 0o644) }, "is the source file itself"},
		{"copy dir without -r", func(d string) { os.Mkdir(d+"/x", 0o755) }, func(d string) Op { return Op{Kind: Copy, Path: d + "/x", Dest: d + "/y"} }, "", nil, "is a directory"},
		{"copy -r", func(d string) {
			os.MkdirAll(d+"/x/s", 0o755)
			write(t, d+"/x/s/f", "F", 0o600)
			os.Symlink("s/f", d+"/x/l")
		},
			func(d string) Op { return Op{Kind: Copy, Path: d + "/x", Dest: d + "/y", Recursive: true} }, "",
			func(t *testing.T, d string) {
				wantFile(t, d+"/y/s/f", "F", 0o600)
				if l, err := os.Readlink(d + "/y/l"); l != "s/f" {
					t.Errorf("link %q %v", l, err)
				}
			}, ""},
		{"copy -r onto an existing dst", func(d string) { os.Mkdir(d+"/x", 0o755); os.Mkdir(d+"/y", 0o755); write(t, d+"/y/keep", "K", 0o644) },
			func(d string) Op { return Op{Kind: Copy, Path: d + "/x", Dest: d + "/y", Recursive: true} }, "",
			func(t *testing.T, d string) { wantFile(t, d+"/y/keep", "K", 0o644) }, "copy DIR/y: file already exists"},
		{"chmod", func(d string) { write(t, d+"/f", "", 0o644) }, func(d string) Op { return Op{Kind: Chmod, Path: d + "/f", Mode: "0700"} }, "",
			func(t *testing.T, d string) { wantFile(t, d+"/f", "", 0o700) }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := t.TempDir()
			if tt.setup != nil {
				tt.setup(d)
			}
			before := names(t, d)
			err := tt.op(d).Run(strings.NewReader(tt.in))
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("Run: %v", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), strings.ReplaceAll(tt.err, "DIR", d))):
				t.Fatalf("Run: %v, want an error containing %q", err, tt.err)
			case tt.err != "" && !slices.Equal(names(t, d), before):
				t.Errorf("a failed op changed the directory: %q, was %q", names(t, d), before)
			}
			if tt.check != nil {
				tt.check(t, d)
			}
			for _, n := range names(t, d) {
				if strings.Contains(n, ".sbx-") {
					t.Errorf("left behind: %s", n)
				}
			}
		})
	}
}

func wantDir(t *testing.T, p string) {
	t.Helper()
	if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
		t.Errorf("%s: not a directory (%v)", p, err)
	}
}

func wantGone(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s still exists (%v)", p, err)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		op    Op
		field string
	}{
		{Op{Kind: "touch", Path: "x"}, "op"},
		{Op{Kind: Write}, "path"},
		{Op{Kind: Move, Path: "a"}, "dest"},
		{Op{Kind: Write, Path: "a", Dest: "b"}, "dest"},
		{Op{Kind: Chmod, Path: "a"}, "mode"},
		{Op{Kind: Chmod, Path: "a", Mode: "rwx"}, "mode"},
		{Op{Kind: Chmod, Path: "a", Mode: "17777"}, "mode"},
		{Op{Kind: Write, Path: "a", Mode: "644"}, "mode"},
		{Op{Kind: Remove, Path: "a", Parents: true}, "parents"},
		{Op{Kind: Mkdir, Path: "a", Recursive: true}, "recursive"},
		{Op{Kind: ApplyPatch, Path: "a"}, "path"},
	}
	for _, tt := range tests {
		var ae *ArgError
		if err := tt.op.Validate(); !errors.As(err, &ae) || ae.Field != tt.field {
			t.Errorf("%+v: %v, want an ArgError for %s", tt.op, err, tt.field)
		}
	}
	for _, ok := range []Op{{Kind: ApplyPatch}, {Kind: Chmod, Path: "a", Mode: "4755"}, {Kind: Copy, Path: "a", Dest: "b", Recursive: true}} {
		if err := ok.Validate(); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
}

// TestApplyPatchAllOrNothing: a patch of three files whose last change
// cannot be staged (its directory would be made under a regular file)
// leaves every file as it was and no temp, backup or directory behind.
func TestApplyPatchAllOrNothing(t *testing.T) {
	d := t.TempDir()
	t.Chdir(d)
	write(t, "a", "a1\n", 0o640)
	write(t, "gone", "g\n", 0o644)
	write(t, "file", "not a dir\n", 0o644)
	patch := "--- a/a\n+++ b/a\n@@ -1 +1 @@\n-a1\n+a2\n" +
		"--- a/gone\n+++ /dev/null\n@@ -1 +0,0 @@\n-g\n" +
		"--- /dev/null\n+++ b/new/dir/n\n@@ -0,0 +1 @@\n+n\n" +
		"--- /dev/null\n+++ b/file/n\n@@ -0,0 +1 @@\n+n\n"
	before := names(t, d)
	err := Op{Kind: ApplyPatch}.Run(strings.NewReader(patch))
	if err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("err = %v, want ENOTDIR", err)
	}
	if got := names(t, d); !slices.Equal(got, before) {
		t.Errorf("files after a failed patch: %q, want %q", got, before)
	}
	wantFile(t, "a", "a1\n", 0o640)
	wantFile(t, "gone", "g\n", 0o644)

	// Without the impossible file, the same patch applies.
	patch = patch[:strings.LastIndex(patch, "--- /dev/null")]
	if err := (Op{Kind: ApplyPatch}).Run(strings.NewReader(patch)); err != nil {
		t.Fatal(err)
	}
	wantFile(t, "a", "a2\n", 0o640)
	wantGone(t, "gone")
	wantFile(t, "new/dir/n", "n\n", 0)
	for _, n := range names(t, d) {
		if strings.Contains(n, ".sbx-") {
			t.Errorf("left behind: %s", n)
		}
	}
}

// TestApplyPatchConflictTouchesNothing: a hunk that does not apply in the
// second file stops the patch before the first file is touched.
func TestApplyPatchConflictTouchesNothing(t *testing.T) {
	d := t.TempDir()
	t.Chdir(d)
	write(t, "a", "a1\n", 0o644)
	write(t, "b", "b1\n", 0o644)
	patch := "--- a/a\n+++ b/a\n@@ -1 +1 @@\n-a1\n+a2\n--- a/b\n+++ b/b\n@@ -1 +1 @@\n-XX\n+b2\n"
	err := Op{Kind: ApplyPatch}.Run(strings.NewReader(patch))
	var pe *PatchError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "b: hunk 1 (@@ -1 +1 @@) does not apply") {
		t.Fatalf("err = %v", err)
	}
	wantFile(t, "a", "a1\n", 0)
	wantFile(t, "b", "b1\n", 0)
	for _, c := range []struct{ patch, want string }{
		{"--- /dev/null\n+++ b/a\n@@ -0,0 +1 @@\n+x\n", "a: already exists"},
		{"--- a/missing\n+++ b/missing\n@@ -1 +1 @@\n-x\n+y\n", "lstat missing: no such file or directory"},
		{"--- a/a\n+++ /dev/null\n@@ -0,0 +0,0 @@\n", "does not remove all of its lines"},
	} {
		if err := (Op{Kind: ApplyPatch}).Run(strings.NewReader(c.patch)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.patch, err, c.want)
		}
	}
	wantFile(t, "a", "a1\n", 0)
}

// TestWriteKeepsOwner: root replacing another user's file leaves it theirs
// (the temp file is root's until chowned).
func TestWriteKeepsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIP: giving a file to another user needs root")
	}
	d := t.TempDir()
	p := filepath.Join(d, "f")
	write(t, p, "old", 0o640)
	if err := os.Chown(p, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	for _, op := range []struct {
		op Op
		in string
	}{
		{Op{Kind: Write, Path: p}, "new"},
		{Op{Kind: ApplyPatch}, "--- " + p + "\n+++ " + p + "\n@@ -1 +1 @@\n-new\n\\ No newline at end of file\n+patched\n"},
	} {
		if err := op.op.Run(strings.NewReader(op.in)); err != nil {
			t.Fatalf("%s: %v", op.op.Kind, err)
		}
		fi, err := os.Stat(p)
		if st := fi.Sys().(*syscall.Stat_t); err != nil || st.Uid != 65534 || st.Gid != 65534 || fi.Mode().Perm() != 0o640 {
			t.Errorf("%s: owner %d:%d mode %o (%v), want 65534:65534 640", op.op.Kind, st.Uid, st.Gid, fi.Mode().Perm(), err)
		}
	}
	wantFile(t, p, "patched\n", 0o640)
}

// TestApplyPatchUndo makes each rename of a patch's transaction fail in
// turn (moving a target aside, placing a new content): every time, the
// files are as they were and nothing is left behind. With a written in
// place, its content is written back.
func TestApplyPatchUndo(t *testing.T) {
	patch := "--- a/a\n+++ b/a\n@@ -1 +1 @@\n-a1\n+a2\n" +
		"--- a/b\n+++ /dev/null\n@@ -1 +0,0 @@\n-b\n" +
		"--- /dev/null\n+++ b/new/c\n@@ -0,0 +1 @@\n+c\n"
	defer func() { rename = os.Rename }()
	for _, v := range []struct {
		name    string
		inPlace bool
		renames int
	}{{"atomic", false, 4}, {"a in place", true, 2}} {
		for fail := 1; ; fail++ {
			d := t.TempDir()
			t.Chdir(d)
			write(t, "a", "a1\n", 0o640)
			write(t, "b", "b\n", 0o644)
			ino := inode(t, "a")
			op := Op{Kind: ApplyPatch}
			if v.inPlace {
				op.InPlace = []string{filepath.Join(d, "a")}
			}
			before := names(t, d)
			calls := 0
			rename = func(from, to string) error {
				if calls++; calls == fail {
					return &os.LinkError{Op: "rename", Old: from, New: to, Err: syscall.EIO}
				}
				return os.Rename(from, to)
			}
			err := op.Run(strings.NewReader(patch))
			if err == nil {
				if fail <= v.renames {
					t.Fatalf("%s: only %d renames, want %d", v.name, fail-1, v.renames)
				}
				wantFile(t, "a", "a2\n", 0o640)
				wantFile(t, "new/c", "c\n", 0)
				wantGone(t, "b")
				if (inode(t, "a") == ino) != v.inPlace {
					t.Errorf("%s: a's inode kept %t", v.name, inode(t, "a") == ino)
				}
				break
			}
			if !strings.Contains(err.Error(), "input/output error") {
				t.Fatalf("%s: rename %d: %v", v.name, fail, err)
			}
			if got := names(t, d); !slices.Equal(got, before) {
				t.Errorf("%s: rename %d failed: files %q, want %q", v.name, fail, got, before)
			}
			wantFile(t, "a", "a1\n", 0o640)
			wantFile(t, "b", "b\n", 0o644)
		}
	}
}

func inode(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// TestWriteInPlace: a file listed in InPlace is truncated and written (its
// inode stays), through a symlink too; others are replaced.
func TestWriteInPlace(t *testing.T) {
	d := t.TempDir()
	p := filepath.Join(d, "f")
	write(t, p, "old old old", 0o604)
	os.Symlink("f", filepath.Join(d, "l"))
	ino := inode(t, p)
	write(t, filepath.Join(d, "src"), "new", 0o600)
	for _, op := range []Op{
		{Kind: Write, Path: filepath.Join(d, "l"), InPlace: []string{p}},
		{Kind: Copy, Path: filepath.Join(d, "src"), Dest: filepath.Join(d, "l"), InPlace: []string{p}},
	} {
		if err := op.Run(strings.NewReader("new")); err != nil {
			t.Fatalf("%s: %v", op.Kind, err)
		}
		wantFile(t, p, "new", 0o604)
		if inode(t, p) != ino {
			t.Errorf("%s: replaced, not written in place", op.Kind)
		}
	}
	// A relative path from a working directory named through a symlink.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(d, link); err != nil {
		t.Fatal(err)
	}
	t.Chdir(link)
	t.Setenv("PWD", link)
	if err := (Op{Kind: Write, Path: "f", InPlace: []string{p}}).Run(strings.NewReader("new")); err != nil || inode(t, p) != ino {
		t.Errorf("relative write from a symlinked cwd: %v, in place %t", err, inode(t, p) == ino)
	}
	if err := (Op{Kind: Write, Path: p}).Run(strings.NewReader("atomic")); err != nil {
		t.Fatal(err)
	}
	if inode(t, p) == ino {
		t.Errorf("write without InPlace kept the inode")
	}
	wantFile(t, p, "atomic", 0o604)
}
