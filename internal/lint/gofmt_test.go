package lint

import (
	"bytes"
	"go/format"
	"strings"
	"testing"
)

// TestGofmt: every non-test Go file of the module is as gofmt writes it
// (a rename by sed left a struct's field alignment behind once, and no
// other check saw it).
func TestGofmt(t *testing.T) {
	var bad []string
	for _, f := range moduleGoFiles(t) {
		out, err := format.Source(f.src)
		if err != nil {
			t.Errorf("%s: %v", f.rel, err)
			continue
		}
		if !bytes.Equal(out, f.src) {
			bad = append(bad, f.rel)
		}
	}
	if len(bad) > 0 {
		t.Errorf("not gofmt'd (run gofmt -w):\n\t%s", strings.Join(bad, "\n\t"))
	}
}
