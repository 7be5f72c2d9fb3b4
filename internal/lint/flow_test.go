package lint

import (
	"go/parser"
	"go/token"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// flow is the module's packages in layers, from the ground up: a package
// imports only packages of layers before its own. A request enters at the
// top (the commands, the server, the embedder API), is decoded by wire,
// prepared by call (escalate and policy decide what it may do), started by
// a backend (enforce), run and captured by run, and told back in report's
// vocabulary, which every layer speaks and so sits at the bottom with the
// leaves. docs/extending.md says where a new package goes.
var flow = []struct {
	layer string
	pkgs  []string
}{
	{"leaves: vocabularies and algebra that import no sbx package", []string{
		"internal/enum", "internal/fspath", "internal/strictjson", "internal/netrule", "internal/landlock",
		"internal/steptrace", "internal/version", "internal/jsonfuzz", "internal/shells", "internal/tools",
		"internal/mcp/conf", "internal/lint",
	}},
	{"report: a call's outcome, denials, downgrades, features", []string{"internal/report"}},
	{"the permission model", []string{"internal/profiles"}},
	{"the platform-neutral policy", []string{"internal/policy"}},
	{"decisions over the policy: ladder, approvals, guard; a supervised operation's verdict", []string{
		"internal/escalate", "internal/policy/denial",
	}},
	{"mechanisms: what a backend is asked, the proxy, file changes, the durable log, the seccomp compiler", []string{
		"internal/enforce", "internal/netproxy", "internal/fsop", "internal/journal", "internal/enforce/linux/seccomp",
	}},
	{"the supervisor, and the backends that need no other", []string{
		"internal/enforce/linux/supervisor", "internal/enforce/darwin", "internal/enforce/windows",
	}},
	{"the Linux backend", []string{"internal/enforce/linux"}},
	{"this OS's backend", []string{"internal/enforce/host"}},
	{"call: a request prepared into a runnable call", []string{"internal/call"}},
	{"wire: the JSON contract", []string{"internal/wire"}},
	{"run: the run stage", []string{"internal/run"}},
	{"the edges: the server and the embedder API", []string{"internal/serve", "sandbox"}},
	{"the MCP server", []string{"internal/mcp"}},
	{"the programs", []string{"cmd/sbx", "cmd/sbx-mcp", "examples/embed"}},
}

// outside are the module's directories with Go code that is not part of
// the pipeline: tests, benchmarks and the release build, which may import
// anything and which nothing imports.
var outside = []string{"integration", "bench", "release"}

// TestFlow: every package of the module is in one layer of flow (a new
// package fails here until it is placed), and imports only packages of
// the layers before its own, so the folders read the pipeline and no
// mechanism reaches up into the code that calls it.
func TestFlow(t *testing.T) {
	layerOf := map[string]int{}
	for i, l := range flow {
		for _, p := range l.pkgs {
			if _, dup := layerOf[p]; dup {
				t.Errorf("%s is in two layers", p)
			}
			layerOf[p] = i
		}
	}
	imports := packageImports(t)
	for pkg, imps := range imports {
		i, ok := layerOf[pkg]
		if !ok {
			t.Errorf("package %s is in no layer of flow: place it (docs/extending.md)", pkg)
			continue
		}
		for _, imp := range imps {
			j, ok := layerOf[imp]
			if ok && j >= i {
				t.Errorf("%s (layer %q) imports %s (layer %q): only earlier layers", pkg, flow[i].layer, imp, flow[j].layer)
			}
		}
	}
	for p := range layerOf {
		if _, ok := imports[p]; !ok {
			t.Errorf("flow names %s, which has no Go code", p)
		}
	}
}

// packageImports maps each directory of the module with non-test Go files
// (those moduleGoFiles walks, outside the directories in outside) to the
// module's packages its files import, every build tag's files alike.
func packageImports(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, gf := range moduleGoFiles(t) {
		if slices.Contains(outside, strings.SplitN(gf.rel, "/", 2)[0]) {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), gf.rel, gf.src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		dir := path.Dir(gf.rel)
		if _, ok := out[dir]; !ok {
			out[dir] = nil
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if rest, ok := strings.CutPrefix(p, modulePath+"/"); ok && !slices.Contains(out[dir], rest) {
				out[dir] = append(out[dir], rest)
			}
		}
	}
	return out
}
