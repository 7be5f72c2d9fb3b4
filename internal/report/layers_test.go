package report

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestLayers: the vocabulary is the ground floor, and the policy side of
// the pipeline imports no mechanism (issue 14): report imports no sbx
// package but the table of Landlock ABIs (internal/landlock, issue 32),
// which imports none; profiles, policy, policy/denial and escalate none of enforce,
// netproxy, serve or the CLI; and the wire contract (wire) does not
// reach up to the run stage, which runs calls for it (issue 28 §2). The
// strict decoder and the path algebra are leaves like report (issue 32 §2):
// a backend that imports them for a FieldError or a Within must not pull
// the permission model, or anything else of sbx, in with them.
func TestLayers(t *testing.T) {
	const module = "github.com/sbx-sandbox/sbx/"
	mechanism := []string{"internal/enforce", "internal/netproxy", "internal/serve", "internal/wire", "internal/run", "internal/call", "cmd", "sandbox", "internal/fsop", "internal/shells"}
	for _, tt := range []struct {
		dir       string
		forbidden []string
		allowed   []string
	}{
		{".", []string{""}, []string{"internal/landlock"}}, // every sbx package but the leaf
		{"../landlock", []string{""}, nil},
		{"../strictjson", []string{""}, nil},
		{"../fspath", []string{""}, nil},
		{"../profiles", mechanism, nil},
		{"../policy", mechanism, nil},
		{"../policy/denial", mechanism, nil},
		{"../escalate", mechanism, nil},
		{"../wire", []string{"internal/run", "cmd", "internal/serve", "sandbox"}, nil},
	} {
		files, err := filepath.Glob(filepath.Join(tt.dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", tt.dir, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			af, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range af.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				rest, ok := strings.CutPrefix(path, module)
				if !ok || slices.Contains(tt.allowed, rest) {
					continue
				}
				for _, bad := range tt.forbidden {
					if bad == "" || rest == bad || strings.HasPrefix(rest, bad+"/") {
						t.Errorf("%s imports %s", f, path)
					}
				}
			}
		}
	}
}
