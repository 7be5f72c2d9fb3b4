package fsop

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestParsePatch(t *testing.T) {
	tests := []struct {
		name  string
		patch string
		want  string // "old>new mode hunks" per file, ";"-joined
	}{
		{"plain", "--- x.txt\n+++ x.txt\n@@ -1 +1 @@\n-a\n+b\n", "x.txt>x.txt 0 1"},
		{"git prefixes", "diff --git a/d/x b/d/x\nindex 1..2 100644\n--- a/d/x\n+++ b/d/x\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n", "d/x>d/x 0 1"},
		{"new file", "diff --git a/n b/n\nnew file mode 100755\nindex 0..1\n--- /dev/null\n+++ b/n\n@@ -0,0 +1 @@\n+x\n", ">n 755 1"},
		{"deleted file", "diff --git a/o b/o\ndeleted file mode 100644\n--- a/o\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n", "o> 0 1"},
		{"empty new file, git header only", "diff --git a/e b/e\nnew file mode 100644\nindex 0000000..e69de29\n", ">e 644 0"},
		{"mode change only", "diff --git a/m b/m\nold mode 100644\nnew mode 100755\n", "m>m 755 0"},
		{"two files and a preamble", "From: x\nSubject: y\n\n--- a\n+++ a\n@@ -1 +1 @@\n-1\n+2\n--- b\n+++ b\n@@ -1 +1 @@\n-1\n+2\n", "a>a 0 1;b>b 0 1"},
		{"timestamps", "--- a/x\t2024-01-01 00:00:00\n+++ b/x\t2024-01-02 00:00:00\n@@ -1 +1 @@\n-a\n+b\n", "x>x 0 1"},
		{"quoted names", "diff --git \"a/s p\" \"b/s p\"\n--- \"a/s p\"\n+++ \"b/s p\"\n@@ -1 +1 @@\n-a\n+b\n", "s p>s p 0 1"},
		{"crlf headers", "--- a/x\r\n+++ b/x\r\n@@ -1 +1 @@\r\n-a\r\n+b\r\n", "x>x 0 1"},
		{"two hunks", "--- x\n+++ x\n@@ -1 +1 @@\n-a\n+b\n@@ -10,0 +11 @@\n+z\n", "x>x 0 2"},
		{"no final newline in the patch text", "--- x\n+++ x\n@@ -1 +1 @@\n-a\n+b", "x>x 0 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps, err := ParsePatch(tt.patch)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range ps {
				got = append(got, fmt.Sprintf("%s>%s %o %d", p.OldPath, p.NewPath, p.Mode, len(p.Hunks)))
			}
			if g := strings.Join(got, ";"); g != tt.want {
				t.Errorf("got %q, want %q", g, tt.want)
			}
		})
	}
}

func TestParsePatchMalformed(t *testing.T) {
	tests := []struct {
		name, patch, want string
	}{
		{"empty", "", "no file in the patch"},
		{"prose only", "hello\nworld\n", "no file in the patch"},
		{"hunk without header", "@@ -1 +1 @@\n-a\n+b\n", "hunk before"},
		{"bad hunk header", "--- x\n+++ x\n@@ -a +1 @@\n-a\n+b\n", "malformed hunk header"},
		{"truncated hunk", "--- x\n+++ x\n@@ -1,3 +1,3 @@\n a\n-b\n", "ends inside the hunk"},
		{"garbage in hunk", "--- x\n+++ x\n@@ -1,2 +1,2 @@\n a\n*b\n", "is not a hunk line"},
		{"too many lines", "--- x\n+++ x\n@@ -1 +1,2 @@\n a\n b\n+c\n", "more lines than"},
		{"rename", "diff --git a/x b/y\nsimilarity index 100%\nrename from x\nrename to y\n", "not supported"},
		{"binary", "diff --git a/x b/x\nindex 1..2\nBinary files a/x and b/x differ\n", "not supported"},
		{"both dev null", "--- /dev/null\n+++ /dev/null\n@@ -0,0 +1 @@\n+a\n", "both sides"},
		{"no hunks", "--- x\n+++ x\n", "no hunks"},
		{"twice", "--- x\n+++ x\n@@ -1 +1 @@\n-a\n+b\n--- x\n+++ x\n@@ -1 +1 @@\n-b\n+c\n", "named twice"},
		{"marker first", "--- x\n+++ x\n@@ -1 +1 @@\n\\ No newline at end of file\n-a\n+b\n", "before any hunk line"},
		{"symlink mode", "diff --git a/l b/l\nnew file mode 120000\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+t\n", "not a regular file mode"},
		// Found by FuzzParsePatch: the section had no name left at all.
		{"new and deleted", "diff --git a/x b/x\nnew file mode 100644\ndeleted file mode 100644\n", "both new and deleted"},
		{"deleted and new with a hunk", "diff --git a/x b/x\ndeleted file mode 100644\nnew file mode 100644\n@@ -0,0 +1 @@\n+a\n", "both new and deleted"},
		{"different names", "--- x.orig\n+++ y\n@@ -1 +1 @@\n-a\n+b\n", "renames are not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParsePatch(tt.patch)
			var pe *PatchError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want a PatchError containing %q", err, tt.want)
			}
		})
	}
}

// TestParsePatchNoPanic feeds prefixes and mutations of valid patches: the
// parser must return (an error or patches), never panic.
func TestParsePatchNoPanic(t *testing.T) {
	seeds := []string{
		"diff --git a/x b/x\nindex 1..2 100644\n--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n d\n\\ No newline at end of file\n",
		"diff --git a/n b/n\nnew file mode 100644\n--- /dev/null\n+++ b/n\n@@ -0,0 +1,2 @@\n+x\n+y\n",
		"--- \"a/q\\tx\"\n+++ \"b/q\\tx\"\n@@ -1 +1 @@\n-a\r\n+b\r\n",
	}
	for _, s := range seeds {
		for i := 0; i <= len(s); i++ {
			for _, in := range []string{s[:i], s[i:], s[:i] + "@" + s[i:], s[:i] + "\n" + s[i:], s[:i] + "-" + s[i:]} {
				ps, err := ParsePatch(in)
				if err == nil {
					for _, p := range ps {
						p.Apply("a\nb\nd")
					}
				}
			}
		}
	}
}

func TestApply(t *testing.T) {
	tests := []struct {
		name, old, patch, want string
	}{
		{"replace", "a\nb\nc\n", "--- x\n+++ x\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n", "a\nB\nc\n"},
		{"offset", "0\n0\na\nb\nc\n", "--- x\n+++ x\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n", "0\n0\na\nB\nc\n"},
		{"insert at start", "a\n", "--- x\n+++ x\n@@ -0,0 +1 @@\n+z\n", "z\na\n"},
		{"insert after line", "a\nb\n", "--- x\n+++ x\n@@ -1,0 +2 @@\n+z\n", "a\nz\nb\n"},
		{"new file", "", "--- /dev/null\n+++ b/x\n@@ -0,0 +1,2 @@\n+a\n+b\n", "a\nb\n"},
		{"delete all", "a\nb\n", "--- a/x\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n", ""},
		{"two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n", "--- x\n+++ x\n@@ -1,2 +1,2 @@\n-1\n+one\n 2\n@@ -7,2 +7,2 @@\n 7\n-8\n+eight\n", "one\n2\n3\n4\n5\n6\n7\neight\n"},
		{"crlf file", "a\r\nb\r\n", "--- x\n+++ x\n@@ -1,2 +1,2 @@\n a\r\n-b\r\n+c\r\n", "a\r\nc\r\n"},
		{"add newline at eof", "a\nb", "--- x\n+++ x\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n", "a\nb\n"},
		{"remove newline at eof", "a\nb\n", "--- x\n+++ x\n@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file\n", "a\nb"},
		{"stripped empty context line", "a\n\nb\n", "--- x\n+++ x\n@@ -1,3 +1,3 @@\n a\n\n-b\n+c\n", "a\n\nc\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps, err := ParsePatch(tt.patch)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ps[0].Apply(tt.old)
			if err != nil || got != tt.want {
				t.Errorf("Apply = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestApplyConflict(t *testing.T) {
	tests := []struct {
		name, old, patch string
	}{
		{"context differs", "a\nX\nc\n", "--- x\n+++ x\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
		{"crlf file, lf patch", "a\r\nb\r\n", "--- x\n+++ x\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n"},
		{"missing newline at eof", "a\nb", "--- x\n+++ x\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n"},
		{"file too short", "a\n", "--- x\n+++ x\n@@ -5,2 +5,2 @@\n e\n-f\n+g\n"},
		{"hunks out of order", "1\n2\n3\n", "--- x\n+++ x\n@@ -3 +3 @@\n-3\n+three\n@@ -1 +1 @@\n-1\n+one\n"},
		{"already applied", "a\nB\nc\n", "--- x\n+++ x\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps, err := ParsePatch(tt.patch)
			if err != nil {
				t.Fatal(err)
			}
			_, err = ps[0].Apply(tt.old)
			var pe *PatchError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), "does not apply") {
				t.Errorf("err = %v, want a PatchError: does not apply", err)
			}
		})
	}
}

// FuzzParsePatch: any input parses or fails with a *PatchError, never
// panics, and every parsed file has a path; whatever parses applies to any
// content or fails with a *PatchError (go test runs the seeds; go test
// -fuzz FuzzParsePatch ./internal/fsop explores).
func FuzzParsePatch(f *testing.F) {
	for _, s := range []string{
		"--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n",
		"diff --git a/n b/n\nnew file mode 100644\n--- /dev/null\n+++ b/n\n@@ -0,0 +1 @@\n+x\n\\ No newline at end of file\n",
		"diff --git a/o b/o\ndeleted file mode 100644\n--- a/o\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n",
		"--- x\r\n+++ x\r\n@@ -1 +1 @@\r\n-a\r\n+b\r\n",
	} {
		f.Add(s, "a\nb\n")
	}
	f.Fuzz(func(t *testing.T, patch, content string) {
		ps, err := ParsePatch(patch)
		if err != nil {
			var pe *PatchError
			if !errors.As(err, &pe) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		for _, p := range ps {
			if p.Path() == "" {
				t.Fatalf("a file patch without a path: %+v", p)
			}
			if _, err := p.Apply(content); err != nil {
				var pe *PatchError
				if !errors.As(err, &pe) {
					t.Fatalf("untyped apply error %v", err)
				}
			}
		}
	})
}
