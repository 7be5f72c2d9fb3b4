package lint

import (
	"bufio"
	"bytes"
	"fmt"
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
	var over []string
	seen := map[string]bool{}
	for _, f := range moduleGoFiles(t) {
		if generated(f.src) {
			continue
		}
		n := bytes.Count(f.src, []byte("\n"))
		if len(f.src) > 0 && f.src[len(f.src)-1] != '\n' {
			n++
		}
		if n > MaxLines {
			seen[f.rel] = true
			if !oversized[f.rel] {
				over = append(over, fmt.Sprintf("%s: %d lines", f.rel, n))
			}
		}
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
