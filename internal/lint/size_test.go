package lint

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// MaxLines is the most lines a non-test Go file may have (STYLE.md, "Size";
// issue 32): a file that grows past it is split where a missing concept
// shows, not trimmed.
const MaxLines = 600

// oversized are files allowed over MaxLines: none. The list stays so
// that a file let over for a while is named here, and fails the test
// again once it is split (a stale entry).
var oversized = map[string]bool{}

// TestFileSize: every non-test .go file of the module, but testdata and
// generated tables ("// Code generated" near the top: the kernel's syscall
// names), has at most MaxLines lines, and the failure lists every offender.
func TestFileSize(t *testing.T) {
	root := moduleRoot(t)
	var over []string
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if generated(src) {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		n := bytes.Count(src, []byte("\n"))
		if len(src) > 0 && src[len(src)-1] != '\n' {
			n++
		}
		if n > MaxLines {
			seen[rel] = true
			if !oversized[rel] {
				over = append(over, fmt.Sprintf("%s: %d lines", rel, n))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(over)
	if len(over) > 0 {
		t.Errorf("%d non-test Go files over %d lines (split them where a concept is missing):\n\t%s",
			len(over), MaxLines, strings.Join(over, "\n\t"))
	}
	for f := range oversized {
		if !seen[f] {
			t.Errorf("%s is no longer over %d lines (or is gone): remove it from oversized", f, MaxLines)
		}
	}
}

// generated reports whether src says it is generated, in a comment line
// before its first declaration ("// Code generated ...", Go's convention,
// with or without its "DO NOT EDIT").
func generated(src []byte) bool {
	sc := bufio.NewScanner(bytes.NewReader(src))
	for i := 0; i < 20 && sc.Scan(); i++ {
		line := sc.Text()
		if strings.HasPrefix(line, "// Code generated") {
			return true
		}
		if strings.HasPrefix(line, "func ") || strings.HasPrefix(line, "var ") || strings.HasPrefix(line, "type ") {
			return false
		}
	}
	return false
}

// moduleRoot is the directory of the module's go.mod, above this package.
func moduleRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}
